"""The ``eager`` capture: every ATen operator the code runs, timed around its own call and charged to its module.

No tracing: a :class:`~torch.utils._python_dispatch.TorchDispatchMode` sees each ATen call
below autograd, so any model works (data-dependent code, dynamic shapes, a user's whole
training loop), forward and backward alike. This is the timer ``fxtui run`` uses inside the
user's program on its sampled steps.

The hot path is one tuple appended per op: the op, the clock before and after its call, the
autograd node running it (None in forward) and its output's shape. Everything else happens
after the step, in :meth:`~fxtui.ops.namer.OpNamer.resolve`:

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
with ``torch.compile`` runs without the mode: Inductor's kernels in it are timed by
:mod:`~fxtui.ops.kernels` and charged to the modules they were generated
from; the rest of its time (guards, wrapper code, all of it where no kernel is known) is a
node of its own, ``<compiled>``.

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

from fxtui.ops.dynamo_skip import run_eagerly

#: Marks the label of a backward op, as the ``train`` capture does.
GRADIENT = "∇"
#: Phases a recorded op can be in (a training step's, and the data loading and the script's own code).
OP_PHASES = ("forward", "backward", "optimizer", "data", "other")

# Record kinds besides an op (an op's record starts with its OpOverload); KERNEL and CALL come from compiled code.
ENTER, EXIT, SKIP_ENTER, SKIP_EXIT, PHASE_ENTER, PHASE_EXIT, KERNEL, CALL = range(8)

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
    ``kernels`` (:class:`~fxtui.ops.kernels.CompiledKernels`) times the kernels of
    the program's compiled code while recording.
    """

    def __init__(self, on_root: Callable[[torch.nn.Module], None] | None = None, kernels: Any = None) -> None:
        self.records: list[tuple[Any, ...]] = []
        self._on_root = on_root
        self.kernels = kernels
        self._calls: list[bool] = []
        self.enter: Callable[[torch.nn.Module, Any], None] = lambda module, args: None
        """Note that ``module``'s call begins, as the recorder's own hook would (a call in progress when it started)."""
        self._handles: list[Any] = []
        self._mode: _Mode | None = None
        self._depth = 0

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
        append = self.records.append
        mode = self._mode = _Mode(append, stacks)
        compiled = _compiled_type()
        self._depth = 0

        calls = self._calls = []  # per module call in progress: whether it is compiled (the mode stepped aside)

        def pre(module: torch.nn.Module, args: Any) -> None:
            if is_compiling():
                return  # TorchDynamo tracing a module call: the hook stays out of the user's compiled graph
            if self._depth == 0 and self._on_root is not None:
                self._on_root(module)
            self._depth += 1
            skip = (
                (compiled is not None and isinstance(module, compiled))
                or getattr(module, "_compiled_call_impl", None) is not None  # model.compile(): compiled in place
                or hasattr(module.__dict__.get("forward"), "_torchdynamo_orig_callable")  # forward = compile(forward)
            ) and _get_current_dispatch_mode() is mode
            calls.append(skip)
            if skip:
                append((SKIP_ENTER, module, _clock(), _sequence_nr()))
                _pop_mode()  # compiled code runs without the mode: its kernels are timed by `kernels`
                return
            append((ENTER, module, _clock(), _sequence_nr()))

        def post(module: torch.nn.Module, args: Any, out: Any) -> None:
            if is_compiling():
                return
            self._depth = max(0, self._depth - 1)
            if calls and calls.pop():
                _push_mode(mode)
                append((SKIP_EXIT, module, _clock(), _sequence_nr()))
                return
            append((EXIT, module, _clock(), _sequence_nr()))  # (a call that began before recording did: no entry)

        self.enter = pre
        run_eagerly(pre, post, _Mode.__torch_dispatch__)
        self._handles = [register_module_forward_pre_hook(pre), register_module_forward_hook(post)]
        mode.__enter__()
        if self.kernels is not None:
            self.kernels.start(self)

    def stop(self) -> None:
        """Stop recording; the records stay in :attr:`records` until :meth:`take`."""
        if self._mode is None:
            return
        if self.kernels is not None:
            self.kernels.stop()
        if any(self._calls):  # stopped inside a compiled module's call (the next step begins there): back on top
            _push_mode(self._mode)
            self._calls.clear()
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
