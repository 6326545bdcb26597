"""A user's own program profiled as it runs (``fxtui run``): its steps, their phases, and the program's state.

Torch-free: the agent inside the user's program measures, the collector aggregates, and the
app and the headless report read these values. A *step* is one training step (one
``optimizer.step()``) or, without an optimizer, one call of the outermost module; its wall
time splits into the phases of :data:`STEP_PHASES`. Every step is timed this way; a sample
of them is also timed per node (every ATen op, charged to its module), and the unsampled
ones are the uninstrumented reference.
"""

from __future__ import annotations

import statistics
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

from fxtui.core.step_kinds import STEP_KINDS as STEP_KINDS  # its home: parsing --kind needs it alone
from fxtui.core.step_waiting import StepWaiting

#: How a step's wall time splits: waiting on a DataLoader, the model's forward calls, backward,
#: the optimizer (step, zero_grad, gradient clipping), and the script's own Python between them.
STEP_PHASES = ("data", "forward", "backward", "optimizer", "other")
#: The share of a kind's steps that must hold the same calls for its steps to read as alike.
ALIKE = 0.9
#: A fidelity above this, over at least :data:`OVERCOUNT_SAMPLED` sampled steps, is not a reading of the program:
#: its sampled steps' ops add up to more than a whole unsampled step. The engine's own timing reads 0.90–1.05 on
#: the programs that are all ops; above it, something made the sampled steps different work.
OVERCOUNT = 1.15
OVERCOUNT_SAMPLED = 3
#: How each kind is named in a sentence: (one, several).
KIND_NAMES = {
    "train": ("training step", "training steps"),
    "eval": ("evaluation call", "evaluation calls"),
    "generate": ("generate() call", "generate() calls"),
}


@dataclass(frozen=True, slots=True)
class StepTimes:
    """One step as the agent measured it (nanoseconds)."""

    index: int
    """Steps since the program started, warm-up included (0 is the first)."""
    wall_ns: int
    phases_ns: tuple[int, ...]
    """One duration per phase of :data:`STEP_PHASES`; ``other`` is the wall time the rest leave."""
    sampled: bool = False
    """Timed per node too (its wall time then includes the profiler's cost)."""

    def phase(self, name: str) -> int:
        """The step's time in phase ``name``, ns."""
        return self.phases_ns[STEP_PHASES.index(name)]


@dataclass(frozen=True, slots=True)
class ProgramState:
    """The user's program as the collector sees it."""

    command: tuple[str, ...]
    """What runs: ``("train.py", "--epochs", "3")`` or ``("-m", "pkg.train")``."""
    pid: int = 0
    running: bool = True
    exit_code: int | None = None
    """The program's exit status once it ended (``-N``: killed by signal N)."""
    log: str = ""
    """Where the program's output goes when the app owns the terminal (``""``: the terminal)."""
    log_tail: tuple[str, ...] = ()
    """The program's latest output lines."""
    dropped: int = 0
    """Step records the agent dropped because the collector could not keep up (its queue was full)."""
    note: str = ""
    """One sentence about the program itself: ``no module was called``, an agent failure."""
    disturbance: str = ""
    """One sentence when other work took the program's cores (other processes, the hypervisor): how much, for
    how long; ``""`` on a quiet machine."""
    others_cores: float | None = None
    """Other processes' mean CPU use while the program ran, in cores (None: not measured)."""
    cpus: int = 0
    """The machine's CPUs (0: not measured)."""
    steal_share: float = 0.0
    """Time the hypervisor gave the CPUs to another machine, over the run's wall time."""
    timer: str = ""
    """The per-op timer of the latest sampled step: ``mode`` or ``native`` (``fxtui run --timer``); ``""`` before
    one."""
    timer_why: str = ""
    """Why the latest sampled step was the dispatch mode's when the native timer was asked for: its library is being
    built, or cannot be (``""`` otherwise)."""

    @property
    def script(self) -> str:
        """The script or module's name as the user typed it."""
        if not self.command:
            return ""
        return self.command[1] if self.command[0] == "-m" and len(self.command) > 1 else self.command[0]

    def status_text(self) -> str:
        """``running``, ``exited 0``, ``killed by signal 9``."""
        return "running" if self.running else exit_text(self.exit_code)


def exit_text(code: int | None) -> str:
    """How a program ended: ``exited 0``, ``stopped by Ctrl+C``, ``killed by signal 9``; ``ended`` when it went
    without saying how (a signal's default action, ``os._exit``: its parent alone knows)."""
    if code is None:
        return "ended without a status (a signal, or os._exit)"
    if code == -2:
        return "stopped by Ctrl+C"
    if code is not None and code < 0:
        return f"killed by signal {-code}"
    return f"exited {code}"


@dataclass(frozen=True, slots=True)
class KindSummary:
    """One kind of step at a glance: how many, how long, how far its per-node figures can be trusted."""

    kind: str
    """``train``, ``eval`` or ``generate`` (:data:`STEP_KINDS`)."""
    steps: int
    """Steps after warm-up."""
    warmup: int = 0
    sampled: int = 0
    step_median_s: float | None = None
    """Median wall time of the unsampled steps."""
    fidelity: float | None = None
    """Σ of its node medians ÷ :attr:`step_median_s`."""
    overhead: float | None = None
    """Its sampled steps' median ÷ :attr:`step_median_s`."""
    holds: tuple[tuple[str, int], ...] = ()
    """What a step of it holds (its latest): ``forward``, ``backward``, ``optimizer:AdamW``, ``data``."""
    nodes: int = 0
    """Nodes its sampled steps ran."""
    phase_median_s: tuple[float, ...] = ()
    """Its unsampled steps' median of each phase (:data:`STEP_PHASES` order)."""
    phase_nodes_s: tuple[float, ...] = ()
    """Σ of its node medians in each phase (:data:`STEP_PHASES` order): beside :attr:`phase_median_s`, how much
    of each phase the table accounts for. A model's forward and backward are mostly ops; a data loader's or an
    optimizer's loop in Python is not."""
    aside: tuple[tuple[str, int], ...] = ()
    """Steps fxtui left unsampled on purpose, per reason (:data:`~fxtui.core.step_aside.ASIDE`), out of every
    median: under the program's own profiler, or in a context fxtui could not follow."""
    waiting: StepWaiting | None = None
    """Its steps split into ops, the program's Python and waiting for a CPU; which sampled steps waited."""

    @property
    def name(self) -> str:
        """``training steps``, ``evaluation call`` … as many as there are."""
        one, several = KIND_NAMES.get(self.kind, (self.kind, self.kind))
        return one if self.steps == 1 else several


def overcount_doubt(kind: str, fidelity: float | None, sampled: int) -> str | None:
    """The sentence that says the per-node figures of a ``kind`` of step do not add up, or None when they may be read.

    ``fidelity`` is its Σ node medians ÷ unsampled median. Under heavy load a fidelity of 30 has been seen: the
    sampled steps waited for a core inside their ops.
    """
    if fidelity is None or fidelity <= OVERCOUNT:
        return None
    name = KIND_NAMES.get(kind, (kind, kind))[1]
    if sampled < OVERCOUNT_SAMPLED:  # too few to tell a step slowed by others from one that did other work
        return (
            f"the sampled {name}' ops add up to {fidelity:.2f}× an unsampled one, from {sampled} sampled: too few to "
            "read (a longer run, or --sample-every, samples more)"
        )
    return (
        f"the sampled {name}' ops add up to {fidelity:.2f}× an unsampled one: they did not do the same work (other "
        "processes slowed them, their ops overlap others', or the unsampled steps are shorter ones)"
    )


def holds_text(holds: tuple[tuple[str, int], ...] | dict[str, int]) -> str:
    """What a training step holds, in words: ``1 forward, 1 backward, AdamW.step()`` or
    ``4 micro-batches (forward + backward), Adam.step() ×2``."""
    counts = dict(holds)
    forwards, backwards = counts.get("forward", 0), counts.get("backward", 0)
    optimizers = {k.removeprefix("optimizer:"): n for k, n in counts.items() if k.startswith("optimizer:")}
    parts = []
    if backwards > 1 and forwards == backwards and len(optimizers) == 1 and sum(optimizers.values()) == 1:
        parts.append(f"{backwards} micro-batches (forward + backward)")
    else:
        if forwards:
            parts.append(f"{forwards} forward{'s' if forwards > 1 else ''}")
        if backwards:
            parts.append(f"{backwards} backward{'s' if backwards > 1 else ''}")
    for name, n in optimizers.items():
        parts.append(f"{name}.step()" + (f" ×{n}" if n > 1 else ""))
    if backwards and not optimizers:
        parts.append("no optimizer (its update is the script's own)")
    return ", ".join(parts)


@dataclass(frozen=True, slots=True)
class StepSummary:
    """The steps so far: counts, each phase's median over the unsampled steps, and the recent timeline."""

    kind: str
    """The kind of step these figures are of: ``train``, ``eval`` or ``generate`` (:data:`STEP_KINDS`)."""
    steps: int
    """Steps after warm-up."""
    warmup: int
    """Steps at the start left out of every figure (allocator, thread pools and oneDNN warming up)."""
    sampled: int
    """Steps after warm-up also timed per node."""
    phase_median_s: tuple[float, ...] = ()
    """Median of each phase of :data:`STEP_PHASES` over the unsampled steps (all steps while none is unsampled)."""
    step_median_s: float | None = None
    """Median wall time of the unsampled steps: the program's own pace."""
    sampled_median_s: float | None = None
    """Median wall time of the sampled steps (the per-node profiler's cost shows against the other)."""
    recent: array[float] = field(default_factory=lambda: array("d"))
    """The latest steps, oldest first, :data:`STEP_PHASES` seconds each, one after another."""
    recent_sampled: bytes = b""
    """One byte per recent step: 1 when it was sampled."""
    history: array[float] = field(default_factory=lambda: array("d"))
    """Step wall time over the whole run, coarse: the median of each stretch of :attr:`history_every` steps."""
    history_every: int = 1
    faults_median: float | None = None
    """Median minor page faults of the sampled steps (the program's process, every thread); None uncounted."""
    holds: tuple[tuple[str, int], ...] = ()
    """What most steps of this kind hold: ``forward``, ``backward``, ``optimizer:AdamW``, ``data`` (calls)."""
    holds_share: float = 1.0
    """The share of the steps that hold what most do: below :data:`ALIKE`, the steps are not alike."""
    kinds: tuple[KindSummary, ...] = ()
    """Every kind of step the program ran, the one these figures are of included (:data:`STEP_KINDS` order)."""
    sampled_after_s: float = 0.0
    """Median of what a sampled step cost the program after its wall time (its ops resolved to nodes, summed)."""

    @property
    def sampling_share(self) -> float | None:
        """What sampling cost the program, as a share of its steps' time: each sampled step's extra time over an
        unsampled one and what it cost after its wall (medians), over every step's. None before both kinds of step
        exist."""
        if not self.steps or not self.step_median_s or self.sampled_median_s is None:
            return None
        extra = (max(self.sampled_median_s - self.step_median_s, 0.0) + self.sampled_after_s) * self.sampled
        return extra / (self.step_median_s * (self.steps - self.sampled) + self.sampled_median_s * self.sampled)

    @property
    def recent_steps(self) -> int:
        return len(self.recent) // len(STEP_PHASES)

    def recent_step(self, i: int) -> tuple[float, ...]:
        """Phase seconds of recent step ``i`` (0: the oldest shown)."""
        width = len(STEP_PHASES)
        return tuple(self.recent[i * width : (i + 1) * width])

    def median(self, phase: str) -> float | None:
        """The median of ``phase`` (seconds); None before any step."""
        if not self.phase_median_s:
            return None
        return self.phase_median_s[STEP_PHASES.index(phase)]

    def shares(self) -> dict[str, float]:
        """Each phase's median as a share of the sum of the medians (0–1)."""
        total = sum(self.phase_median_s) or 1.0
        return {p: m / total for p, m in zip(STEP_PHASES, self.phase_median_s, strict=False)}


def phase_medians(steps: Sequence[StepTimes]) -> tuple[float, ...]:
    """The median of each phase over ``steps``, seconds (zeros for none)."""
    if not steps:
        return tuple(0.0 for _ in STEP_PHASES)
    return tuple(statistics.median(s.phases_ns[i] for s in steps) / 1e9 for i in range(len(STEP_PHASES)))


@dataclass(frozen=True, slots=True)
class RankStats:
    """One rank of a distributed job: its pace, its phases, and what it computes against what it waits."""

    rank: int
    host: str = ""
    steps: int = 0
    step_median_s: float | None = None
    phase_median_s: tuple[float, ...] = ()
    compute_s: float = 0.0
    """Σ of its forward and backward ops' medians (sampled steps): its own arithmetic per step."""
    comm_s: float = 0.0
    """Its backward phase's median less its backward ops': time waiting in collectives (and autograd's engine)."""
    comm_ops_s: float = 0.0
    """Σ of its collective ops' medians (``c10d.allreduce_`` …): launching them, not waiting for them."""
    pid: int = 0
    role: str = ""
    """A process of a job without collectives (hogwild workers): ``main process`` or ``worker 1 of 2``; ``""`` for a
    rank."""
    kind: str = ""
    """The kind of step its figures are of (a job's processes may each run their own: workers train, the main
    process evaluates)."""
    node: int = -1
    """Its node (torchrun's ``GROUP_RANK``) in a job across nodes; -1 when not said."""
    gone_since: float = 0.0
    """Wall-clock time of the last word heard of it, when its node is gone (killed, unreachable); 0 otherwise."""
    ops_timed: bool = True
    """Its ops are timed: False for a rank outside the sample of a job larger than a collector compares
    (:mod:`fxtui.wire.rank_sample`), whose figures are its steps' only."""

    @property
    def where(self) -> str:
        """``node 1`` and its host, when the rank's node is known (a job across nodes)."""
        if self.node < 0:
            return ""
        return f"node {self.node}" + (f" ({self.host})" if self.host else "")


@dataclass(frozen=True, slots=True)
class RankSummary:
    """Every rank of a distributed job side by side, the rank the figures show, and who holds the others up."""

    shown: int
    ranks: tuple[RankStats, ...]
    collectives: bool = True
    """The processes share collectives (a distributed job's ranks); False for processes that train on their own
    (hogwild workers): none waits for another, there is no straggler."""

    def straggler(self) -> str:
        """One sentence: the rank whose compute is the slowest, by how much, and what the others wait."""
        if not self.collectives:
            return ""
        timed = [r for r in self.ranks if r.compute_s > 0]
        if len(timed) < 2:
            return ""
        slow = max(timed, key=lambda r: r.compute_s)
        fast = min(timed, key=lambda r: r.compute_s)
        if fast.compute_s <= 0 or slow.compute_s < 1.05 * fast.compute_s:
            return "ranks compute alike (within 5%)"
        others = [r for r in timed if r is not slow]
        wait = statistics.median(r.comm_s for r in others) - slow.comm_s
        where = f" on {slow.where}" if len({r.node for r in self.ranks}) > 1 else ""
        slower = 100 * (slow.compute_s / fast.compute_s - 1)
        said = f"rank {slow.rank}{where} is {slower:.0f}% slower in forward and backward"
        if wait > 0:
            said += f"; the others wait ~{_ms(wait)} a step for it in collectives"
        return said


def gone_ranks(ranks: Sequence[RankStats]) -> str:
    """One sentence for the ranks whose node is gone: which, on which node, since when (their figures are their
    last); "" when none is."""
    gone = [r for r in ranks if r.gone_since]
    if not gone:
        return ""
    import time

    by_node: dict[str, list[RankStats]] = {}
    for r in gone:
        by_node.setdefault(r.where or "another node", []).append(r)
    parts = []
    for where, rs in by_node.items():
        since = time.strftime("%H:%M:%S", time.localtime(min(r.gone_since for r in rs)))
        names = ", ".join(str(r.rank) for r in rs)
        parts.append(f"rank{'s' if len(rs) > 1 else ''} {names} on {where} gone since {since}")
    return "; ".join(parts) + ": no word from their node since, their figures are the last it sent"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"
