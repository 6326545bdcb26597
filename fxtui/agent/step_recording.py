"""What the step model samples a step with: the per-op timer asked for, the module calls it must see, the page faults
it counts, and when a step must be set aside rather than timed (the program's own profiler or dispatch mode on, the
mode's context lost, more ops than a sampled step records)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from fxtui.agent.module_calls import ModuleCalls
from fxtui.agent.steps import Recording
from fxtui.core.step_aside import CONTEXT, MODE, OP_LIMIT, OPS, PROFILER
from fxtui.ops import mode_context
from fxtui.ops.kernels import CompiledKernels
from fxtui.ops.recorder import OpRecorder

_profiler_enabled = torch._C._autograd._profiler_enabled

try:
    import resource
except ImportError:  # not on every platform: faults go uncounted
    resource = None  # type: ignore[assignment]


def _faults() -> int:
    """The process's minor page faults so far (read on sampled steps only: a system call)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt if resource is not None else 0


def step_recorder(timer: str, kernels: CompiledKernels) -> OpRecorder:
    """The per-op timer asked for: the dispatch mode's, or the native one (which starts building its library in the
    background if it is not built, and uses the dispatch mode until it is)."""
    if timer == "native":
        from fxtui.ops.native_recorder import NativeRecorder

        recorder: OpRecorder = NativeRecorder(kernels=kernels, hooks=False, build=True)
    else:
        recorder = OpRecorder(kernels=kernels, hooks=False)
    recorder.limit = OP_LIMIT  # a step of more ops stops being timed there and is set aside
    return recorder


class StepRecording(Recording):
    """The step model's recorder: the per-op timer, the module calls it must see, and the page faults it counts."""

    def __init__(self, recorder: OpRecorder, calls: ModuleCalls) -> None:
        self.recorder = recorder
        self.calls = calls
        self.faults = 0
        self._faults0 = 0
        self._broken = ""
        self.kind: Callable[[], str] = lambda: ""
        """The kind of the step being opened (a ``generate()`` call's is timed by the dispatch mode)."""

    def aside(self) -> str:
        # The program's own profiler is on: fxtui's dispatch mode would make it count every op twice
        # (pytorch#195746) and slow what it times. Read at each step's start (0.05 µs). A dispatch mode of the
        # program's on the stack: fxtui's would be pushed above it, and the program's exit would pop fxtui's.
        if _profiler_enabled():
            return PROFILER
        return MODE if mode_context.programs_mode_on_stack() else ""

    def broken(self) -> str:
        return self._broken

    def start(self, describing: bool) -> None:
        if hasattr(self.recorder, "allowed"):  # the native timer: not for generate() calls (they index the records)
            self.recorder.allowed = self.kind() != "generate"
        self.recorder.start(stacks=describing)
        self.calls.recording = True
        self._faults0 = _faults()

    def stop(self) -> list[Any]:
        self.faults += _faults() - self._faults0
        self.calls.recording = False
        mode = self.recorder.mode
        self._broken = CONTEXT if mode is not None and mode_context.lost(mode) else ""
        self.recorder.stop()
        if self.recorder.overflowed and not self._broken:
            self._broken = OPS  # the step ran more ops than a sampled step records: set aside, its records dropped
        take = getattr(self.recorder, "take_step", self.recorder.take)  # the native timer's: its rows unmerged
        return take()

    def mark(self, phase: str, enter: bool, owner: object = None) -> None:
        self.recorder.mark(phase, enter, owner)

    def take_faults(self) -> int:
        faults, self.faults = self.faults, 0
        return faults
