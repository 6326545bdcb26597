"""Compiled code in a program the eager capture watches: Inductor's kernels, timed on sampled steps, charged to modules.

A script under ``fxtui run`` may compile its model (``torch.compile(model)``,
``model.compile()``). The dispatch mode sees none of the compiled graph's work (its C++
kernels are called directly), so here fxtui learns the kernels as Inductor generates them and
times them itself:

* **Which modules a kernel computes.** From the moment Inductor's C++ code generation is
  imported, fxtui answers Inductor's provenance call
  (:class:`~fxtui.ops.kernel_code.ProvenanceRecorder`): every kernel and extern
  call Inductor generates is noted with the FX nodes it computes, kept as their source
  operations and the id of the module each ran in (``nn_module_stack``; for a gradient,
  ``fwd_nn_module_stack``: the forward module it differentiates). The id is the module
  object's, so the recorder's namer finds it under the same path as the eager ops
  (:class:`~fxtui.ops.namer.OpNamer`), in whichever root the compiled module sits.
  Inductor's FX graph cache is off while fxtui watches: a graph loaded from it would come
  without its kernels' origins (the C++ builds stay cached).
* **Timing.** On a sampled step every compiled graph found so far runs a second copy of its
  wrapper's ``call`` (:class:`~fxtui.ops.kernel_code.TimedWrapper`, reporting
  mode): each kernel call appends a ``KernelCall`` to the step's records, and the whole call a
  ``CompiledCall`` (:mod:`fxtui.ops.records`). A compiled backward runs
  under the dispatch mode (it is on the stack for the whole step): the call steps it aside,
  so its extern calls are not counted twice. Unsampled steps run Inductor's code as generated.

What the program pays: noting a kernel while Inductor compiles (microseconds, once), and on
sampled steps two clock readings and a tuple per kernel call.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
import types
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode, _pop_mode, _push_mode

from fxtui.ops.after_import import AfterImport, after_import, forget
from fxtui.ops.dynamo_skip import run_eagerly
from fxtui.ops.kernel_code import KernelOrigin, ProvenanceRecorder, TimedWrapper, handles_in, ops_label
from fxtui.ops.records import CompiledCall, KernelCall, make

_clock = time.perf_counter_ns
_autograd_node = torch._C._current_autograd_node
#: Imported when Inductor generates CPU code; the provenance calls are answered from then on.
_CODEGEN = "torch._inductor.codegen.cpp"
_CONFIG = "torch._inductor.config"
_REPEAT = re.compile(r"_\d+$")
_TARGET = re.compile(r"<(?:built-in )?(?:function|method) (\w+)")


@dataclass(frozen=True, slots=True)
class RunKernel:
    """One kernel or extern call Inductor generated, as the eager capture keeps it (no FX node held)."""

    kernel: str
    """Inductor's name: ``cpp_fused__native_batch_norm_legit_functional_add_relu_2``, ``extern_kernels.convolution``."""
    label: str
    """What it computes: ``batch_norm+relu+add (fused)``, ``convolution``."""
    modules: tuple[int, ...]
    """The id of the module each of its source operations ran in (0: none known)."""
    sources: tuple[str, ...]
    """Its source operations, in graph order."""


def run_kernel(origin: KernelOrigin) -> RunKernel:
    """What is kept of a kernel's origin: its source operations and their modules' ids."""
    seen: dict[str, tuple[int, str]] = {}
    for node in sorted(origin.nodes, key=_graph_order):  # graph order: the same label in every run
        source = node
        chain = node.meta.get("from_node") or ()
        while chain:  # the TorchDynamo node it comes from, through every pass that copied it
            source = chain[0]
            chain = getattr(source, "from_node", None) or ()
        name = str(getattr(source, "name", node.name))
        if name in seen:
            continue
        stack = node.meta.get("nn_module_stack") or node.meta.get("fwd_nn_module_stack") or {}
        key = str(next(reversed(stack))).partition("@")[0] if stack else ""
        seen[name] = (int(key) if key.isdigit() else 0, _operation(source, name))
    labels = [label for _, label in seen.values()]
    label = ops_label(origin.kernel, origin.extern, labels)
    return RunKernel(origin.kernel, label, tuple(m for m, _ in seen.values()), tuple(labels))


def _graph_order(node: torch.fx.Node) -> tuple[int, ...]:
    key = getattr(node, "_sort_key", ())
    return tuple(key) if isinstance(key, tuple) else ()


def _operation(source: Any, name: str) -> str:
    """A source node's operation: its target's name (``<built-in method conv2d …>`` → ``conv2d``, ``mean``), else
    its node's name less a repeat's number (TorchDynamo names a node after the variable it is assigned to)."""
    packet = getattr(getattr(source, "target", None), "overloadpacket", None)  # an ATen op of a post-grad node
    if packet is not None:
        return str(packet.__name__)
    target = str(getattr(source, "target", "") or "")
    found = _TARGET.match(target)
    if found:
        return found.group(1)
    if target and not target.startswith("<"):
        return target.rpartition(".")[2]
    return _REPEAT.sub("", name)


class _Provenance(ProvenanceRecorder):
    """Called inside the program's own compile: it never raises there (a kernel it cannot read goes unnamed)."""

    def keep(self, origin: KernelOrigin) -> RunKernel:
        try:
            return run_kernel(origin)
        except Exception:
            return RunKernel(origin.kernel, origin.kernel, (), ())

    def _note(self, node_schedule: Any, kernel_name: str, is_extern: bool = False) -> int:
        try:
            return super()._note(node_schedule, kernel_name, is_extern)
        except Exception:
            return 0  # no handle of fxtui's: Inductor writes its comment, fxtui times nothing under it


class CompiledKernels:
    """The program's compiled graphs and their kernels, learnt as Inductor generates them; timed while recording."""

    def __init__(self) -> None:
        self.provenance = _Provenance()
        self.wrappers: list[TimedWrapper] = []
        self.failed = ""
        """Why a graph's kernels could not be timed (its wrapper has a form fxtui does not know)."""
        self._said = ""
        self._seen = 0
        self._finders: list[AfterImport | None] = []
        self._cache: tuple[Any, bool] | None = None
        self._recorder: Any = None

    def install(self) -> None:
        """Learn kernels from when Inductor is imported (now, or when the program first compiles)."""
        run_eagerly(self.kernel, self.enter, self.exit)
        self._finders = [
            after_import(_CONFIG, self._cache_off),
            after_import(_CODEGEN, lambda _: self.provenance.start()),
        ]

    def uninstall(self) -> None:
        """Leave Inductor as it was."""
        for finder in self._finders:
            forget(finder)
        self._finders = []
        self.provenance.stop()
        if self._cache is not None:
            config, before = self._cache
            setattr(config, "fx_graph_cache", before)  # noqa: B010
            self._cache = None

    def _cache_off(self, config: types.ModuleType) -> None:
        self._cache = (config, getattr(config, "fx_graph_cache", False))
        setattr(config, "fx_graph_cache", False)  # noqa: B010 (a config module: mypy knows no attribute)

    def refresh(self) -> None:
        """Time the graphs Inductor has loaded since the last call (their wrappers carry fxtui's handles)."""
        codecache = sys.modules.get("torch._inductor.codecache")
        cache = getattr(getattr(codecache, "PyCodeCache", None), "modules", None)
        if not cache or len(cache) == self._seen:
            return
        found = self.provenance.found
        for module in list(cache)[self._seen :]:
            handles = {h for _, _, h in handles_in(module)} & set(found)
            if not handles:
                continue
            try:
                self.wrappers.append(TimedWrapper(module, handles, record=self))
            except (ValueError, SyntaxError, OSError) as e:
                self.failed = f"a compiled graph's kernels are not timed: {e}"
        self._seen = len(cache)

    def unsaid(self) -> str:
        """:attr:`failed`, the first time it is asked after it changed (``""`` otherwise)."""
        if self.failed == self._said:
            return ""
        self._said = self.failed
        return self.failed

    # -- a sampled step -------------------------------------------------------------------------

    def start(self, recorder: Any) -> None:
        """Time every known graph's kernels into ``recorder``'s records until :meth:`stop`."""
        self.refresh()
        self._recorder = recorder
        for w in self.wrappers:
            w.function.__code__ = w.timed_code

    def stop(self) -> None:
        """Inductor's code as generated again."""
        for w in self.wrappers:
            w.function.__code__ = w.plain_code
        self._recorder = None

    # The timed code's calls (TimedWrapper's reporting mode).

    def kernel(self, handle: int, t0: int) -> None:
        """A kernel call ended."""
        t1 = _clock()
        recorder = self._recorder
        if recorder is not None:
            recorder.records.append(make(KernelCall, (self.provenance.found[handle], t0, t1, _autograd_node())))

    def enter(self) -> tuple[int, Any]:
        """A compiled graph's call starts: the dispatch mode steps aside if it is on top."""
        recorder = self._recorder
        mode = recorder.mode if recorder is not None else None
        if mode is not None and _get_current_dispatch_mode() is mode:
            _pop_mode()
        else:
            mode = None
        pause = getattr(recorder, "pause", None)  # the native timer steps aside too
        if pause is not None:
            pause(True)
        return _clock(), mode

    def exit(self, token: tuple[int, Any]) -> None:
        """The call ends: its span, and the dispatch mode back where it was."""
        t1 = _clock()
        t0, mode = token
        if mode is not None:
            with contextlib.suppress(Exception):
                _push_mode(mode)
        recorder = self._recorder
        pause = getattr(recorder, "pause", None)
        if pause is not None:
            pause(False)
        if recorder is not None:
            recorder.records.append(make(CompiledCall, (t0, t1, _autograd_node())))
