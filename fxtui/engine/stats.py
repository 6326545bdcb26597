"""Bounded timing samples and the statistics computed from them.

Every run adds one duration per node. The latest ``window`` runs are kept in a ring
buffer (a ``window × nodes`` tensor, so memory does not grow with the number of
reruns); count, sum, min and max are kept as running aggregates over every sample
since the last reset. Medians, percentiles and the IQR come from the window, as
torch.utils.benchmark does: the median resists the occasional run disturbed by
another process, which a mean does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

#: Keep the ring buffer under this many bytes for very large graphs.
_WINDOW_BYTES = 16 * 1024 * 1024
_QUANTILES = torch.tensor([0.25, 0.5, 0.75, 0.9], dtype=torch.float64)
_QUARTILES = _QUANTILES[:3]
#: Samples kept per node for a sparkline.
RECENT = 32


def window_for(nodes: int, requested: int = 256) -> int:
    """The window length for a graph of ``nodes`` nodes: ``requested``, capped by memory (at least 32)."""
    cap = _WINDOW_BYTES // (8 * max(nodes, 1))
    return max(32, min(requested, cap))


@dataclass(frozen=True)
class Summary:
    """Statistics over all nodes at one moment, in seconds, one entry per node (graph order)."""

    count: int
    median: list[float]
    mean: list[float]
    p90: list[float]
    q25: list[float]
    q75: list[float]
    min: list[float]
    max: list[float]
    recent: list[tuple[float, ...]]
    run_median: float | None
    eager_median: float | None
    run_count: int
    eager_count: int
    eager_q25: float | None = None
    """First quartile of the uninstrumented runs (with ``eager_q75``: their spread)."""
    eager_q75: float | None = None


class SampleWindow:
    """Per-node timing samples (nanoseconds in, seconds out) with bounded memory."""

    def __init__(self, nodes: int, window: int = 256) -> None:
        self.nodes = nodes
        self.window = window_for(nodes, window)
        self._buf = torch.zeros(self.window, nodes, dtype=torch.float64)
        self._runs = torch.zeros(self.window, dtype=torch.float64)
        self._eager = torch.zeros(self.window, dtype=torch.float64)
        self.reset()

    def reset(self) -> None:
        """Forget every sample."""
        self.count = 0
        self._sum = torch.zeros(self.nodes, dtype=torch.float64)
        self._min = torch.full((self.nodes,), float("inf"), dtype=torch.float64)
        self._max = torch.zeros(self.nodes, dtype=torch.float64)
        self.run_count = 0
        self.eager_count = 0

    def add(self, node_ns: Sequence[int], run_ns: int | None = None) -> None:
        """Record one profiled run: a duration per node, and the run's wall time."""
        row = torch.tensor(node_ns, dtype=torch.float64).clamp_(min=0)
        self._buf[self.count % self.window] = row
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

    def summary(self) -> Summary | None:
        """Statistics over the window and the running aggregates; None before the first sample."""
        if self.count == 0:
            return None
        filled = min(self.count, self.window)
        samples = self._buf[:filled]
        q = torch.quantile(samples, _QUANTILES, dim=0) / 1e9 if filled > 1 else samples.repeat(4, 1) / 1e9
        # The ring's order: oldest first, from the slot after the newest.
        newest = (self.count - 1) % self.window
        order = [(newest - k) % self.window for k in range(min(filled, RECENT) - 1, -1, -1)]
        recent = (self._buf[order] / 1e9).T.tolist()
        eager = _quartiles(self._eager, self.eager_count, self.window)
        return Summary(
            count=self.count,
            median=q[1].tolist(),
            mean=(self._sum / self.count / 1e9).tolist(),
            p90=q[3].tolist(),
            q25=q[0].tolist(),
            q75=q[2].tolist(),
            min=(self._min / 1e9).tolist(),
            max=(self._max / 1e9).tolist(),
            recent=[tuple(r) for r in recent],
            run_median=_median(self._runs, self.run_count, self.window),
            eager_median=eager[1] if eager else None,
            run_count=self.run_count,
            eager_count=self.eager_count,
            eager_q25=eager[0] if eager else None,
            eager_q75=eager[2] if eager else None,
        )


def _median(ring: torch.Tensor, count: int, window: int) -> float | None:
    if count == 0:
        return None
    return float(torch.quantile(ring[: min(count, window)], 0.5)) / 1e9


def _quartiles(ring: torch.Tensor, count: int, window: int) -> tuple[float, float, float] | None:
    """p25, median and p75 of a ring's samples, in seconds."""
    if count == 0:
        return None
    q = (torch.quantile(ring[: min(count, window)], _QUARTILES) / 1e9).tolist()
    return q[0], q[1], q[2]
