"""How each step of a kind splits into ops, the program's Python and waiting for a CPU; which sampled steps waited.

The agent sends every step's wall time and the run-queue delay of the thread that ran it (``Step.wait_ns``,
:mod:`fxtui.agent.cpu_wait`); the collector adds its other threads' (:mod:`fxtui.jobs.thread_waits`). Here, per
kind of step, over the latest :data:`WINDOW` steps:

* **waiting for a CPU** is each unsampled step's wait ÷ its wall time; the figure is the median of these
  per-step shares, its range their p25–p75. A step's wait is its own thread's run-queue delay and what its
  other threads' waits held it up (:mod:`fxtui.jobs.thread_waits`: its intra-op pool, its DataLoader
  workers), at most its wall time;
* **ops** (the headline *fidelity*) is each sampled step's Σ op times ÷ the unsampled steps' median; the figure
  is the median of these per-step ratios, so it lies inside the p25–p75 it is printed with. Ops timed while
  their thread waited include that wait: for the split, each sampled step's ops are counted less its wait in the
  same proportion (:attr:`SampledStep.running_ops`), every sampled step's, whether or not the node figures leave
  the disturbed ones out (a split that took the quiet steps' ops when enough were quiet and the kept steps' ops
  less their wait otherwise moved the CNN's Python share by 23 points between two quiet runs, as the count of
  quiet steps crossed the line). Step by step, not as the median of every step's ops less the steps' median wait:
  on one machine in one run (``bench_shared_server.py``, one intra-op thread, quiet and beside one and two busy
  loops, two rounds), the program's Python share moved from the quiet run's by at most 12 points step by step
  (one of eight busy runs beyond 10) and by up to 15 the other way (four of eight): a step's waits do not fall
  evenly on its ops and its Python (a DataLoader's wait falls on the fetch, not on the ops);
* **in ops** per phase: each sampled step's Σ op times in a phase ÷ that phase's unsampled median, the median
  of those per-step ratios (ops as timed, as the fidelity);
* **the program's Python** is what remains of the step: 1 − ops − waiting, where the split of the median step
  (:mod:`fxtui.core.step_split`) takes the waiting at most what the ops leave, so the three add up.

A sampled step whose wait took more than :data:`DISTURBED_SHARE` of its wall time is *disturbed*: its ops are
left out of the node figures (as the model mode leaves out its disturbed steps) unless ``--keep-disturbed``, or
unless fewer than :data:`~fxtui.core.sample_window.MIN_QUIET` quiet ones remain — a machine busy all the time —
when the figures are the program's times under that load and the header says how much of them was waiting.
Torch-free; memory is bounded.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from fxtui.core.nodes import Spread
from fxtui.core.program_run import STEP_PHASES, ProgramState, StepSummary
from fxtui.core.sample_window import MIN_QUIET
from fxtui.core.step_waiting import StepWaiting
from fxtui.jobs.machine_load import DISTURBED_SHARE
from fxtui.jobs.step_rings import PHASES, Ring
from fxtui.jobs.thread_waits import ThreadWaits

#: Steps of each sort (unsampled, sampled) the shares come from.
WINDOW = 256


@dataclass(frozen=True, slots=True)
class SampledStep:
    """A sampled step's times, as the split needs them (ns)."""

    wall_ns: int
    wait_ns: int
    ops_ns: int
    phase_ops_ns: tuple[int, ...]
    disturbed: bool

    @property
    def running_ops(self) -> float:
        """Its ops less the share of them its thread spent waiting (the step's own wait share)."""
        if self.wait_ns <= 0 or self.wall_ns <= 0:
            return float(self.ops_ns)
        return self.ops_ns * max(0.0, 1.0 - self.wait_ns / self.wall_ns)


def disturbed(wall_ns: int, wait_ns: int) -> bool:
    """A step whose thread waited for a CPU more than :data:`DISTURBED_SHARE` of its wall time."""
    return wait_ns >= 0 and wall_ns > 0 and wait_ns > DISTURBED_SHARE * wall_ns


class StepWaits:
    """One kind's steps as ops, Python and waiting; which sampled steps the node figures leave out."""

    def __init__(self, keep_disturbed: bool = False, beside: ThreadWaits | None = None) -> None:
        self.keep_disturbed = keep_disturbed
        self.beside = beside if beside is not None else ThreadWaits()
        """The process's other threads' wait that held its steps up, second by second (read by the collector)."""
        self.plain = Ring(WINDOW, 3)
        """Unsampled steps: wall, own thread's wait (-1 unknown), start (``perf_counter_ns``)."""
        self.sampled = Ring(WINDOW, 7 + PHASES)
        """Sampled steps: wall, wait, Σ ops, disturbed, start, own thread's wait, how many phases' ops it said, each
        phase's ops (:class:`SampledStep` read back by :meth:`steps`)."""
        self.sampled_disturbed = 0
        """Sampled steps after warm-up that waited beyond the threshold, over the whole run."""
        self.known = False
        """Some step carried a wait: the kernel says."""

    def add_plain(self, wall_ns: int, wait_ns: int, phases_ns: tuple[int, ...], start_ns: int = 0) -> None:
        """An unsampled step after warm-up (its other threads' wait is added when the figures are made: the
        collector reads them a second late)."""
        self.known = self.known or wait_ns >= 0
        self.plain.add((wall_ns, wait_ns, start_ns))

    def add_sampled(
        self, wall_ns: int, wait_ns: int, ops_ns: int, phase_ops_ns: Sequence[int], start_ns: int = 0
    ) -> bool:
        """A sampled step after warm-up; True when it waited beyond the threshold (its ops may be left out). Its
        ops go into the node figures now: its other threads' wait is the latest second's rate."""
        self.known = self.known or wait_ns >= 0
        own_ns = wait_ns
        wait_ns = self.beside.step_wait(start_ns, wall_ns, own_ns)
        waited = disturbed(wall_ns, wait_ns)
        self.sampled_disturbed += waited
        self.sampled.add((wall_ns, wait_ns, ops_ns, int(waited), start_ns, own_ns, len(phase_ops_ns), *phase_ops_ns))
        return waited

    def steps(self) -> list[SampledStep]:
        """The sampled steps kept, oldest first; each one's wait as the other threads' seconds now say (a sampled
        step was judged disturbed or not as it came, by the latest second then)."""
        out = []
        step_wait = self.beside.step_wait
        for wall, _wait, ops, waited, start, own, phases, *phase_ops in self.sampled.rows().tolist():
            wait = step_wait(start, wall, own)
            out.append(SampledStep(wall, wait, ops, tuple(phase_ops[: min(phases, PHASES)]), bool(waited)))
        return out

    # -- figures -------------------------------------------------------------------------------

    def leaves_out(self) -> bool:
        """Whether the node figures leave the disturbed sampled steps out: not when asked to keep them, nor when
        fewer than :data:`MIN_QUIET` quiet ones remain in the window."""
        quiet = len(self.sampled) - self._disturbed()
        return not self.keep_disturbed and quiet >= MIN_QUIET

    def _disturbed(self) -> int:
        return int(self.sampled.rows()[:, 3].sum())

    def counted(self, steps: list[SampledStep] | None = None) -> list[SampledStep]:
        """The sampled steps the figures count, of ``steps`` (default: :meth:`steps`)."""
        steps = self.steps() if steps is None else steps
        if self.leaves_out():
            return [s for s in steps if not s.disturbed]
        return steps

    def waiting(self, base_ns: float | None, phase_base_ns: Sequence[float] = ()) -> StepWaiting | None:
        """The split of a step (``base_ns``: the unsampled steps' median; ``phase_base_ns``: each phase's); None
        where nothing was measured. The machine's load is set beside it later (:func:`with_load`)."""
        step_wait = self.beside.step_wait
        waits = [
            step_wait(start, wall, w) / wall for wall, w, start in self.plain.rows().tolist() if wall > 0 and w >= 0
        ]
        every = self.steps()
        counted = self.counted(every)
        if not waits and not counted:
            return None
        wait = _spread(waits)
        ops = _spread([s.ops_ns / base_ns for s in counted]) if base_ns else None
        running = _spread([s.running_ops / base_ns for s in every]) if base_ns else None
        all_ops = _spread([s.ops_ns / base_ns for s in every]) if base_ns else None
        kept = [s for s in counted if s.disturbed]
        in_ops: list[Spread | None] = []
        for i, _phase in enumerate(STEP_PHASES):
            base = phase_base_ns[i] if i < len(phase_base_ns) else 0.0
            # As the fidelity: the ops as timed (the split alone takes each step's wait out of them).
            ratios = [s.phase_ops_ns[i] / base for s in counted if base > 0 and i < len(s.phase_ops_ns)]
            in_ops.append(_spread(ratios))
        return StepWaiting(
            known=self.known,
            wait=wait,
            ops=ops,
            running_ops=running,
            all_ops=all_ops,
            in_ops=tuple(in_ops),
            sampled=len(self.sampled),
            disturbed=self._disturbed(),
            left_out=self._disturbed() if self.leaves_out() else 0,
            kept_wait=statistics.median(s.wait_ns / s.wall_ns for s in kept) if kept else 0.0,
            keep=self.keep_disturbed,
        )


def _spread(values: Sequence[float]) -> Spread | None:
    """Median and p25–p75 of ``values`` (the median itself for one)."""
    if not values:
        return None
    if len(values) == 1:
        return Spread(values[0], values[0], values[0])
    q25, q50, q75 = statistics.quantiles(values, n=4, method="inclusive")
    return Spread(q50, q25, q75)


def with_load(steps: StepSummary | None, program: ProgramState) -> StepSummary | None:
    """``steps`` with the machine's load (other processes' cores, stolen time) beside each kind's split."""
    if steps is None or program.others_cores is None:
        return steps
    kinds = tuple(replace(k, waiting=_loaded(k.waiting, program)) if k.waiting is not None else k for k in steps.kinds)
    return replace(steps, kinds=kinds)


def _loaded(waiting: StepWaiting, program: ProgramState) -> StepWaiting:
    return replace(waiting, others_cores=program.others_cores, cpus=program.cpus, steal_share=program.steal_share)
