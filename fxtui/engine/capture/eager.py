"""The ``eager`` capture: every ATen operator the code runs, timed around its own call and charged to its module.

No tracing: a :class:`~torch.utils._python_dispatch.TorchDispatchMode` sees each ATen call
below autograd, so any model works (data-dependent code, dynamic shapes, a user's whole
training loop), forward and backward alike. This is the timer ``fxtui run`` uses inside the
user's program on its sampled steps.

The hot path is one tuple appended per op: the op, the clock before and after its call, the
autograd node running it (None in forward) and its output's shape. Everything else happens
after the step, in :meth:`OpNamer.resolve`:

* **forward**: global module forward hooks push and pop a module stack while the recorder
  runs; an op belongs to the module on top (the outermost modules are the *roots*);
* **backward**: each module call notes the autograd sequence-number counter when it enters
  and leaves. An autograd node made between two such marks belongs to the module on top
  there, so a backward op is charged to the forward module whose stretch holds its node's
  sequence number (parameters' gradient accumulation to the module owning the parameter);
* **phases**: the caller marks where the optimizer, backward, data loading run
  (:meth:`OpRecorder.mark`); ops outside every phase are the script's own (``other``).

Names follow the TorchDynamo capture's rule — ``layer1.0.conv1 · convolution``,
``layer1.0.conv1 · ∇convolution_backward``, a repeat in the same module ``#2`` — so the same
script gives the same names in every run and ``fxtui diff`` matches them. A module compiled
with ``torch.compile`` runs without the mode and is one node of its own (``<compiled>``).

Measured here on 2 cores (prototype, torch 2.14, interleaved with uninstrumented steps): the
dispatch mode costs 6–17 µs per op; Σ op medians ÷ uninstrumented step 0.96–1.01 for resnet18,
mobilenet_v3_small, a small CNN's training step and a 2-layer BERT's; per-module forward and
backward time within 5% of the ``train`` capture's for resnet18's modules above 0.2 ms. The
profiler's events (``torch.profiler`` with module ranges) measured alike but cost 10–18 µs per op
more to start, stop and read, so the dispatch mode is the timer.
"""

from __future__ import annotations

import bisect
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from torch.utils._python_dispatch import TorchDispatchMode, _pop_mode, _push_mode

from fxtui.engine.capture.eager_nodes import EagerNode, RootModule

#: Marks the label of a backward op, as the ``train`` capture does.
GRADIENT = "∇"
#: Phases a recorded op can be in (a training step's, and the data loading and the script's own code).
OP_PHASES = ("forward", "backward", "optimizer", "data", "other")

# Record kinds besides an op (an op's record starts with its OpOverload).
ENTER, EXIT, SKIP_ENTER, SKIP_EXIT, PHASE_ENTER, PHASE_EXIT = range(6)

_clock = time.perf_counter_ns
_sequence_nr = torch._C._autograd._get_sequence_nr
_autograd_node = torch._C._current_autograd_node
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_FXTUI_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


class _Mode(TorchDispatchMode):
    """The dispatch mode; ``sink`` gets one record per ATen call."""

    def __init__(self, sink: Callable[[tuple[Any, ...]], None], stacks: bool) -> None:
        super().__init__()
        self._sink = sink
        self._stacks = stacks

    # TorchDispatchMode wraps __torch_dispatch__ in torch._disable_dynamo, whose first use imports
    # TorchDynamo (~0.7 s in a program that never does) and costs ~0.2 µs per op after that. The
    # recorder never runs compiled code under the mode (it steps aside around compiled modules).
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        t0 = _clock()
        out = func._op(*args, **(kwargs or {}))
        t1 = _clock()
        shape = out.shape if type(out) is torch.Tensor else None
        if self._stacks:
            self._sink((func, t0, t1, _autograd_node(), shape, _args_text(args), _user_line()))
        else:
            self._sink((func, t0, t1, _autograd_node(), shape))
        return out


def _args_text(args: Any) -> tuple[str, ...]:
    """The inputs' shapes and strides, for a node's details (only on the steps that describe nodes)."""
    parts = []
    for a in args:
        if isinstance(a, torch.Tensor):
            parts.append(f"{'×'.join(map(str, a.shape)) or 'scalar'} {str(a.dtype).removeprefix('torch.')}"
                         f" stride {tuple(a.stride())}")  # fmt: skip
        elif isinstance(a, (list, tuple)) and a and isinstance(a[0], torch.Tensor):
            parts.append(f"[{len(a)} tensors]")
        else:
            text = repr(a)
            parts.append(text if len(text) <= 40 else text[:39] + "…")
    return tuple(parts)


def _user_line() -> str:
    """The innermost frame of the user's code (not torch's, not fxtui's): ``train.py:42  out = model(x)``."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith((_TORCH_DIR, _FXTUI_DIR)) and not name.startswith("<"):
            line = traceback.FrameSummary(name, frame.f_lineno, frame.f_code.co_name).line or ""
            return f"{os.path.basename(name)}:{frame.f_lineno}  {line.strip()}"
        frame = frame.f_back  # type: ignore[assignment]
    return ""


class OpRecorder:
    """Records every ATen op and module call between :meth:`start` and :meth:`stop` (one step).

    ``stacks`` adds each op's inputs and the user's source line (costly: for the steps that
    describe new nodes). ``on_root(module)`` is called for each outermost module call.
    """

    def __init__(self, on_root: Callable[[torch.nn.Module], None] | None = None) -> None:
        self.records: list[tuple[Any, ...]] = []
        self._on_root = on_root
        self._handles: list[Any] = []
        self._mode: _Mode | None = None
        self._depth = 0

    @property
    def active(self) -> bool:
        return self._mode is not None

    def start(self, stacks: bool = False) -> None:
        """Begin recording (the mode on top of the dispatch stack, module hooks installed)."""
        if self._mode is not None:
            return
        append = self.records.append
        mode = self._mode = _Mode(append, stacks)
        compiled = _compiled_type()
        self._depth = 0

        def pre(module: torch.nn.Module, args: Any) -> None:
            if self._depth == 0 and self._on_root is not None:
                self._on_root(module)
            self._depth += 1
            if compiled is not None and isinstance(module, compiled):
                append((SKIP_ENTER, module, _clock(), _sequence_nr()))
                _pop_mode()  # compiled code runs without the mode: one node, its whole time
                return
            append((ENTER, module, _clock(), _sequence_nr()))

        def post(module: torch.nn.Module, args: Any, out: Any) -> None:
            self._depth = max(0, self._depth - 1)
            if compiled is not None and isinstance(module, compiled):
                _push_mode(mode)
                append((SKIP_EXIT, module, _clock(), _sequence_nr()))
                return
            append((EXIT, module, _clock(), _sequence_nr()))

        self._handles = [register_module_forward_pre_hook(pre), register_module_forward_hook(post)]
        mode.__enter__()

    def stop(self) -> None:
        """Stop recording; the records stay in :attr:`records` until :meth:`take`."""
        if self._mode is None:
            return
        self._mode.__exit__(None, None, None)
        self._mode = None
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def mark(self, phase: str, enter: bool, owner: object = None) -> None:
        """Note that ``phase`` (``optimizer``, ``backward``, ``data``) begins or ends; ``owner`` names it
        (the optimizer)."""
        if self._mode is not None:
            self.records.append((PHASE_ENTER if enter else PHASE_EXIT, phase, _clock(), owner))

    def take(self) -> list[tuple[Any, ...]]:
        """The records so far, which the recorder forgets."""
        records, self.records = self.records, []
        if self._mode is not None:
            self._mode._sink = self.records.append
        return records


def _compiled_type() -> type | None:
    """``torch._dynamo``'s compiled-module wrapper, when TorchDynamo has been imported (never imported here)."""
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    return getattr(eval_frame, "OptimizedModule", None)


class OpNamer:
    """Turns one step's records into (node id, ns, shape) triples; names a node once, the first time it is seen.

    Kept for the whole program: node ids, module paths and the roots are stable across steps.
    """

    def __init__(self) -> None:
        self.roots: list[torch.nn.Module] = []
        self._path: dict[int, tuple[int, str]] = {}
        self._param: dict[int, tuple[int, str]] = {}
        self._ids: dict[tuple[Any, ...], int] = {}
        self.new_nodes: list[EagerNode] = []
        """Nodes first seen since the last :meth:`take_new`."""
        self.new_roots: list[RootModule] = []
        self.described: set[int] = set()

    def add_root(self, module: torch.nn.Module) -> int:
        """Know ``module`` as an outermost module (a wrapper's inner module names the paths); its index."""
        for i, root in enumerate(self.roots):
            if root is module:
                return i
        index = len(self.roots)
        self.roots.append(module)
        inner = _unwrapped(module)
        classes: dict[str, str] = {}
        for name, sub in inner.named_modules():
            self._path.setdefault(id(sub), (index, name))
            classes.setdefault(name, type(sub).__name__)
            for pname, param in sub.named_parameters(recurse=False):
                self._param.setdefault(id(param), (index, name))
                del pname
        if inner is not module:
            self._path[id(module)] = (index, "")
        loss = isinstance(module, torch.nn.modules.loss._Loss)
        self.new_roots.append(RootModule(index, type(inner).__name__, classes, loss))
        return index

    @property
    def known(self) -> int:
        """Nodes named so far."""
        return len(self._ids)

    @property
    def undescribed(self) -> bool:
        """Some node has not had its inputs and source line noted yet."""
        return len(self.described) < len(self._ids)

    def take_new(self) -> tuple[list[EagerNode], list[RootModule]]:
        """Nodes and roots first seen since the last call."""
        nodes, roots = self.new_nodes, self.new_roots
        self.new_nodes, self.new_roots = [], []
        return nodes, roots

    def where(self, module: torch.nn.Module, caller: tuple[int, str] | None = None) -> tuple[int, str]:
        """(root index, path inside it) of a module.

        A module that belongs to no known root but runs inside ``caller``'s forward was made there (transformers'
        models make their loss function in ``forward``, a new one every call): it is a child of the caller named by
        its class, the same path every call, and is not remembered (its ``id`` goes to another object once it is
        freed). Called outside every module, an unknown module becomes a root of its own.
        """
        found = self._path.get(id(module))
        if found is not None:
            return found
        if caller is not None:
            root, path = caller
            name = type(module).__name__
            return root, f"{path}.{name}" if path else name
        self.add_root(module)
        return self._path[id(module)]

    def resolve(self, records: Iterable[tuple[Any, ...]]) -> list[tuple[int, int, str, int]]:
        """One step's records as ``(node id, ns, output shape, clock at its start)``, in the order the ops ran."""
        stack: list[tuple[int, str]] = []
        entered: list[int] = []
        marks: list[int] = []  # sequence numbers where a module's stretch begins …
        owners: list[tuple[int, str]] = []  # … and the module it belongs to
        phases: list[tuple[str, object]] = []
        counts: dict[tuple[Any, ...], int] = {}
        out: list[tuple[int, int, str, int]] = []
        outside = (-1, "")
        for record in records:
            kind = record[0]
            if type(kind) is int:
                if kind in (ENTER, SKIP_ENTER):
                    stack.append(self.where(record[1], stack[-1] if stack else None))
                    entered.append(record[2])
                    marks.append(record[3])
                    owners.append(stack[-1])
                elif kind in (EXIT, SKIP_EXIT):
                    if not stack:
                        continue
                    where = stack.pop()
                    start = entered.pop()
                    if kind == SKIP_EXIT:
                        key = ("forward", where, "<compiled>")
                        out.append((self._id(key, counts, "compiled", ""), record[2] - start, "", start))
                    marks.append(record[3])
                    owners.append(stack[-1] if stack else outside)
                elif kind == PHASE_ENTER:
                    phases.append((record[1], record[3]))
                elif kind == PHASE_EXIT and phases:
                    phases.pop()
                continue
            func, t0, t1, node, shape = record[:5]
            if func.namespace == "profiler":  # record_function's own ops (optimizers push ranges)
                continue
            label = func.overloadpacket.__name__
            if func.namespace == "c10d":  # a collective (DDP's allreduce): waiting is not a module's arithmetic
                key = ("comm", (-1, "collectives"), label)
            elif node is not None:  # run by autograd: a gradient, charged to the forward module it differentiates
                if type(node).__name__ == "AccumulateGrad":
                    owner = self._param.get(id(getattr(node, "variable", None)), outside)
                else:
                    i = bisect.bisect_right(marks, node._sequence_nr()) - 1
                    owner = owners[i] if i >= 0 else outside
                key = ("backward", owner, GRADIENT + label)
            elif phases:
                phase, who = phases[-1]
                if phase == "optimizer":
                    owner_name = getattr(who, "name", None) if type(who).__name__ == "_Named" else None
                    key = ("optimizer", (-1, owner_name or type(who).__name__), label)
                elif phase == "backward":
                    key = ("backward", outside, GRADIENT + label)
                elif stack:
                    key = (phase, stack[-1], label)
                else:  # a DataLoader's own work (collating, a dataset's __getitem__), generate()'s loop (choosing
                    # the token, the stopping check): a pseudo-module of its own
                    key = (phase, (-1, _PSEUDO[phase]) if phase in _PSEUDO else outside, label)
            elif stack:
                key = ("forward", stack[-1], label)
            else:
                key = ("other", outside, label)
            shape_text = "×".join(map(str, shape)) if shape is not None else ""
            node_id = self._id(key, counts, f"{func.namespace}.{func.overloadpacket.__name__}", shape_text, record)
            out.append((node_id, t1 - t0, shape_text, t0))
        return out

    def _id(
        self,
        key: tuple[Any, ...],
        counts: dict[tuple[Any, ...], int],
        target: str,
        shape: str,
        record: tuple[Any, ...] = (),
    ) -> int:
        n = counts.get(key, 0) + 1
        counts[key] = n
        full = (*key, n)
        node_id = self._ids.get(full)
        if node_id is None:
            node_id = self._ids[full] = len(self._ids)
            phase, (root, path), label = key
            self.new_nodes.append(EagerNode(node_id, root, path, phase, label, n, target, shape))
        if len(record) > 5 and node_id not in self.described:
            self.described.add(node_id)
            phase, (root, path), label = key
            self.new_nodes.append(
                EagerNode(node_id, root, path, phase, label, n, target, shape, inputs=record[5], source=record[6])
            )
        return node_id


def _unwrapped(module: torch.nn.Module) -> torch.nn.Module:
    """The user's own module inside a wrapper that adds no layers of its own (DDP, DataParallel, torch.compile)."""
    inner = module
    for _ in range(4):
        nxt = getattr(inner, "module", None) or getattr(inner, "_orig_mod", None)
        if not isinstance(nxt, torch.nn.Module) or type(inner).__name__ not in _WRAPPERS:
            break
        inner = nxt
    return inner


#: The pseudo-module holding a phase's ops that run outside every module.
_PSEUDO = {"data": "DataLoader", "prefill": "generate", "decode": "generate"}

_WRAPPERS = frozenset({"DistributedDataParallel", "DataParallel", "OptimizedModule"})
