"""A step of a program split three ways: its ops, the program's own Python, and waiting for a CPU.

Torch-free data made by the collector (:mod:`fxtui.jobs.step_wait`) and read by the header, the app and the
JSON. Every figure is the median of per-step values, and its range is their p25–p75, so a figure always lies
inside the range printed beside it. The split of a typical step (:attr:`StepWaiting.split`,
:mod:`fxtui.core.step_split`) takes the ops and the wait from those medians so that its three shares add up.
"""

from __future__ import annotations

from dataclasses import dataclass

from fxtui.core.nodes import Spread
from fxtui.core.step_split import StepSplit, split_step, whole_percents


@dataclass(frozen=True, slots=True)
class StepWaiting:
    """One kind of step as ops, Python and waiting for a CPU; the sampled steps that waited."""

    known: bool = False
    """The kernel reported the steps' run-queue delay (Linux's schedstat)."""
    wait: Spread | None = None
    """Each unsampled step's time waiting for a CPU ÷ its wall time: its thread's run-queue delay, and its other
    threads' while it was blocked on them (:mod:`fxtui.jobs.thread_waits`)."""
    ops: Spread | None = None
    """Each counted sampled step's Σ op times ÷ the unsampled steps' median: the fidelity."""
    running_ops: Spread | None = None
    """Each sampled step's ops less the share of it its threads spent waiting, ÷ the unsampled median: ops as the
    split counts them (every sampled step's, those the node figures leave out too)."""
    all_ops: Spread | None = None
    """Each sampled step's Σ op times ÷ the unsampled median, every sampled step's, no wait taken out: kept in the
    JSON to compare the split taken step by step with one taken as their median less the steps' median wait."""
    in_ops: tuple[Spread | None, ...] = ()
    """Per phase (:data:`~fxtui.core.program_run.STEP_PHASES`): each counted sampled step's ops in it ÷ the phase's
    unsampled median."""
    steal_share: float = 0.0
    """Time the hypervisor gave the CPUs to another machine, over the run's wall time."""
    others_cores: float | None = None
    """Other processes' mean CPU use while the program ran, in cores (None: not measured)."""
    cpus: int = 0
    sampled: int = 0
    """Sampled steps in the window."""
    disturbed: int = 0
    """Those that waited for a CPU more than the threshold (10% of their wall time)."""
    left_out: int = 0
    """Those the node figures leave out."""
    kept_wait: float = 0.0
    """The median wait share of the disturbed steps the figures keep (0 when none is kept)."""
    keep: bool = False
    """Disturbed steps were asked to be kept (``--keep-disturbed``)."""

    @property
    def measured_waiting_share(self) -> float | None:
        """The median share of a step its threads waited for a CPU, and stolen time, as measured."""
        if not self.known or self.wait is None:
            return None
        return min(1.0, self.wait.median + self.steal_share)

    @property
    def ops_share(self) -> float | None:
        """The share of a step in ops, as the split counts it: each sampled step's ops less the share of it its
        threads spent waiting (else the wait counts twice: an op's time holds its thread's wait), or the fidelity
        where that was not measured."""
        ops = self.running_ops if self.running_ops is not None else self.ops
        return ops.median if ops is not None else None

    @property
    def ops_less_wait(self) -> bool:
        """The split's ops are not the fidelity: its sampled steps waited while their ops ran (or the node figures
        leave some of them out)."""
        if self.running_ops is None or self.ops is None:
            return False
        return abs(self.ops.median - self.running_ops.median) > 1e-9

    @property
    def split(self) -> StepSplit | None:
        """A typical step as ops, waiting and the program's Python, adding up to 1 (None: a part is unmeasured)."""
        ops, waiting = self.ops_share, self.measured_waiting_share
        if ops is None or waiting is None:
            return None
        return split_step(ops, waiting)

    @property
    def waiting_share(self) -> float | None:
        """The share of a step spent waiting for a CPU, as the split gives it (at most what the ops leave); the
        measured median where the ops are not known yet."""
        split = self.split
        return split.waiting if split is not None else self.measured_waiting_share

    @property
    def python_share(self) -> float | None:
        """What remains of a step once its ops and its waiting are counted: the program's own Python."""
        split = self.split
        return split.python if split is not None else None

    @property
    def kept_disturbed(self) -> int:
        """Disturbed sampled steps inside the node figures."""
        return self.disturbed - self.left_out

    def waiting_text(self) -> str:
        """``waiting for a CPU 61% (other processes used 1.3 of 2 cores)``; ``""`` when none was measured."""
        share = self.waiting_share
        if share is None:
            return ""
        split = self.split
        percent = whole_percents(split)[1] if split is not None else round(100 * share)
        text = f"waiting for a CPU {percent}%"
        said = []
        if split is not None and split.overlap >= 0.005:
            points = round(100 * split.overlap)
            unit = "point falls" if points == 1 else "points fall"
            said.append(f"of {100 * split.measured_waiting:.0f}% measured, {points} {unit} in the ops' time")
        if self.others_cores is not None and self.cpus:
            said.append(f"other processes used {self.others_cores:.1f} of {self.cpus} cores")
        if self.steal_share >= 0.01:
            said.append(f"the hypervisor took {100 * self.steal_share:.0f}%")
        return text + (f" ({'; '.join(said)})" if said else "")

    def badge(self) -> str:
        """The status line's warning: ``⚠ 12/40 sampled steps waited for a CPU, left out (T)``; ``""`` when none
        did."""
        if not self.disturbed:
            return ""
        how = "left out" if self.left_out else "in figures"
        return f"⚠ {self.disturbed}/{self.sampled} sampled steps waited for a CPU, {how} (T)"

    def figures_text(self) -> str:
        """One sentence on what the node figures are under this load; ``""`` on a quiet machine."""
        if not self.disturbed:
            return ""
        waited = f"{self.disturbed} of {self.sampled} sampled steps waited for a CPU more than 10% of their time"
        if self.left_out:
            return waited + "; the node figures leave them out (--keep-disturbed keeps them)"
        why = "(--keep-disturbed)" if self.keep else "(fewer than 5 quiet ones to do without them)"
        return (
            waited + f"; the node figures keep them {why}: they are the program's times under this load, "
            f"{100 * self.kept_wait:.0f}% of them waiting (median)"
        )
