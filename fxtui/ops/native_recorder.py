"""The per-op timer in C++: a RecordFunction callback writes a row of integers per op, merged with the module calls.

:class:`NativeRecorder` is an :class:`~fxtui.ops.recorder.OpRecorder` whose undescribed steps are timed by the
native library (``op_timer.cpp``, built by :mod:`fxtui.ops.native_build`) instead of the Python dispatch mode.
The callback records the ops the dispatch mode would see — the outermost op that is not
CompositeImplicitAutograd, outside the regions where torch keeps the Python key out — into a preallocated int64
buffer: no Python object per op while the step runs. Module calls and phase marks stay Python records (one per
module call). :meth:`NativeRecorder.take` merges the rows into them by time as the records the namer reads, so node
names and positions are the dispatch mode's.

What differs from the dispatch mode, by design:

* no ``detach`` rows that the mode itself causes (torch detaches what a Python mode returns and saves);
  ``_reshape_alias``, which ``reshape`` runs when no Python mode is on, is named ``view`` as under the mode, and
  autograd's in-place sum of two gradients (``add_``; ``add`` under a Python mode) ``add``;
* output shapes are not read per op (it would copy every op's outputs): a node keeps the shape it was first
  described with (the describing steps, which note inputs and source lines, are the dispatch mode's);
* the tensors an op reads and makes (the loss rule, :mod:`fxtui.ops.namer`) are TensorImpl addresses
  (``tensor._cdata``), noted only while no module call is in progress, as the mode notes ids;
* a step's rows stop at :data:`~fxtui.core.step_aside.OP_LIMIT`, as the dispatch mode's records do: past it the
  step is :attr:`~fxtui.ops.recorder.OpRecorder.overflowed` (the agent sets it aside).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import torch
from torch.utils._pytree import tree_leaves

from fxtui.core.step_aside import OP_LIMIT
from fxtui.ops.native_build import build_at_exit, load, pending, why_not
from fxtui.ops.native_steps import NativeStep, merge
from fxtui.ops.recorder import OpRecorder, _clock, _sequence_nr, is_compiled
from fxtui.ops.records import (
    ModuleEnter,
    ModuleExit,
    PhaseEnter,
    PhaseExit,
    Record,
    make,
)

COLUMNS = 7
#: Phases whose ops outside every module the namer names by the tensors they read (the loss, a gradient's seed).
_FLOW_PHASES = frozenset({"closure", "forward", "backward"})
NAME, T0, T1, NODE, SEQ, VARIABLE, FLOW = range(COLUMNS)
#: Integers of tensor flow (inputs and outputs of ops outside every module) a step may note.
FLOW_CAPACITY = 1 << 18


class _Packet:
    """What the namer reads of an op's overload packet: its name."""

    __slots__ = ("__name__",)

    def __init__(self, name: str) -> None:
        self.__name__ = name


#: Ops torch runs in place of another when no Python mode is on: named as the dispatch mode names them, so a node
#: keeps its name whichever timer ran (``reshape`` makes a ``view`` under a Python mode, ``_reshape_alias`` else).
_AS_THE_MODE_NAMES = {"aten::_reshape_alias": "aten::view"}


class NativeOp:
    """An op named by the native timer (``aten::addmm``), read as the namer reads an ``OpOverload``."""

    __slots__ = ("name", "namespace", "overloadpacket")

    def __init__(self, qualified: str) -> None:
        qualified = _AS_THE_MODE_NAMES.get(qualified, qualified)
        namespace, _, label = qualified.partition("::")
        self.namespace = namespace
        self.overloadpacket = _Packet(label)
        self.name = qualified

    def __repr__(self) -> str:
        return f"NativeOp({self.name})"


#: Leaves of a module's input or output that hold no tensor (a flat call's ints, flags and names).
_PLAIN = (int, float, bool, str, type(None))


def tensor_impls(value: Any) -> tuple[int, ...]:
    """The TensorImpl addresses of the tensors in a module's input or output (as the native rows note them).

    A root's call is read on every sampled step: a tensor, or a plain tuple or list of tensors and plain values,
    is read directly (pytree's walk costs a few µs a call); anything else (nested, a named tuple, a model's output
    class) through pytree. ``_cdata`` is read with torch functions off: reading a tensor's attribute is a torch
    function, which the program's own ``TorchFunctionMode`` (or a tensor subclass of its) would otherwise see."""
    with _no_torch_function():
        return _impls(value)


_no_torch_function = torch._C.DisableTorchFunction


def _impls(value: Any) -> tuple[int, ...]:
    if isinstance(value, torch.Tensor):
        return (value._cdata,)
    kind = type(value)
    if kind is tuple or kind is list:
        found = []
        for leaf in value:
            if isinstance(leaf, torch.Tensor):
                found.append(leaf._cdata)
            elif not isinstance(leaf, _PLAIN):
                break
        else:
            return tuple(found)
    return tuple(leaf._cdata for leaf in tree_leaves(value) if isinstance(leaf, torch.Tensor))


class NativeRecorder(OpRecorder):
    """An :class:`OpRecorder` whose undescribed steps are timed in C++ (``lib``: :func:`native_build.load`)."""

    def __init__(self, lib: Any = None, kernels: Any = None, hooks: bool = True, build: bool = False) -> None:
        super().__init__(kernels=kernels, hooks=hooks)
        self.limit = OP_LIMIT  # the rows' buffer is allocated at it
        self.lib: Any = lib if lib is not None else load()  # a ctypes library: its functions are looked up by name
        if self.lib is None and build:
            build_at_exit()  # never beside the program: the dispatch mode times ops until a later run finds it
        self.allowed = True
        """Whether the next step may be timed natively (the agent's ``generate()`` steps note indices into the
        records as they run, so they are the dispatch mode's)."""
        self._rows: np.ndarray | None = None
        self._flow: np.ndarray | None = None
        self._buffers: tuple[int, int, int, int] = (0, 0, 0, 0)
        self._native = False
        self._ops: list[NativeOp] = []
        self._add = NativeOp("aten::add")
        self._phases: list[str] = []
        self._engine: Any = None
        self._paused = 0
        self._flowing = False
        self.ran = "mode"
        """The timer of the latest undescribed step: ``native``, or ``mode`` (before the library is built, where it
        cannot be, in ``generate()`` calls); describing steps, always the mode's, leave it as it was."""
        self._rows_recorded = -1
        """Rows of the native step stopped last, not merged yet (-1: none)."""

    @property
    def active(self) -> bool:
        return self._native or self._mode is not None

    @property
    def native(self) -> bool:
        """Recording with the native timer now."""
        return self._native

    def start(self, stacks: bool = False) -> None:
        """Begin recording: with the dispatch mode when describing (``stacks``) or without the library, else
        natively."""
        if self.active:
            return
        if self._rows_recorded >= 0:  # the last step's rows, not taken yet: merged before the buffer is reused
            count, self._rows_recorded = self._rows_recorded, -1
            self.records = self._merge(count)
        if self.lib is None:
            self.lib = load()  # built since (a stat while it is not)
        if stacks or self.lib is None or not self.allowed:
            super().start(stacks)
            return
        if self._rows is None:
            self._rows = np.zeros((self.limit, COLUMNS), dtype=np.int64)
            self._flow = np.zeros(FLOW_CAPACITY, dtype=np.int64)
            # their addresses, read once (numpy makes a ctypes view object at each read: a few µs a step)
            self._buffers = (self._rows.ctypes.data, len(self._rows), self._flow.ctypes.data, len(self._flow))
        assert self._flow is not None
        self._compiled = _compiled_type()
        self._depth = 0
        self._calls = []
        self.overflowed = 0
        if self._hooks:
            from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

            self._handles = [register_module_forward_pre_hook(self._pre), register_module_forward_hook(self._post)]
        if self.lib.fx_start(*self._buffers) != 0:
            for handle in self._handles:
                handle.remove()
            self._handles.clear()
            super().start(stacks)  # the library is recording elsewhere (another recorder): the dispatch mode
            return
        self._native = True
        self._flowing = False  # fx_start begins with the flow off
        self.ran = "native"
        self._paused = 0
        self._phases = []
        self._flow_now()
        self._wrap_engine()
        if self.kernels is not None:
            self.kernels.start(self)

    def enter(self, module: torch.nn.Module, args: Any = None) -> None:
        if not self._native:
            super().enter(module, args)
            return
        inputs = tensor_impls(args) if self._depth == 0 and args else ()
        if self._depth == 0:
            self._set_flow(False)
        self._depth += 1
        skip = is_compiled(module, self._compiled)
        self._calls.append(skip)
        self.records.append(make(ModuleEnter, (module, _clock(), _sequence_nr(), skip, inputs)))
        if skip:
            self.pause(True)  # compiled code runs untimed here: its kernels are timed by `kernels`

    def exit(self, module: torch.nn.Module, out: Any = None) -> None:
        if not self._native:
            super().exit(module, out)
            return
        t, seq = _clock(), _sequence_nr()
        self._depth = max(0, self._depth - 1)
        outputs = tensor_impls(out) if self._depth == 0 and out is not None else ()
        compiled = bool(self._calls and self._calls.pop())
        if compiled:
            self.pause(False)
        self.records.append(make(ModuleExit, (module, t, seq, compiled, outputs)))
        if self._depth == 0:
            self._flow_now()

    def pause(self, paused: bool) -> None:
        """Compiled code begins (``True``) or ends: its ATen ops are not the dispatch mode's either (it steps aside
        around compiled calls; :mod:`fxtui.ops.kernels` times their kernels). Nested calls count."""
        if not self._native:
            return
        self._paused = max(0, self._paused + (1 if paused else -1))
        if self._paused == (1 if paused else 0):
            self.lib.fx_pause(int(paused))

    def mark(self, phase: str, enter: bool, owner: object = None) -> None:
        if not self._native:
            super().mark(phase, enter, owner)
            return
        if enter:
            self.records.append(make(PhaseEnter, (phase, _clock(), owner)))
            self._phases.append(phase)
        else:
            self.records.append(make(PhaseExit, (phase, _clock())))
            if self._phases:
                self._phases.pop()
        self._flow_now()

    def _wrap_engine(self) -> None:
        """While recording, autograd's engine runs with flow off: ``torch.autograd.backward`` and ``grad`` call
        ``torch.autograd._engine_run_backward`` by its module's name after making the gradient's seed (whose flow the
        namer reads); the engine's nodes' ops are charged by node. Restored at :meth:`stop`."""
        engine = torch.autograd.__dict__.get("_engine_run_backward")
        if engine is None or self._engine is not None:
            return
        recorder = self

        def _engine_run_backward(*args: Any, **kwargs: Any) -> Any:
            if recorder._native:
                recorder._set_flow(False)
            try:
                return engine(*args, **kwargs)
            finally:
                if recorder._native:
                    recorder._flow_now()

        self._engine = engine
        torch.autograd._engine_run_backward = _engine_run_backward

    def _unwrap_engine(self) -> None:
        if self._engine is not None:
            torch.autograd._engine_run_backward = self._engine
            self._engine = None

    def _flow_now(self) -> None:
        """Note the tensors ops read and make only where the namer reads them: outside every module call, and
        outside the phases whose ops are named by the phase (an optimizer's, a DataLoader's). In a backward, the
        library stops at the first op autograd's engine runs (the seed of the gradient is read, the nodes are not)."""
        self._set_flow(self._depth == 0 and (not self._phases or self._phases[-1] in _FLOW_PHASES))

    def _set_flow(self, on: bool) -> None:
        """Turn the noting of tensor flow on or off, calling the library only on a change (a ctypes call each)."""
        if on != self._flowing:
            self._flowing = on
            self.lib.fx_flow(int(on))

    def stop(self) -> None:
        if not self._native:
            super().stop()
            return
        if self.kernels is not None:
            self.kernels.stop()
        self._unwrap_engine()
        count = int(self.lib.fx_stop())
        self.overflowed = int(self.lib.fx_dropped())
        self._native = False
        self._calls.clear()
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._rows_recorded = count

    def take(self) -> list[Record]:
        """The records so far: a native step's rows merged into its Python records here, after the step."""
        if self._rows_recorded >= 0:
            count, self._rows_recorded = self._rows_recorded, -1
            self.records = self._merge(count)
        return super().take()

    # -- rows into records ------------------------------------------------------------------------

    def timer(self) -> str:
        """Which timer times the steps now, in a sentence for the header."""
        if self.lib is not None:
            return "ops timed by the native timer (a C++ RecordFunction callback)"
        why = why_not()
        return f"ops timed by the dispatch mode: the native timer is not in use ({why or pending()})"

    def op(self, name_id: int) -> NativeOp:
        """The op of a row's name id (names cross from C++ once each)."""
        while len(self._ops) <= name_id:
            buffer = ctypes.create_string_buffer(512)
            n = self.lib.fx_name(len(self._ops), buffer, len(buffer))
            self._ops.append(NativeOp(buffer.value.decode() if n >= 0 else "aten::unknown"))
        return self._ops[name_id]

    def _merge(self, count: int) -> list[Record]:
        """The Python records with the step's rows merged in by time (one record per op)."""
        assert self._rows is not None and self._flow is not None
        return merge(self._rows[:count], self._flow[: int(self.lib.fx_flow_count())], self.records, self.op, self._add)

    def take_step(self) -> list[Any]:
        """The records so far, a native step's kept unmerged: its rows and flow copied into one
        :class:`~fxtui.ops.native_steps.NativeStep` (no Python object per op), which the namer resolves from its
        arrays (:mod:`fxtui.ops.native_steps`)."""
        if self._rows_recorded < 0:
            return super().take()
        assert self._rows is not None and self._flow is not None
        count, self._rows_recorded = self._rows_recorded, -1
        flow = self._flow[: int(self.lib.fx_flow_count())].copy()
        step = NativeStep(self._rows[:count].copy(), flow, self.records, self.op, self._add)
        self.records = []
        return [step]


def _compiled_type() -> type | None:
    import sys

    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    return getattr(eval_frame, "OptimizedModule", None)
