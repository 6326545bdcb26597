"""Inductor's generated code, read and timed: which source nodes each kernel fuses, and a clock around each call.

**Kernel → source nodes.** When Inductor generates the call of a kernel (a C++ loop it wrote, or
an extern call such as ``extern_kernels.convolution``) it asks
``torch._inductor.debug.set_kernel_post_grad_provenance_tracing`` for a provenance handle,
giving it the kernel's scheduled nodes, whose ``origins`` are the post-grad FX nodes the kernel
computes, and writes ``# [Provenance debug handles] KERNEL:HANDLE`` above the call. While
:class:`ProvenanceRecorder` is active, fxtui answers that question itself: it notes the kernel's
origin nodes (each with its ``nn_module_stack`` and the TorchDynamo node it ``from_node``s) and
returns a handle unique in the process. This is the data ``tlparse --inductor-provenance`` works
from, taken in the process as the code is generated rather than from a trace file afterwards,
and it needs no debug flag (Inductor's own tracking, which fxtui leaves off, would also dump its
mappings as artefacts).

**Timing.** The generated wrapper is Python: ``Runner.call`` runs the kernels one after another.
:class:`TimedWrapper` reads its source, finds the statement under each handle, and compiles a
second ``call`` with a clock reading before and after each such statement (two
``perf_counter_ns`` calls and two list stores, ~0.2 µs); a timed run swaps the function's
``__code__`` for the timed one and back, so an untimed run executes Inductor's code exactly as
generated. The kernels themselves are the same binaries in both (unlike
``cpp.enable_kernel_profile``, which builds them with profiler ranges inside).
"""

from __future__ import annotations

import ast
import contextlib
import itertools
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType, FunctionType, ModuleType
from typing import Any

import torch
import torch.fx

#: A handle comment in Inductor's wrapper code.
_HANDLE = re.compile(r"#\s*\[Provenance debug handles\]\s*(\S+):(\d+)\s*$")
#: Handles fxtui gives out, unique in the process, so two compiles never generate the same wrapper source.
_HANDLES = itertools.count(1)


@dataclass
class KernelOrigin:
    """One kernel call as Inductor generated it: its name and the post-grad FX nodes it computes."""

    handle: int
    kernel: str
    """``cpp_fused__native_batch_norm_legit_no_training_relu_3``, ``extern_kernels.convolution`` …"""
    extern: bool
    nodes: list[torch.fx.Node] = field(default_factory=list)


def _origin_nodes(node_schedule: Any, kernel: str, extern: bool) -> list[torch.fx.Node]:
    """The FX nodes a kernel computes: an extern call's own node, or every origin of the nodes fused into it.

    An extern call's origins can also hold the nodes that made its inputs (BERT's attention mask, made once in
    the model's own forward, among the origins of every layer's ``scaled_dot_product_attention``): the call
    computes the nodes of its own operation, and only those are kept when there are any.
    """
    from torch._inductor.utils import aggregate_origins

    if extern and getattr(node_schedule, "origin_node", None) is not None:
        return [node_schedule.origin_node]
    try:
        origins = aggregate_origins(node_schedule)
    except Exception:  # a schedule of a kind this torch's helper does not know: no origins, charged to the root
        return []
    nodes = [o for o in origins if isinstance(o, torch.fx.Node) and o.op == "call_function"]
    if extern:
        op = extern_op(kernel)
        own = [o for o in nodes if getattr(getattr(o.target, "overloadpacket", None), "__name__", None) == op]
        return own or nodes
    return nodes


def extern_op(kernel: str) -> str:
    """The operation an extern call runs: ``extern_kernels.addmm`` → ``addmm``,
    ``torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default`` → its third part."""
    parts = kernel.split(".")
    return parts[3] if kernel.startswith("torch.ops.") and len(parts) > 3 else parts[-1]


class ProvenanceRecorder:
    """Notes every kernel Inductor generates while :meth:`active`, and the nodes it computes."""

    def __init__(self) -> None:
        self.found: dict[int, Any] = {}
        """Handle → :class:`KernelOrigin` (or what :meth:`keep` makes of it)."""
        self._places: list[ModuleType] = []
        self._before: list[Any] = []

    def keep(self, origin: KernelOrigin) -> Any:
        """What is kept of a kernel's origin (all of it: the FX nodes too)."""
        return origin

    def _note(self, node_schedule: Any, kernel_name: str, is_extern: bool = False) -> int:
        handle = next(_HANDLES)
        kernel = str(kernel_name)
        nodes = _origin_nodes(node_schedule, kernel, is_extern)
        self.found[handle] = self.keep(KernelOrigin(handle, kernel, is_extern, nodes))
        return handle

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Answer Inductor's provenance calls inside the block."""
        self.start()
        try:
            yield
        finally:
            self.stop()

    def start(self) -> None:
        """Answer Inductor's provenance calls from now on (the C++ backend imported the function by name)."""
        import torch._inductor.codegen.cpp as cpp
        import torch._inductor.debug as debug

        if self._places:
            return
        self._places = [m for m in (debug, cpp) if hasattr(m, "set_kernel_post_grad_provenance_tracing")]
        self._before = [m.set_kernel_post_grad_provenance_tracing for m in self._places]
        for m in self._places:
            m.set_kernel_post_grad_provenance_tracing = self._note  # type: ignore[attr-defined]

    def stop(self) -> None:
        """Leave Inductor's provenance calls to Inductor again."""
        for m, original in zip(self._places, self._before, strict=True):
            m.set_kernel_post_grad_provenance_tracing = original  # type: ignore[attr-defined]
        self._places, self._before = [], []


def loaded_modules() -> list[ModuleType]:
    """Every wrapper module Inductor has loaded in this process so far, oldest first."""
    from torch._inductor.codecache import PyCodeCache

    return list(PyCodeCache.modules)


def handles_in(module: ModuleType) -> list[tuple[int, str, int]]:
    """``(line, kernel, handle)`` of every handle comment in a wrapper module's source."""
    try:
        text = Path(module.__file__ or "").read_text(encoding="utf-8")
    except OSError:
        return []
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        found = _HANDLE.search(line)
        if found:
            out.append((number, found.group(1), int(found.group(2))))
    return out


def _call_function(module: ModuleType) -> FunctionType | None:
    """The wrapper's ``call``: ``Runner.call`` in recent Inductor, a module-level ``call`` before."""
    runner = getattr(module, "Runner", None)
    fn = getattr(runner, "call", None) if runner is not None else None
    if fn is None:
        fn = getattr(module, "call", None)
        fn = getattr(fn, "__func__", fn)
    return fn if isinstance(fn, FunctionType) else None


def _find_def(tree: ast.Module, fn: FunctionType) -> ast.FunctionDef | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == fn.__name__ and node.lineno == fn.__code__.co_firstlineno:
            return node
    return None


def _statement_lists(fn: ast.FunctionDef) -> Iterator[list[ast.stmt]]:
    """Every list of statements inside the function (its body, the bodies of ``with`` and ``if`` blocks)."""
    for node in ast.walk(fn):
        for attr in ("body", "orelse", "finalbody"):
            stmts = getattr(node, attr, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                yield stmts


class TimedWrapper:
    """One compiled graph's wrapper code with a clock around each kernel call.

    ``kernels`` lists the handles of the kernel calls in the order the code runs them; after a run with
    :meth:`timing` on, ``ns[k]`` holds kernel ``k``'s time (summed if the graph ran more than once) and
    ``start[k]`` the clock at its last start.

    Given ``record``, the timed code reports instead: ``record.kernel(handle, t0)`` after each kernel call
    and, around the whole call, ``token = record.enter()`` and ``record.exit(token)`` (``fxtui run``'s
    sampled steps, :mod:`fxtui.ops.kernels`).
    """

    def __init__(self, module: ModuleType, handles: set[int], record: Any = None) -> None:
        fn = _call_function(module)
        if fn is None or module.__file__ is None:
            raise ValueError("no call function in Inductor's wrapper")
        source = Path(module.__file__).read_text(encoding="utf-8")
        tree = ast.parse(source)
        node = _find_def(tree, fn)
        if node is None:
            raise ValueError("the wrapper's call function is not in its source")
        lines = source.splitlines()
        end = node.end_lineno or node.lineno
        comments = [(n, k, h) for n, k, h in handles_in(module) if h in handles and node.lineno <= n <= end]
        chosen: dict[int, tuple[list[ast.stmt], ast.stmt, int]] = {}
        stmts = [(s, owner) for owner in _statement_lists(node) for s in owner if not isinstance(s, ast.FunctionDef)]
        stmts.sort(key=lambda pair: pair[0].lineno)
        bounds = [n for n, _, _ in comments] + [10**9]
        self.kernels: list[int] = []
        for (line, kernel, handle), nxt in zip(comments, bounds[1:], strict=True):
            short = kernel.rpartition(".")[2] or kernel
            for stmt, owner in stmts:
                if stmt.lineno <= line or stmt.lineno >= nxt or id(stmt) in chosen:
                    continue
                if short in "\n".join(lines[stmt.lineno - 1 : stmt.end_lineno or stmt.lineno]):
                    chosen[id(stmt)] = (owner, stmt, len(self.kernels))
                    self.kernels.append(handle)
                    break
        for owner, stmt, k in chosen.values():
            at = next(i for i, s in enumerate(owner) if s is stmt)
            owner[at : at + 1] = _timed(stmt, k) if record is None else _reported(stmt, self.kernels[k])
        if record is not None:
            _around(node)
            module.__dict__["_fxtui_kernel"] = record.kernel
            module.__dict__["_fxtui_enter"] = record.enter
            module.__dict__["_fxtui_exit"] = record.exit
        self.ns = [0] * len(self.kernels)
        self.start = [0] * len(self.kernels)
        module.__dict__["_fxtui_clock"] = time.perf_counter_ns
        module.__dict__["_fxtui_ns"] = self.ns
        module.__dict__["_fxtui_start"] = self.start
        node.decorator_list = []
        code = compile(ast.fix_missing_locations(ast.Module(body=[node], type_ignores=[])), module.__file__, "exec")
        space: dict[str, Any] = {}
        exec(code, module.__dict__, space)  # defines the timed call with the wrapper's globals
        timed = space[fn.__name__]
        if timed.__code__.co_freevars != fn.__code__.co_freevars:
            raise ValueError("the timed call cannot replace Inductor's")
        self.function = fn
        self.plain_code: CodeType = fn.__code__
        self.timed_code: CodeType = timed.__code__
        self.module = module

    def reset(self) -> None:
        """Zero the times before a run."""
        ns = self.ns
        for k in range(len(ns)):
            ns[k] = 0


class timed:
    """Inside the block, every one of ``wrappers`` runs its timed code (a class, not a generator: it is on the
    timed run's path)."""

    def __init__(self, wrappers: list[TimedWrapper]) -> None:
        self.wrappers = wrappers

    def __enter__(self) -> None:
        for w in self.wrappers:
            w.function.__code__ = w.timed_code

    def __exit__(self, *exc: object) -> None:
        for w in self.wrappers:
            w.function.__code__ = w.plain_code


def _timed(stmt: ast.stmt, k: int) -> list[ast.stmt]:
    """``_fxtui_t = _fxtui_clock(); <stmt>; _fxtui_ns[k] += _fxtui_clock() - _fxtui_t; _fxtui_start[k] = _fxtui_t``."""
    before = ast.parse("_fxtui_t = _fxtui_clock()").body
    after = ast.parse(f"_fxtui_ns[{k}] += _fxtui_clock() - _fxtui_t\n_fxtui_start[{k}] = _fxtui_t").body
    for new in (*before, *after):
        ast.copy_location(new, stmt)
        for child in ast.walk(new):
            ast.copy_location(child, stmt)
    return [*before, stmt, *after]


def _reported(stmt: ast.stmt, handle: int) -> list[ast.stmt]:
    """``_fxtui_t = _fxtui_clock(); <stmt>; _fxtui_kernel(handle, _fxtui_t)``."""
    before = ast.parse("_fxtui_t = _fxtui_clock()").body
    after = ast.parse(f"_fxtui_kernel({handle}, _fxtui_t)").body
    for new in (*before, *after):
        for child in ast.walk(new):
            ast.copy_location(child, stmt)
    return [*before, stmt, *after]


def _around(fn: ast.FunctionDef) -> None:
    """The function's body inside ``_fxtui_c = _fxtui_enter()`` … ``finally: _fxtui_exit(_fxtui_c)``."""
    enter = ast.parse("_fxtui_c = _fxtui_enter()").body
    guarded = ast.parse("try:\n    pass\nfinally:\n    _fxtui_exit(_fxtui_c)").body[0]
    assert isinstance(guarded, ast.Try)
    for new in (*enter, guarded):
        for child in ast.walk(new):
            ast.copy_location(child, fn.body[0])
    guarded.body = fn.body
    fn.body = [*enter, guarded]


#: Short labels of common source operations in a fused kernel's name.
_SHORT = {"conv2d": "conv", "conv1d": "conv", "conv3d": "conv", "batch_norm": "bn", "layer_norm": "ln"}
#: A fused kernel's name lists at most this many source operations.
_LABEL_OPS = 4


def ops_label(kernel: str, extern: bool, labels: list[str]) -> str:
    """``convolution`` (an extern call), ``bn+relu+add (fused)`` (a kernel of several source operations),
    ``conv (kernel)`` (of one); the kernel's own name when its sources are unknown."""
    if extern:
        return extern_op(kernel)
    ops = list(dict.fromkeys(_SHORT.get(label, label) for label in labels))
    if not ops:
        return kernel
    text = "+".join(ops[:_LABEL_OPS]) + ("+…" if len(ops) > _LABEL_OPS else "")
    return f"{text} (fused)" if len(labels) > 1 else f"{text} (kernel)"
