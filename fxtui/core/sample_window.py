"""One statistics engine: the latest timing samples of every column, and the figures a snapshot shows.

A *column* is what one row of figures is about: a node of a captured model (``fxtui MODEL``, where
every profiled run times every node), or a node at one output shape in a user's program (``fxtui
run``, where columns appear as the program runs and a sampled step need not run every one: it
leaves a hole). The window keeps the latest ``window`` steps in a ring of int64 nanoseconds, one
row of samples per column, so memory does not grow with the run; count, sum, min and max are
running aggregates over every sample since the last reset. The quantiles (p25, median, p75, p90)
come from the window, one sort per snapshot, as ``torch.utils.benchmark`` keeps its raw samples:
the median resists the occasional run another process disturbed, which a mean does not.

A model's step also records the profiled and the uninstrumented run's wall time
(:meth:`SampleWindow.add_run`, :meth:`SampleWindow.add_eager`), so the figures that compare them
(overhead, fidelity) come with their spread over the steps, and whether other work disturbed it:
:meth:`SampleWindow.stats` leaves the disturbed steps out of the quantiles and the run figures
while :data:`MIN_QUIET` quiet ones remain, and nothing is lost when it does not.

Numpy only: ``fxtui run``'s collector aggregates without torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fxtui.core.nodes import Spread

#: Samples the window may hold in all (steps × columns). The quantiles sort the whole window for every
#: snapshot, so their cost grows with it: a 10,000-node graph keeps 100 steps, which a graph that large
#: still fills in half a minute (it runs a few times a second).
WINDOW_SAMPLES = 1_000_000
#: Latest samples kept per column for a sparkline.
RECENT = 32
#: Quiet steps the window needs before the statistics may leave the disturbed ones out.
MIN_QUIET = 5
#: p25, median, p75 and p90.
QUANTILES = np.array([0.25, 0.5, 0.75, 0.9])
_HOLE = -1
_NO_MIN = np.iinfo(np.int64).max


def window_for(columns: int, requested: int = 256) -> int:
    """Steps to keep for ``columns`` columns: ``requested``, capped by the sample budget (at least 32)."""
    return max(32, min(requested, WINDOW_SAMPLES // max(columns, 1)))


@dataclass(frozen=True)
class WindowStats:
    """Every column's figures now (seconds, by column index; NaN where a column has no sample), and the runs'."""

    count: np.ndarray
    """Samples of each column since the last reset (int64)."""
    mean: np.ndarray
    minimum: np.ndarray
    maximum: np.ndarray
    q25: np.ndarray
    median: np.ndarray
    q75: np.ndarray
    p90: np.ndarray
    recent: np.ndarray
    """(columns, up to :data:`RECENT`) seconds of the latest steps, oldest first; a hole shows as its median."""
    steps: int = 0
    """Steps recorded since the last reset."""
    run: Spread | None = None
    """Profiled runs' wall time (seconds)."""
    eager: Spread | None = None
    """Uninstrumented runs' wall time (seconds)."""
    run_count: int = 0
    eager_count: int = 0
    overhead: Spread | None = None
    """Per step: profiled run ÷ the uninstrumented run beside it."""
    fidelity: Spread | None = None
    """Per step: the sum of the samples of its profiled run ÷ its uninstrumented run."""
    used: int = 0
    """Steps of the window the quantiles and the run figures come from."""
    disturbed: int = 0
    """Disturbed steps in the window."""
    left_out: int = 0
    """Disturbed steps of the window left out of the figures."""

    @property
    def run_median(self) -> float | None:
        return self.run.median if self.run else None

    @property
    def eager_median(self) -> float | None:
        return self.eager.median if self.eager else None


def spread_of(values: np.ndarray) -> Spread | None:
    """The median and quartiles of ``values`` as ``torch.quantile`` interpolates them; None when there are none."""
    if len(values) == 0:
        return None
    ordered = np.sort(np.asarray(values, dtype=np.float64))
    position = np.array([0.25, 0.5, 0.75]) * (len(ordered) - 1)
    below = ordered[np.floor(position).astype(np.int64)]
    above = ordered[np.ceil(position).astype(np.int64)]
    weight = position - np.floor(position)
    # torch.lerp's two forms, each exact at its own end: the same figures to the last bit.
    q25, median, q75 = np.where(weight < 0.5, below + weight * (above - below), above - (above - below) * (1 - weight))
    return Spread(float(median), float(q25), float(q75))


class _Ring:
    """The latest values of one figure per step (a run's wall time), as float64."""

    def __init__(self, slots: int) -> None:
        self.values = np.zeros(slots)
        self.count = 0
        self._written = 0

    def add(self, value: float) -> None:
        self.values[self._written % len(self.values)] = value
        self._written += 1
        self.count += 1

    def kept(self) -> np.ndarray:
        """The values kept, in slot order: the same slot as the step's samples while every step adds one."""
        return self.values[: min(self._written, len(self.values))]

    def resize(self, slots: int) -> None:
        old = len(self.values)
        kept = min(self._written, old, slots)
        order = [(self._written - kept + k) % old for k in range(kept)]
        values = np.zeros(slots)
        values[:kept] = self.values[order]
        self.values, self._written = values, kept


class SampleWindow:
    """The latest steps' samples of every column (nanoseconds in, seconds out), with bounded memory.

    Columns are added as they appear (:meth:`add_columns`); a step adds a sample to every column
    (:meth:`add_run`, a model's profiled run) or to some (:meth:`add`, a program's sampled step).
    """

    def __init__(self, columns: int = 0, window: int = 256) -> None:
        self.requested = window
        self.columns = 0
        self._buf = np.full((0, window_for(columns, window)), _HOLE, dtype=np.int64)
        self._disturbed = np.zeros(self._buf.shape[1], dtype=bool)
        self._count = np.zeros(0, dtype=np.int64)
        self._sum = np.zeros(0, dtype=np.float64)
        self._min = np.zeros(0, dtype=np.int64)
        self._max = np.zeros(0, dtype=np.int64)
        self._runs = _Ring(self._buf.shape[1])
        self._eager = _Ring(self._buf.shape[1])
        self.steps = 0
        self.filled = 0
        self._written = 0
        self.add_columns(columns)

    @property
    def window(self) -> int:
        """Steps kept: as requested, fewer for very many columns (at least 32)."""
        return window_for(self.columns, self.requested)

    @property
    def count(self) -> int:
        """Steps recorded since the last reset."""
        return self.steps

    def add_columns(self, count: int) -> None:
        """Make room for ``count`` more columns (holes in every kept step)."""
        if count <= 0:
            return
        self.columns += count
        self._buf = np.concatenate([self._buf, np.full((count, self._buf.shape[1]), _HOLE, dtype=np.int64)])
        self._count = np.concatenate([self._count, np.zeros(count, dtype=np.int64)])
        self._sum = np.concatenate([self._sum, np.zeros(count)])
        self._min = np.concatenate([self._min, np.full(count, _NO_MIN, dtype=np.int64)])
        self._max = np.concatenate([self._max, np.zeros(count, dtype=np.int64)])

    def reset(self) -> None:
        """Forget every sample; the columns stay."""
        self._buf[:] = _HOLE
        self._disturbed[:] = False
        self._count[:] = 0
        self._sum[:] = 0.0
        self._min[:] = _NO_MIN
        self._max[:] = 0
        self._runs = _Ring(self._buf.shape[1])
        self._eager = _Ring(self._buf.shape[1])
        self.steps = self.filled = self._written = 0

    # -- adding ---------------------------------------------------------------------------

    def add_run(self, ns: Sequence[int] | np.ndarray, run_ns: int | None = None, disturbed: bool = False) -> None:
        """One profiled run: a duration for every column, the run's wall time, and whether other work disturbed it."""
        row = np.maximum(np.asarray(ns, dtype=np.int64), 0)
        slot = self._next_slot(disturbed)
        self._buf[:, slot] = row
        self._count += 1
        self._sum += row
        np.minimum(self._min, row, out=self._min)
        np.maximum(self._max, row, out=self._max)
        if run_ns is not None:
            self._runs.add(run_ns)

    def add(self, columns: np.ndarray, ns: np.ndarray, disturbed: bool = False) -> None:
        """One sampled step: ``ns[i]`` for column ``columns[i]`` (the others are holes); ``disturbed``: its thread
        waited for a CPU beyond the threshold (a program's step, :mod:`fxtui.jobs.step_wait`)."""
        row = np.full(self.columns, _HOLE, dtype=np.int64)
        values = np.maximum(ns.astype(np.int64), 0)
        row[columns] = values
        slot = self._next_slot(disturbed)  # before reading the ring: making room may replace it
        self._buf[:, slot] = row
        self._count[columns] += 1
        self._sum[columns] += values
        np.minimum.at(self._min, columns, values)
        np.maximum.at(self._max, columns, values)

    def add_eager(self, ns: int) -> None:
        """Record the wall time of one uninstrumented run of the same model."""
        self._eager.add(ns)

    def _next_slot(self, disturbed: bool) -> int:
        """The ring's slot for a new step (the ring first fitted to the window the columns allow now)."""
        if self._buf.shape[1] != self.window:
            self._resize(self.window)
        slot = self._written % self._buf.shape[1]
        self._disturbed[slot] = disturbed
        self._written += 1
        self.steps += 1
        self.filled = min(self.filled + 1, self._buf.shape[1])
        return slot

    def _resize(self, slots: int) -> None:
        """Keep the newest steps that fit a new window length (it shrinks as columns grow)."""
        order = self._oldest_first(min(self.filled, slots))
        buf = np.full((self.columns, slots), _HOLE, dtype=np.int64)
        buf[:, : len(order)] = self._buf[:, order]
        disturbed = np.zeros(slots, dtype=bool)
        disturbed[: len(order)] = self._disturbed[order]
        self._buf, self._disturbed = buf, disturbed
        self._runs.resize(slots)
        self._eager.resize(slots)
        self.filled = self._written = len(order)

    def _oldest_first(self, newest: int) -> list[int]:
        """The slots of the ``newest`` latest steps, oldest first."""
        slots = self._buf.shape[1]
        return [(self._written - newest + k) % slots for k in range(newest)]

    # -- figures --------------------------------------------------------------------------

    def stats(self, leave_out_disturbed: bool = True) -> WindowStats:
        """Every column's figures over the window and the running aggregates, and the run figures.

        With ``leave_out_disturbed``, the window's disturbed steps are left out of the quantiles and
        the run figures, as long as at least :data:`MIN_QUIET` quiet steps remain and every step holds
        a profiled and an uninstrumented run; count, mean, min and max stay running aggregates.
        """
        filled = self.filled
        samples = self._buf[:, :filled]
        runs, eager = self._runs.kept(), self._eager.kept()
        paired = self.steps == self._runs.count == self._eager.count  # every slot holds one whole step
        alone = not self._runs.count and not self._eager.count  # a program's sampled steps: no runs to pair
        quiet = ~self._disturbed[:filled]
        quiet_steps = int(quiet.sum())
        left_out = 0
        if leave_out_disturbed and (paired or alone) and MIN_QUIET <= quiet_steps < filled:
            left_out = filled - quiet_steps
            samples = samples[:, quiet]
            if paired:
                runs, eager = runs[quiet], eager[quiet]
        have = samples >= 0
        dense = bool(have.all())  # every column ran every step kept (a model's nodes)
        q = _quantiles(samples, None if dense else have)
        recent = self._buf[:, self._oldest_first(min(filled, RECENT))] / 1e9
        recent = np.nan_to_num(np.where(recent < 0, q[1][:, None], recent))
        count = self._count
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(count > 0, self._sum / np.maximum(count, 1) / 1e9, np.nan)
        ratios = paired and bool((eager > 0).all())
        return WindowStats(
            count=count.copy(),
            mean=mean,
            minimum=np.where(count > 0, self._min / 1e9, np.nan),
            maximum=np.where(count > 0, self._max / 1e9, np.nan),
            q25=q[0],
            median=q[1],
            q75=q[2],
            p90=q[3],
            recent=recent,
            steps=self.steps,
            run=spread_of(runs / 1e9),
            eager=spread_of(eager / 1e9),
            run_count=self._runs.count,
            eager_count=self._eager.count,
            overhead=spread_of(runs / eager) if ratios else None,
            fidelity=spread_of((samples if dense else np.where(have, samples, 0)).sum(axis=0) / eager)
            if ratios
            else None,
            used=samples.shape[1],
            disturbed=filled - quiet_steps,
            left_out=left_out,
        )


def _quantiles(samples: np.ndarray, have: np.ndarray | None) -> np.ndarray:
    """:data:`QUANTILES` of each row's samples in seconds, (4, rows); NaN for a row without any.

    ``have`` marks the samples that are there; None when every one is (no holes).

    One sort of the window, then the samples either side of each quantile, interpolated linearly
    (as ``torch.quantile``): sorting integers is quicker than sorting floats.
    """
    rows, steps = samples.shape
    if steps == 0:
        return np.full((len(QUANTILES), rows), np.nan)
    if have is None:  # one position per quantile, the same in every row
        ordered = np.sort(samples, axis=1)
        position = QUANTILES * (steps - 1)
        below, above = np.floor(position).astype(np.int64), np.ceil(position).astype(np.int64)
        low, high = ordered[:, below].astype(np.float64), ordered[:, above].astype(np.float64)
        return ((low + (high - low) * (position - below)) / 1e9).T
    n = have.sum(axis=1)
    ordered = np.sort(np.where(have, samples, _NO_MIN), axis=1)
    position = QUANTILES[None, :] * np.maximum(n - 1, 0)[:, None]
    below, above = np.floor(position).astype(np.int64), np.ceil(position).astype(np.int64)
    low = np.take_along_axis(ordered, below, axis=1).astype(np.float64)
    high = np.take_along_axis(ordered, above, axis=1).astype(np.float64)
    q = ((low + (high - low) * (position - below)) / 1e9).T
    q[:, n == 0] = np.nan
    return q
