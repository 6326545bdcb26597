"""The per-op timer: every ATen operator the code runs, timed around its own call, with the module calls around it.

No tracing: a :class:`~torch.utils._python_dispatch.TorchDispatchMode` sees each ATen call
below autograd, so any model works (data-dependent code, dynamic shapes, a user's whole
training loop), forward and backward alike. The ``eager`` capture of ``fxtui MODEL`` and the
agent of ``fxtui run`` (on its sampled steps) both time with it.

The hot path is one record appended per op (:class:`~fxtui.ops.records.OpCall`: the op, the
clock before and after its call, the autograd node running it, its output's shape). Everything
else happens after the step, in :meth:`~fxtui.ops.namer.OpNamer.resolve`:

* **forward**: each module call is noted as it begins and ends (:meth:`OpRecorder.enter`,
  :meth:`OpRecorder.exit`: called by global module hooks the recorder installs, or by whoever
  sees module calls already — the agent's call interception); an op belongs to the module on top;
* **backward**: each module call notes the autograd sequence-number counter when it enters
  and leaves. An autograd node made between two such marks belongs to the module on top
  there, so a backward op is charged to the forward module whose stretch holds its node's
  sequence number (parameters' gradient accumulation to the module owning the parameter);
* **phases**: the caller marks where the optimizer, backward, data loading run
  (:meth:`OpRecorder.mark`); ops outside every phase are the script's own (``other``).

A module compiled with ``torch.compile`` runs without the mode: Inductor's kernels in it are
timed by :mod:`~fxtui.ops.kernels` and charged to the modules they were generated from.

Measured here on 2 cores (prototype, torch 2.14, interleaved with uninstrumented steps): the
dispatch mode costs 6–17 µs per op; Σ op medians ÷ uninstrumented step 0.96–1.01 for resnet18,
mobilenet_v3_small, a small CNN's training step and a 2-layer BERT's; per-module forward and
backward time within 5% of the ``train`` capture's for resnet18's modules above 0.2 ms. The
profiler's events (``torch.profiler`` with module ranges) measured alike but cost 10–18 µs per op
more to start, stop and read, so the dispatch mode is the timer.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch
from torch.compiler import is_compiling
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode, _pop_mode, _push_mode
from torch.utils._pytree import tree_leaves

from fxtui.ops import mode_context
from fxtui.ops.dynamo_skip import run_eagerly
from fxtui.ops.records import ModuleEnter, ModuleExit, OpCall, PhaseEnter, PhaseExit, Record, make

#: Marks the label of a backward op, as the ``train`` capture does.
GRADIENT = "∇"

_clock = time.perf_counter_ns
_sequence_nr = torch._C._autograd._get_sequence_nr
_autograd_node = torch._C._current_autograd_node
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_FXTUI_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class _Mode(TorchDispatchMode):
    """The dispatch mode; ``sink`` gets one :class:`OpCall` per ATen call."""

    def __init__(self, sink: Callable[[Record], None], stacks: bool) -> None:
        super().__init__()
        self._sink = sink
        self._stacks = stacks
        self.outside = True
        """No module call is in progress: an op's inputs and output are noted (which root's output it consumes)."""

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
        flow = _flow(args, out) if self.outside else None
        if self._stacks:
            self._sink(make(OpCall, (func, t0, t1, _autograd_node(), shape, _args_text(args), _user_line(), flow)))
        else:
            self._sink(make(OpCall, (func, t0, t1, _autograd_node(), shape, None, None, flow)))
        return out

    def quiet(self) -> None:
        """Record nothing any more: the mode lingers on the stack until it can be popped where it was pushed."""
        self._sink = _ignore
        self._stacks = False
        self.outside = False

    def resume(self, sink: Callable[[Record], None], stacks: bool) -> None:
        """Record again (a lingering mode taken back by the next sampled step)."""
        self._sink = sink
        self._stacks = stacks
        self.outside = True


def _ignore(record: Record) -> None:
    """A quiet mode's sink."""


def _flow(args: Any, out: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The ids of an op's input tensors (lists of them too) and of its output tensors (``nll_loss_forward``'s
    loss and total weight)."""
    ids = []
    for a in args:
        if type(a) is torch.Tensor:
            ids.append(id(a))
        elif type(a) in (list, tuple):
            ids.extend(id(t) for t in a if type(t) is torch.Tensor)
    if type(out) is torch.Tensor:
        return tuple(ids), (id(out),)
    if type(out) in (list, tuple):
        return tuple(ids), tuple(id(t) for t in out if type(t) is torch.Tensor)
    return tuple(ids), ()


def tensor_ids(value: Any) -> tuple[int, ...]:
    """The ids of the tensors in a module's output (a tensor, tuples and lists of them, a dict or dataclass of them)."""
    return tuple(id(leaf) for leaf in tree_leaves(value) if isinstance(leaf, torch.Tensor))


def _args_text(args: Any) -> tuple[str, ...]:
    """The inputs' shapes and strides, for a node's details (only on the steps that describe nodes)."""
    parts = []
    for a in args:
        if isinstance(a, torch.Tensor):
            key = (a.shape, a.dtype, a.stride())
            try:
                text, hashable = _TENSOR_TEXT.get(key), True
            except TypeError:  # a symbolic size, which does not hash: made afresh
                text, hashable = None, False
            if text is None:
                text = f"{'×'.join(map(str, a.shape)) or 'scalar'} {str(a.dtype).removeprefix('torch.')} "
                text += f"stride {tuple(a.stride())}"
                if hashable:
                    _remember(_TENSOR_TEXT, key, text)
            parts.append(text)
        elif isinstance(a, (list, tuple)) and a and isinstance(a[0], torch.Tensor):
            parts.append(f"[{len(a)} tensors]")
        else:
            text = repr(a)
            parts.append(text if len(text) <= 40 else text[:39] + "…")
    return tuple(parts)


#: A describing step's texts, made once per distinct input layout and per user line: an unrolled loop runs the same
#: few hundred of each a million times (measured on an LSTMCell loop: +20 µs a record when each was made afresh).
_TENSOR_TEXT: dict[tuple[Any, ...], str] = {}
_LINE_TEXT: dict[tuple[Any, int], str] = {}
_IS_USER: dict[Any, bool] = {}
#: Entries a cache keeps before it starts afresh (shapes that vary step to step make new keys).
_CACHE_ENTRIES = 4096


def _remember(cache: dict[Any, Any], key: Any, value: Any) -> None:
    """``cache[key] = value``, the cache emptied first when it is full."""
    if len(cache) >= _CACHE_ENTRIES:
        cache.clear()
    cache[key] = value


def _user_line() -> str:
    """The innermost frame of the user's code (not torch's, not fxtui's): ``train.py:42  out = model(x)``."""
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        user = _IS_USER.get(code)
        if user is None:
            name = code.co_filename
            user = not name.startswith((_TORCH_DIR, _FXTUI_DIR)) and not name.startswith("<")
            _remember(_IS_USER, code, user)
        if user:
            key = (code, frame.f_lineno)
            text = _LINE_TEXT.get(key)
            if text is None:
                name = code.co_filename
                line = traceback.FrameSummary(name, frame.f_lineno, code.co_name).line or ""
                text = f"{os.path.basename(name)}:{frame.f_lineno}  {line.strip()}"
                _remember(_LINE_TEXT, key, text)
            return text
        frame = frame.f_back  # type: ignore[assignment]
    return ""


def is_compiled(module: torch.nn.Module, compiled_type: type | None) -> bool:
    """``module`` runs compiled code: ``torch.compile(module)``, ``module.compile()``, or a compiled ``forward``."""
    return (
        (compiled_type is not None and isinstance(module, compiled_type))
        or getattr(module, "_compiled_call_impl", None) is not None  # model.compile(): compiled in place
        or hasattr(module.__dict__.get("forward"), "_torchdynamo_orig_callable")  # forward = compile(forward)
    )


class OpRecorder:
    """Records every ATen op and module call between :meth:`start` and :meth:`stop` (one step).

    ``stacks`` adds each op's inputs and the user's source line (costly: for the steps that
    describe new nodes). ``kernels`` (:class:`~fxtui.ops.kernels.CompiledKernels`) times the
    kernels of the program's compiled code while recording. ``hooks``: the recorder installs
    global module hooks to see module calls (the ``eager`` capture); the agent, which sees every
    module call already, passes False and calls :meth:`enter` and :meth:`exit` itself.
    """

    def __init__(self, kernels: Any = None, hooks: bool = True) -> None:
        self.records: list[Record] = []
        self.kernels = kernels
        self._hooks = hooks
        self._calls: list[bool] = []
        self._handles: list[Any] = []
        self._mode: _Mode | None = None
        self._compiled: type | None = None
        self._depth = 0
        self.limit = sys.maxsize
        """Records a step may hold before the timer stops (checked at module calls); the agent sets
        :data:`~fxtui.core.step_aside.OP_LIMIT` and sets such a step aside. No limit otherwise (the eager capture)."""
        self.overflowed = 0
        """The last step stopped at :attr:`limit` (its records miss ops)."""
        self._limit_now = self.limit

    @property
    def active(self) -> bool:
        return self._mode is not None

    @property
    def mode(self) -> TorchDispatchMode | None:
        """The dispatch mode while recording."""
        return self._mode

    def start(self, stacks: bool = False) -> None:
        """Begin recording (the mode on top of the dispatch stack, module hooks installed)."""
        if self._mode is not None:
            return
        # A mode of an earlier step still on the stack, waiting to be popped where it was pushed (mode_context):
        # taken back, rather than a second one pushed above it.
        lingering = mode_context.reclaim()
        if isinstance(lingering, _Mode):
            lingering.resume(self.records.append, stacks)
        self._mode = lingering if isinstance(lingering, _Mode) else _Mode(self.records.append, stacks)
        self._compiled = _compiled_type()
        self._depth = 0
        self.overflowed = 0
        self._limit_now = self.limit // 4 if stacks else self.limit
        self._calls = []  # per module call in progress: whether it is compiled (the mode stepped aside)
        if self._hooks:
            run_eagerly(self._pre, self._post, _Mode.__torch_dispatch__)
            self._handles = [register_module_forward_pre_hook(self._pre), register_module_forward_hook(self._post)]
        else:
            run_eagerly(_Mode.__torch_dispatch__)
        if lingering is not self._mode:
            mode_context.push(self._mode, self._mode.quiet)
        if self.kernels is not None:
            self.kernels.start(self)

    def _pre(self, module: torch.nn.Module, args: Any) -> None:
        if not is_compiling():  # TorchDynamo tracing a module call: the hook stays out of the user's compiled graph
            self.enter(module, args)

    def _post(self, module: torch.nn.Module, args: Any, out: Any) -> None:
        if not is_compiling():
            self.exit(module, out)

    def enter(self, module: torch.nn.Module, args: Any = None) -> None:
        """``module``'s call begins, given ``args`` (a compiled module's runs without the mode: its kernels are timed
        apart)."""
        mode = self._mode
        if mode is None:
            return
        if len(self.records) >= self._limit_now:  # a step of too many ops: the timer stops here
            self.overflowed = len(self.records)
            self.stop()
            return
        inputs = tensor_ids(args) if self._depth == 0 and args else ()
        self._depth += 1
        mode.outside = False
        skip = is_compiled(module, self._compiled) and _get_current_dispatch_mode() is mode
        self._calls.append(skip)
        if skip:
            self.records.append(make(ModuleEnter, (module, _clock(), _sequence_nr(), True, inputs)))
            _pop_mode()  # compiled code runs without the mode: its kernels are timed by `kernels`
            return
        self.records.append(make(ModuleEnter, (module, _clock(), _sequence_nr(), False, inputs)))

    def exit(self, module: torch.nn.Module, out: Any = None) -> None:
        """``module``'s call ends, with ``out`` (a call that began before recording did has no entry: the namer
        knows)."""
        mode = self._mode
        if mode is None:
            return
        t, seq = _clock(), _sequence_nr()
        self._depth = max(0, self._depth - 1)
        outputs = tensor_ids(out) if self._depth == 0 and out is not None else ()
        mode.outside = self._depth == 0
        compiled = bool(self._calls and self._calls.pop())
        if compiled:
            _push_mode(mode)
        self.records.append(make(ModuleExit, (module, t, seq, compiled, outputs)))

    def stop(self) -> None:
        """Stop recording; the records stay in :attr:`records` until :meth:`take`."""
        if self._mode is None:
            return
        if self.kernels is not None:
            self.kernels.stop()
        if any(self._calls):  # stopped inside a compiled module's call (the next step begins there): back on top
            _push_mode(self._mode)
            self._calls.clear()
        mode_context.pop(self._mode)  # or, in another context than its push's, quiet until it can be
        self._mode = None
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def mark(self, phase: str, enter: bool, owner: object = None) -> None:
        """Note that ``phase`` (``optimizer``, ``backward``, ``data``, ``closure`` …) begins or ends; ``owner``
        names it (the optimizer)."""
        if self._mode is not None:
            if enter:
                self.records.append(make(PhaseEnter, (phase, _clock(), owner)))
            else:
                self.records.append(make(PhaseExit, (phase, _clock())))

    def take(self) -> list[Record]:
        """The records so far, which the recorder forgets."""
        records, self.records = self.records, []
        if self._mode is not None:
            self._mode._sink = self.records.append
        return records


def _compiled_type() -> type | None:
    """``torch._dynamo``'s compiled-module wrapper, when TorchDynamo has been imported (never imported here)."""
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    return getattr(eval_frame, "OptimizedModule", None)
