"""Which step the program is in: training steps, evaluation calls and ``generate()`` calls, kept apart.

Torch-free: the agent (:mod:`fxtui.agent.agent`) turns what torch tells it — a module call at the
top (a *root* call) with or without gradients, a backward, an optimizer step, a closure, a batch
from a DataLoader, a ``generate()`` call — into calls of :class:`StepModel`, which decides where
steps begin and end, what kind each is, and how its wall time splits into phases
(:data:`~fxtui.core.program_run.STEP_PHASES`, exclusively: a phase inside another pauses it).

**Kinds.** A *training step* spans one whole iteration — its forwards, backwards and updates:

* with an optimizer object, it ends when the optimizer that closes the iteration has stepped: the
  one that stepped last among those first seen (a GAN's second optimizer; WGAN's generator after
  five critic steps), so several optimizers, and several micro-batches per optimizer step
  (gradient accumulation), make one step;
* without one (a manual SGD update), it ends where the next iteration's forward begins, after a
  backward;
* a ``step(closure)``'s closure is the step's own forward, loss and backward, not the optimizer's.

An *evaluation call* is a root call without gradients (``no_grad``, ``inference_mode``), or of a
model in ``eval()`` mode that the program trains: one step per call, from its start to the next
one's. Evaluation inside training (nanoGPT's ``estimate_loss``) is carved out of the training
step it interrupts, which resumes after. A model never trained that runs without gradients inside
a training iteration (a frozen encoder, a teacher) is part of the iteration. In a program that
never trains, every root call is an evaluation call. A ``generate()`` call is a step of its own
kind, from its start to its end.

What the program pays: the agent calls these methods at root calls, backwards, optimizer steps and
batches — never per op or per inner module — each a clock reading and a few attribute updates.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fxtui.agent.pace import Pace
from fxtui.core.program_run import STEP_KINDS, STEP_PHASES
from fxtui.wire.agent_contract import AgentOptions

DATA, FORWARD, BACKWARD, OPTIMIZER, OTHER = (STEP_PHASES.index(p) for p in STEP_PHASES)
KINDS = STEP_KINDS
#: How many times a new optimizer may take over closing the iteration and restart the training warm-up.
MAX_CLOSER_CHANGES = 3


@dataclass
class OpenStep:
    """A step in progress (or paused: a training step while an evaluation call runs)."""

    kind: str
    index: int
    start: int
    last: int
    sampled: bool = False
    describing: bool = False
    provisional: bool = False
    """A call before the program has trained: a training step if a backward follows, else an evaluation call."""
    acc: list[int] = field(default_factory=lambda: [0] * len(STEP_PHASES))
    stack: list[int] = field(default_factory=lambda: [OTHER])
    records: list[Any] = field(default_factory=list)
    holds: Counter[str] = field(default_factory=Counter)
    """What the step holds: ``forward`` (root calls), ``backward``, ``optimizer:AdamW`` (steps), ``data``."""
    roots: set[int] = field(default_factory=set)
    """The roots called with gradients in it (the models it may train)."""
    at_exit: list[int] | None = None
    """The phases when its last root call ended (a program's last evaluation call ends there, not at exit)."""
    aside: str = ""
    """Why fxtui left it unsampled, its wall time out of the figures (:data:`~fxtui.core.step_aside.ASIDE`)."""
    loss_from: int | None = None
    """Its ``other`` time when its last forward ended, while nothing but the script's own code has run since: what
    a backward that follows finds above it is the loss computed from the forward's output (its forward's)."""
    waited: int = 0
    """Its thread's run-queue delay while it ran, ns, up to :attr:`wait_at` (-1: the kernel does not say)."""
    wait_at: int = -1
    """The thread's run-queue delay when the step last opened or resumed (-1 while set aside)."""

    @property
    def wall(self) -> int:
        return sum(self.acc)


@dataclass(frozen=True)
class ClosedStep:
    """A step that ended, as the agent sends it."""

    kind: str
    index: int
    start: int
    wall_ns: int
    phases_ns: tuple[int, ...]
    sampled: bool
    describing: bool
    warm: bool
    records: list[Any]
    holds: tuple[tuple[str, int], ...]
    restart: bool = False
    """The kind's steps so far held only part of an iteration (an optimizer seen late): their figures are void."""
    aside: str = ""
    """Why fxtui left it unsampled (:data:`~fxtui.core.step_aside.ASIDE`): not a plain unsampled step either."""
    wait_ns: int = -1
    """Time its thread was ready to run but waited for a CPU (:mod:`fxtui.agent.cpu_wait`); -1 where unknown."""
    closing_ns: int = 0
    """A sampled step's clock where its close began (its timer stopped after it): what the agent does from there on
    is the step's cost after its wall."""


class Recording:
    """What the step model asks of the per-op recorder (the agent's :class:`~fxtui.ops.recorder.OpRecorder`)."""

    def start(self, describing: bool) -> None:
        """Record the ops from now on (``describing``: with their inputs and source lines)."""

    def stop(self) -> list[Any]:
        """Stop recording; the records since :meth:`start`."""
        return []

    def mark(self, phase: str, enter: bool, owner: object = None) -> None:
        """Note a phase's start or end among the records (only while recording)."""

    def aside(self) -> str:
        """Why no step may be timed now (the program's own profiler is on), or ""."""
        return ""

    def broken(self) -> str:
        """Why the records just stopped miss ops the step ran (the mode lost to a context it could not follow),
        or ""."""
        return ""


class StepModel:
    """The program's steps as they happen; ``emit(ClosedStep)`` gets each one that ends."""

    def __init__(
        self,
        clock: Callable[[], int],
        emit: Callable[[ClosedStep], None],
        recording: Recording | None = None,
        options: AgentOptions | None = None,
        describe: Callable[[str], bool] = lambda kind: False,
    ) -> None:
        self.clock = clock
        self.emit = emit
        self.recording = recording or Recording()
        self.options = options or AgentOptions()
        self.describe = describe
        """Whether a sampled step of a kind that begins now should note new nodes' inputs and source lines."""
        self.paces = {kind: Pace(kind, self.options) for kind in KINDS}
        self.current: OpenStep | None = None
        self.paused: OpenStep | None = None
        self.trained = False
        """A backward or an optimizer step has run: root calls with gradients are training from now on."""
        self.trained_roots: set[int] = set()
        self.eval_mode_trains = False
        self.closer: int | None = None
        """The optimizer (its id) whose step ends a training step."""
        self._seen_optimizers: set[int] = set()
        self._closer_changes = 0
        self._closed_without_closer = 0
        self.generating = 0
        self.stepping = 0
        """Optimizer steps in progress (a closure's forward and backward run inside one)."""
        self.loading = 0
        self.fetched = False
        """A DataLoader gave a batch since the last root call: a model's method calling its parts now works on it."""
        self._entered: list[bool] = []
        """Per root call in progress: whether it opened a forward phase."""
        self.enabled = True
        """False once the collector is gone, or for a rank outside a large job's sample (:mod:`fxtui.wire.rank_sample`):
        no step is sampled."""
        self.wait_clock: Callable[[], int] = lambda: -1
        """The stepping thread's run-queue delay so far, ns (-1: unknown); read where a step opens, pauses, resumes
        and closes (:class:`~fxtui.agent.cpu_wait.ThreadWait`)."""

    # -- time ------------------------------------------------------------------------------------

    def _tick(self, now: int) -> OpenStep | None:
        step = self.current
        if step is not None:
            step.acc[step.stack[-1]] += now - step.last
            step.last = now
        return step

    def _push(self, phase: int, mark: str = "", owner: object = None) -> None:
        step = self.current
        if step is not None:
            step.loss_from = None  # a phase between a forward and its backward: what came after it is no loss
            step.stack.append(phase)
            if mark and step.sampled:
                self.recording.mark(mark, True, owner)

    def _pop(self, mark: str = "") -> None:
        step = self.current
        if step is not None:
            if len(step.stack) > 1:
                step.stack.pop()
            if mark and step.sampled:
                self.recording.mark(mark, False)

    # -- opening and closing steps ---------------------------------------------------------------

    def _open(self, kind: str, now: int, provisional: bool = False) -> OpenStep:
        pace = self.paces["eval" if provisional else kind]
        index, sampled = pace.open()
        sampled = sampled and self.enabled
        aside = self.recording.aside()  # the program's profiler on: no step under it is timed, nor counted as plain
        sampled = sampled and not aside
        step = OpenStep(kind, index, now, now, sampled=sampled, describing=sampled and self.describe(kind),
                        provisional=provisional, aside=aside)  # fmt: skip
        step.wait_at = self.wait_clock()
        if step.wait_at < 0:
            step.waited = -1  # the kernel does not say: the step carries no wait
        self.current = step
        if sampled:
            self.recording.start(step.describing)
        return step

    def _close(self, step: OpenStep, at: list[int] | None = None) -> None:
        """End ``step`` (``at``: its phases as they were at an earlier moment, its last root call's end)."""
        if step is self.current:
            self.current = None
        closing = self.clock() if step.sampled else 0
        if step.sampled:
            self._stop(step)
        self._stop_waiting(step)
        kind = step.kind
        if step.provisional:  # no backward came: an evaluation call after all
            kind = "eval"
        acc = at if at is not None else step.acc
        wall = sum(acc)
        pace = self.paces["eval" if step.provisional else kind]
        restart, pace.restarted = pace.restarted, False
        # A step set aside teaches the pace nothing (its wall holds the program's profiler, or part of a recording):
        # closed as a describing step is.
        warm = pace.close(step.index, wall, step.sampled, step.describing or bool(step.aside))
        self.emit(ClosedStep(kind, step.index, step.start, wall, tuple(acc), step.sampled, step.describing, warm,
                             step.records, tuple(sorted(step.holds.items())), restart, step.aside,
                             min(step.waited, wall) if step.waited >= 0 else -1, closing))  # fmt: skip
        if step.sampled:  # stopping its timer, resolving and sending its ops: its cost too, after its wall
            pace.after(step.index, self.clock() - closing)

    def _stop_waiting(self, step: OpenStep) -> None:
        """Add the thread's run-queue delay since the step opened or resumed to the step's."""
        if step.wait_at < 0:
            return
        now = self.wait_clock()
        step.waited = step.waited + now - step.wait_at if now >= 0 and step.waited >= 0 else -1
        step.wait_at = -1

    def _pause(self, step: OpenStep) -> None:
        """Set a training step aside while an evaluation or ``generate()`` call runs."""
        if step.sampled:
            self._stop(step)
        self._stop_waiting(step)
        self.paused = step
        self.current = None

    def _resume(self, now: int) -> OpenStep | None:
        step = self.paused
        if step is None:
            return None
        self.paused = None
        step.last = now
        step.wait_at = self.wait_clock()
        if step.wait_at < 0:
            step.waited = -1  # the kernel does not say: the step carries no wait
        self.current = step
        if not step.aside and (aside := self.recording.aside()):
            self._set_aside(step, aside)
        if step.sampled:
            self.recording.start(step.describing)
        return step

    def _stop(self, step: OpenStep) -> None:
        """Stop recording ``step``: its records kept, or the step set aside if they miss some of its ops."""
        records = self.recording.stop()
        broken = self.recording.broken()
        if broken:
            self._set_aside(step, broken)
        else:
            step.records += records

    def _set_aside(self, step: OpenStep, why: str) -> None:
        """``step`` is left unsampled for ``why``, and its wall time out of the figures."""
        step.sampled = step.describing = False
        step.records = []
        step.aside = why

    def set_aside(self, why: str) -> None:
        """The program starts its own profiler (``why``): the step in progress stops being timed (the profiler
        starts with fxtui's mode off the stack) and is set aside, as is a training step paused for an evaluation."""
        for step in (self.current, self.paused):
            if step is None:
                continue
            if step is self.current and step.sampled:
                self.recording.stop()
            self._set_aside(step, why)

    def _leave_current(self, now: int) -> None:
        """The step in progress gives way to another: a training step is paused, any other ends."""
        step = self._tick(now)
        if step is None:
            return
        if step.kind == "train" and not step.provisional:
            self._pause(step)
        else:
            self._close(step)

    def _training(self, now: int) -> OpenStep:
        """The training step to charge now: the one in progress, the paused one, or a new one."""
        step = self.current
        if step is not None and step.kind == "train":
            return step
        if step is not None:
            self._close(step)
        return self._resume(now) or self._open("train", now)

    def _converted(self, step: OpenStep) -> None:
        """An evaluation or provisional step turns out to train: it is the training kind's, from its start."""
        if step.kind == "train" and not step.provisional:
            return
        step.kind, step.provisional = "train", False
        step.index, _sampled = self.paces["train"].open()
        # Its sampling was decided as an evaluation call's; it stays (a training warm-up step keeps no figure).

    # -- events ----------------------------------------------------------------------------------

    def root_enter(self, root: int, grad: bool, training: bool, steps: bool = True, part: bool = False) -> None:
        """A root module's call begins (a module called at the top, outside every other).

        ``steps``: False for a loss module (``nn.CrossEntropyLoss()(out, y)``): it is part of whatever step runs.
        ``part``: a part of the model called by one of the model's own methods (``model.decode(z)`` of samples):
        a forward of the step in progress, not a call of its own — unless a DataLoader gave a batch since the last
        root call, or it runs without gradients inside a training step: then it is a call as any other.
        """
        now = self.clock()
        step = self._tick(now)
        if self.loading:
            self._entered.append(False)  # a DataLoader's transform module: its time stays the batch's
            return
        if not steps:
            self._entered.append(False)  # a loss module's call: its time is the phase it runs in (the script's)
            return
        fetched, self.fetched = self.fetched, False
        # A model's own method calling its parts over a new batch is a call like any other (Lightning's
        # validation_step calling self.net, batch after batch), and so is one without gradients inside a training
        # step (an evaluation beginning).
        if part and step is not None and not step.provisional and not fetched and (grad or step.kind != "train"):
            self._enter(step, root, grad)  # its time is the step's forward; it holds no forward call of its own
            return
        if self.generating or self.stepping:
            if step is not None:
                step.holds["forward"] += 1
            self._enter(step, root, grad)  # a forward inside generate() or a closure
            return
        evaluating = not grad or (
            not training and self.trained and root in self.trained_roots and not self.eval_mode_trains
        )
        if evaluating:
            if self.trained and root not in self.trained_roots and step is not None and step.kind == "train":
                self._enter(step, root, grad)  # a model never trained, inside a training iteration (a teacher)
                return
            self._leave_current(now)
            step = self._open("eval", now)
        elif not self.trained:
            if step is None or not (step.provisional and not step.holds["forward"]):
                if step is not None:
                    self._leave_current(now)
                step = self._open("train", now, provisional=True)
        else:
            step = self._training(now)
            if self.closer is None and step.holds["backward"]:
                self._closed_without_closer += 1
                self._close(step)  # the next iteration's forward, in a program that updates without an optimizer
                step = self._open("train", now)
        step.holds["forward"] += 1
        self._enter(step, root, grad)

    def _enter(self, step: OpenStep | None, root: int, grad: bool) -> None:
        if step is not None and grad:
            step.roots.add(root)
        self._entered.append(True)
        self._push(FORWARD)

    def root_exit(self) -> None:
        """The root module's call ends."""
        step = self._tick(self.clock())
        forward = bool(self._entered) and self._entered.pop()
        if forward:
            self._pop()
        if step is not None and len(step.stack) == 1:
            step.at_exit = list(step.acc)
        if step is not None and forward and step.stack[-1] == OTHER:
            step.loss_from = step.acc[OTHER]

    def backward_enter(self) -> None:
        now = self.clock()
        step = self._tick(now)
        if step is not None and step.loss_from is not None:
            # The loss computed outside every module (F.cross_entropy(model(x), y), a loss module): the forward's.
            loss = step.acc[OTHER] - step.loss_from
            step.acc[OTHER] -= loss
            step.acc[FORWARD] += loss
            step.loss_from = None
        if step is None:
            step = self._resume(now) or self._open("train", now)
        elif step.kind == "eval":
            self.eval_mode_trains = True  # a model in eval() mode whose forward is trained
        self._converted(step)
        self.trained = True
        self.trained_roots |= step.roots
        step.holds["backward"] += 1
        self._push(BACKWARD, "backward")

    def backward_exit(self) -> None:
        self._tick(self.clock())
        self._pop("backward")

    def optimizer_enter(self, optimizer: object, name: str) -> None:
        """An optimizer's ``step()`` begins."""
        now = self.clock()
        self._tick(now)
        step = self._training(now)
        self._converted(step)
        self.trained = True
        self.trained_roots |= step.roots
        if not self.stepping:  # a wrapper's step calls the inner optimizer's: one step
            step.holds[f"optimizer:{name}"] += 1
        self.stepping += 1
        self._push(OPTIMIZER, "optimizer", optimizer)

    def optimizer_exit(self, optimizer: object) -> None:
        """The optimizer's ``step()`` ended: if it closes the iteration, a training step ends."""
        now = self.clock()
        step = self._tick(now)
        self._pop("optimizer")
        self.stepping = max(0, self.stepping - 1)
        if self.stepping:
            return  # the inner optimizer of a wrapper: the outer one's step is the one that counts
        key = id(optimizer)
        if key not in self._seen_optimizers:
            self._seen_optimizers.add(key)
            if self.closer is None and self._closed_without_closer:
                self.paces["train"].restart()  # steps closed before an optimizer was seen held part of one
            if self.closer is None or self._closer_changes < MAX_CLOSER_CHANGES:
                if self.closer is not None:
                    self._closer_changes += 1
                    self.paces["train"].restart()  # steps measured so far held part of an iteration
                self.closer = key
        if key == self.closer and step is not None and step.kind == "train":
            self._close(step)
            self._open("train", now)

    def closure_enter(self) -> None:
        """A ``step(closure)``'s closure begins: the model's forward, loss and backward, not the optimizer's."""
        self._tick(self.clock())
        self._push(OTHER, "closure")

    def closure_exit(self) -> None:
        self._tick(self.clock())
        self._pop("closure")

    def phase_enter(self, phase: int, mark: str, owner: object = None) -> None:
        """``zero_grad``, gradient clipping (optimizer), a DataLoader's batch (data)."""
        now = self.clock()
        step = self._tick(now)
        if phase == OPTIMIZER and (step is None or step.kind != "train"):  # zero_grad, clipping: training
            if self.trained:
                step = self._training(now)
            else:
                self._leave_current(now)
                step = self._open("train", now, provisional=True)
        if phase == DATA:
            self.loading += 1
            self.fetched = True
            if step is not None:
                step.holds["data"] += 1
        self._push(phase, mark, owner)

    def no_batch(self) -> None:
        """The DataLoader had no batch to give (its iterator ended): nothing was fetched for the next call."""
        self.fetched = False

    def phase_exit(self, phase: int, mark: str) -> None:
        self._tick(self.clock())
        if phase == DATA:
            self.loading = max(0, self.loading - 1)
        self._pop(mark)

    def generate_enter(self) -> None:
        """A ``generate()`` call begins: a step of its own."""
        now = self.clock()
        self._leave_current(now)
        self.generating += 1
        self._open("generate", now)

    def generate_exit(self) -> None:
        now = self.clock()
        step = self._tick(now)
        self.generating = max(0, self.generating - 1)
        if step is not None and step.kind == "generate":
            self._close(step)
        self._resume(now)

    def finish(self) -> None:
        """The program ends: an evaluation call still open ends at its last root call's end; a training iteration
        set aside for an evaluation, complete without an optimizer (its backward done), ends where it was set aside
        (the last epoch's last batch, before the final evaluation); the rest is dropped."""
        step = self._tick(self.clock())
        if step is not None and (step.kind != "train" or step.provisional) and step.holds["forward"]:
            self._close(step, at=step.at_exit)
        elif step is not None and step.sampled:
            self.recording.stop()  # records and all dropped: the step is not sent
        paused = self.paused
        if paused is not None and self.closer is None and paused.holds["backward"] and paused.holds["forward"]:
            self.current = paused
            self._close(paused)  # its phases stopped when it was set aside
        self.current = self.paused = None
