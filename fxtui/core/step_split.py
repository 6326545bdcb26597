"""The split of one typical step of a program into ops, waiting for a CPU and the program's own Python: three
shares that add up to the whole step, made once and read by the header, the app's ``T`` panel and the JSON.

Each part is measured on different steps: ops on the sampled steps (each one's Σ op times ÷ the unsampled median,
the headline *fidelity*), waiting on the unsampled ones (each one's wait ÷ its wall time). Medians taken one by one
need not add up: under load a split read ``ops 23%, waiting 89%, Python 0%``, 112% of a step. Here the step is the
unsampled median, the time the ``step`` line prints, and its parts are taken in order:

1. **ops** is each sampled step's ops less the share of it its threads waited (the fidelity where none waited),
   the median over every sampled step, at most the whole step;
2. **waiting for a CPU** is the median of the per-step wait shares, at most what the ops leave of the step;
3. **the program's Python** is what remains.

Where the measured wait is more than the ops leave, the two overlap: the ops of a sampled step took longer than
an unsampled step had outside its wait (an op timed while a partner thread waited, the profiler's own time inside
ops, or threads that took turns on one core counted as all waiting). The split then gives waiting what the ops
leave, the program's Python none, and keeps the measured wait beside it (:attr:`StepSplit.measured_waiting`), so
the header can say so. Why ops come first: they are measured op by op, and a program's Python is only ever what
no op and no wait accounts for.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StepSplit:
    """A typical step as shares of its wall time; :attr:`ops` + :attr:`waiting` + :attr:`python` = 1."""

    ops: float
    waiting: float
    python: float
    measured_waiting: float
    """The median per-step wait share as measured, before the ops' share was taken out of the step."""

    @property
    def overlap(self) -> float:
        """How much of the measured wait the ops already hold (0 when the three add up as measured)."""
        return max(0.0, self.measured_waiting - self.waiting)


def split_step(ops: float, waiting: float) -> StepSplit:
    """The split of a step whose ops are ``ops`` of it and whose measured wait is ``waiting`` of it (shares)."""
    ops = min(1.0, max(0.0, ops))
    measured = min(1.0, max(0.0, waiting))
    waiting = min(measured, 1.0 - ops)
    return StepSplit(ops=ops, waiting=waiting, python=max(0.0, 1.0 - ops - waiting), measured_waiting=measured)


def whole_percents(split: StepSplit) -> tuple[int, int, int]:
    """The split's ops, waiting and Python in whole percents that add up to 100 (largest remainders round up), so
    the printed line adds up as the shares do."""
    exact = [100 * split.ops, 100 * split.waiting, 100 * split.python]
    floors = [int(x) for x in exact]
    for i in sorted(range(3), key=lambda i: floors[i] - exact[i])[: 100 - sum(floors)]:
        floors[i] += 1
    return floors[0], floors[1], floors[2]
