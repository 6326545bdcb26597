"""Bounded timing samples and the statistics computed from them.

Every run adds one duration per node. The latest ``window`` runs are kept in a ring
buffer (a ``window × nodes`` tensor, so memory does not grow with the number of
reruns); count, sum, min and max are kept as running aggregates over every sample
since the last reset. Medians, percentiles and the IQR come from the window, as
torch.utils.benchmark does: the median resists the occasional run disturbed by
another process, which a mean does not.

A step (:meth:`SampleWindow.add` then :meth:`SampleWindow.add_eager`) also records the
profiled and the uninstrumented run's wall time, so the figures that compare them
(overhead, fidelity) come with their spread over the steps, not just a point, and
whether other work disturbed it: the statistics can leave disturbed steps out
(:meth:`SampleWindow.summary`), and nothing is lost when they do not.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from fxtui.core.column_table import float_column
from fxtui.core.nodes import Spread

#: Samples the window may hold in all (runs × nodes). The quantiles are recomputed over the
#: whole window for every snapshot, and their cost grows with it: on this project's 2-core
#: machine, sorting a 10,000-node graph's window took 19 ms with 100 runs kept (as int64
#: nanoseconds; 25 ms as float64, 32 ms through ``torch.quantile``). A graph that large runs a
#: few times a second, so 100 runs are still half a minute of history.
_WINDOW_SAMPLES = 1_000_000
_QUANTILES = torch.tensor([0.25, 0.5, 0.75, 0.9], dtype=torch.float64)
_QUARTILES = torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64)
_NO_MIN = torch.iinfo(torch.int64).max
#: Samples kept per node for a sparkline.
RECENT = 32
#: Quiet steps the window needs before the statistics may leave the disturbed ones out.
MIN_QUIET = 5


def window_for(nodes: int, requested: int = 256) -> int:
    """The window length for a graph of ``nodes`` nodes: ``requested``, capped by the sample budget (at least 32)."""
    cap = _WINDOW_SAMPLES // max(nodes, 1)
    return max(32, min(requested, cap))


def quantiles(samples: torch.Tensor, q: torch.Tensor = _QUANTILES) -> torch.Tensor:
    """The ``q`` quantiles of each column of ``samples`` (linear interpolation, as ``torch.quantile``), as float64.

    One sort of the column, then the rows either side of each quantile: sorting integers is
    quicker than sorting floats, and ``torch.quantile`` accepts floats only.
    """
    ordered = samples.sort(dim=0).values if samples.shape[0] > 1 else samples
    position = q * (ordered.shape[0] - 1)
    below = position.floor().long()
    above = position.ceil().long()
    low, high = ordered[below].double(), ordered[above].double()
    return low + (high - low) * (position - below).unsqueeze(1)


def floats(values: torch.Tensor) -> array[float]:
    """A tensor's values, row by row, as a float64 column (:func:`~fxtui.core.column_table.float_column`)."""
    return float_column(values.detach().numpy())


def spread_of(values: torch.Tensor) -> Spread | None:
    """The quartiles of a 1-D tensor; None when it is empty."""
    if values.numel() == 0:
        return None
    q25, median, q75 = torch.quantile(values.double(), _QUARTILES).tolist()
    return Spread(median, q25, q75)


@dataclass(frozen=True)
class Summary:
    """Statistics over all nodes at one moment, in seconds, one entry per node (graph order)."""

    count: int
    median: array[float]
    mean: array[float]
    p90: array[float]
    q25: array[float]
    q75: array[float]
    min: array[float]
    max: array[float]
    recent: array[float]
    """Per node (graph order), its samples of the latest :attr:`recent_runs` runs, oldest first, one after another."""
    recent_runs: int
    run: Spread | None
    """Profiled runs' wall time (seconds)."""
    eager: Spread | None
    """Uninstrumented runs' wall time (seconds)."""
    run_count: int
    eager_count: int
    overhead: Spread | None = None
    """Per step: profiled run ÷ the uninstrumented run beside it."""
    fidelity: Spread | None = None
    """Per step: the sum of the node times of its profiled run ÷ its uninstrumented run."""
    used: int = 0
    """Steps of the window the quantiles (and every figure above but the running ones) come from."""
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


class SampleWindow:
    """Per-node timing samples (nanoseconds in, seconds out) with bounded memory."""

    def __init__(self, nodes: int, window: int = 256) -> None:
        self.nodes = nodes
        self.window = window_for(nodes, window)
        # Nanoseconds as integers: exact, and the quantiles' sort is quicker on them.
        self._buf = torch.zeros(self.window, nodes, dtype=torch.int64)
        self._runs = torch.zeros(self.window, dtype=torch.float64)
        self._eager = torch.zeros(self.window, dtype=torch.float64)
        self._disturbed = torch.zeros(self.window, dtype=torch.bool)
        self.reset()

    def reset(self) -> None:
        """Forget every sample."""
        self.count = 0
        self._sum = torch.zeros(self.nodes, dtype=torch.float64)
        self._min = torch.full((self.nodes,), _NO_MIN, dtype=torch.int64)
        self._max = torch.zeros(self.nodes, dtype=torch.int64)
        self.run_count = 0
        self.eager_count = 0

    def add(self, node_ns: Sequence[int], run_ns: int | None = None, disturbed: bool = False) -> None:
        """Record one profiled run: a duration per node, the run's wall time, and whether other work disturbed it."""
        row = torch.tensor(node_ns, dtype=torch.int64).clamp_(min=0)
        self._buf[self.count % self.window] = row
        self._disturbed[self.count % self.window] = disturbed
        self.count += 1
        self._sum += row
        torch.minimum(self._min, row, out=self._min)
        torch.maximum(self._max, row, out=self._max)
        if run_ns is not None:
            self._runs[self.run_count % self.window] = run_ns
            self.run_count += 1

    def add_eager(self, eager_ns: int) -> None:
        """Record the wall time of one uninstrumented run of the same graph."""
        self._eager[self.eager_count % self.window] = eager_ns
        self.eager_count += 1

    def summary(self, leave_out_disturbed: bool = True) -> Summary | None:
        """Statistics over the window and the running aggregates; None before the first sample.

        With ``leave_out_disturbed``, the window's disturbed steps are left out of the quantiles
        and the run figures, as long as at least :data:`MIN_QUIET` quiet steps remain; count,
        mean, min and max stay running aggregates over every sample.
        """
        if self.count == 0:
            return None
        filled = min(self.count, self.window)
        samples = self._buf[:filled]
        runs = self._runs[: min(self.run_count, self.window)]
        eager = self._eager[: min(self.eager_count, self.window)]
        paired = self.count == self.run_count == self.eager_count  # every slot holds one whole step
        quiet = ~self._disturbed[:filled]
        left_out = 0
        if leave_out_disturbed and paired and MIN_QUIET <= int(quiet.sum()) < filled:
            left_out = filled - int(quiet.sum())
            samples, runs, eager = samples[quiet], runs[quiet], eager[quiet]
        used = samples.shape[0]
        q = quantiles(samples) / 1e9
        # The ring's order: oldest first, from the slot after the newest.
        newest = (self.count - 1) % self.window
        order = [(newest - k) % self.window for k in range(min(filled, RECENT) - 1, -1, -1)]
        # Node by node: each node's recent samples together, as the snapshot's columns keep them.
        recent = floats(self._buf[order].t().double() / 1e9)
        ratios = paired and bool((eager > 0).all())
        return Summary(
            count=self.count,
            median=floats(q[1]),
            mean=floats(self._sum / self.count / 1e9),
            p90=floats(q[3]),
            q25=floats(q[0]),
            q75=floats(q[2]),
            # In float64: an int64 tensor over a float divides in float32, which rounds past 2**24 ns (16.8 ms).
            min=floats(self._min.double() / 1e9),
            max=floats(self._max.double() / 1e9),
            recent=recent,
            recent_runs=len(order),
            run=spread_of(runs / 1e9),
            eager=spread_of(eager / 1e9),
            run_count=self.run_count,
            eager_count=self.eager_count,
            overhead=spread_of(runs / eager) if ratios else None,
            fidelity=spread_of(samples.sum(dim=1).double() / eager) if ratios else None,
            used=used,
            disturbed=filled - int(quiet.sum()),
            left_out=left_out,
        )
