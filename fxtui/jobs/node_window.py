"""Per-node timing samples of a program's sampled steps, where nodes appear as the program runs.

Unlike a captured model's graph (:class:`~fxtui.measure.stats.SampleWindow`), a program's set
of nodes grows (a code path taken later, the last smaller batch) and a sampled step need not
run every node. Each *column* here is one node at one output shape; a step that did not run
it leaves a hole. The window keeps the latest ``window`` sampled steps (memory bounded:
statistics, not samples, grow with the run), and the quantiles of each column are taken over
the values it has, one sort of the whole window per snapshot. Numpy only: the collector
aggregates without torch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Samples the window may hold in all (steps × columns), as the model window's budget.
WINDOW_SAMPLES = 1_000_000
#: Recent samples kept per column for a sparkline.
RECENT = 32
_QUANTILES = np.array([0.25, 0.5, 0.75, 0.9])


@dataclass(frozen=True)
class ColumnStats:
    """Statistics of every column (seconds), by column index; NaN where a column has no sample."""

    count: np.ndarray
    mean: np.ndarray
    minimum: np.ndarray
    maximum: np.ndarray
    q25: np.ndarray
    median: np.ndarray
    q75: np.ndarray
    p90: np.ndarray
    recent: np.ndarray
    """(columns, RECENT) seconds, oldest first; a column's hole shows as its median."""


class NodeWindow:
    """The latest sampled steps' durations, one column per (node, shape); columns are added as they appear."""

    def __init__(self, window: int = 256) -> None:
        self.requested = window
        self.columns = 0
        self.filled = 0
        self._rows = 0
        self._buf = np.full((0, 0), -1, dtype=np.int64)
        self._count = np.zeros(0, dtype=np.int64)
        self._sum = np.zeros(0, dtype=np.float64)
        self._min = np.zeros(0, dtype=np.int64)
        self._max = np.zeros(0, dtype=np.int64)
        self.steps = 0

    @property
    def window(self) -> int:
        """Steps kept: as requested, fewer for very many columns (at least 32)."""
        return max(32, min(self.requested, WINDOW_SAMPLES // max(self.columns, 1)))

    def add_columns(self, count: int) -> None:
        """Make room for ``count`` more columns (holes in every kept step)."""
        if count <= 0:
            return
        self.columns += count
        grow = np.full((self._buf.shape[0], count), -1, dtype=np.int64)
        self._buf = np.concatenate([self._buf, grow], axis=1)
        self._count = np.concatenate([self._count, np.zeros(count, dtype=np.int64)])
        self._sum = np.concatenate([self._sum, np.zeros(count)])
        self._min = np.concatenate([self._min, np.full(count, np.iinfo(np.int64).max, dtype=np.int64)])
        self._max = np.concatenate([self._max, np.zeros(count, dtype=np.int64)])

    def add(self, columns: np.ndarray, ns: np.ndarray) -> None:
        """One sampled step: ``ns[i]`` for column ``columns[i]`` (the others are holes)."""
        window = self.window
        if self._buf.shape[0] != window:
            self._resize(window)
        row = np.full(self.columns, -1, dtype=np.int64)
        values = np.maximum(ns.astype(np.int64), 0)
        row[columns] = values
        self._buf[self.steps % window] = row
        self.steps += 1
        self.filled = min(self.steps, window)
        self._count[columns] += 1
        self._sum[columns] += values
        np.minimum.at(self._min, columns, values)
        np.maximum.at(self._max, columns, values)

    def _resize(self, window: int) -> None:
        """Keep the newest rows that fit a new window length (it shrinks as columns grow)."""
        if self.filled:
            newest = (self.steps - 1) % self._buf.shape[0]
            order = [(newest - k) % self._buf.shape[0] for k in range(min(self.filled, window) - 1, -1, -1)]
            kept = self._buf[order]
        else:
            kept = np.full((0, self.columns), -1, dtype=np.int64)
        self._buf = np.full((window, self.columns), -1, dtype=np.int64)
        self._buf[: len(kept)] = kept
        self.steps = len(kept)
        self.filled = len(kept)

    def stats(self) -> ColumnStats:
        """Every column's statistics now."""
        filled, cols = self.filled, self.columns
        window = self._buf.shape[0] or 1
        if filled:
            newest = (self.steps - 1) % window
            order = [(newest - k) % window for k in range(filled - 1, -1, -1)]
            rows = self._buf[order]
        else:
            rows = np.full((0, cols), -1, dtype=np.int64)
        have = rows >= 0
        n = have.sum(axis=0)
        ordered = np.sort(np.where(have, rows, np.iinfo(np.int64).max), axis=0)
        q = np.full((len(_QUANTILES), cols), np.nan)
        if filled:
            position = _QUANTILES[:, None] * np.maximum(n - 1, 0)[None, :]
            below, above = np.floor(position).astype(np.int64), np.ceil(position).astype(np.int64)
            low = np.take_along_axis(ordered, below, axis=0).astype(np.float64)
            high = np.take_along_axis(ordered, above, axis=0).astype(np.float64)
            q = (low + (high - low) * (position - below)) / 1e9
            q[:, n == 0] = np.nan
        recent = rows[-RECENT:].T.astype(np.float64) / 1e9 if filled else np.zeros((cols, 0))
        recent = np.nan_to_num(np.where(recent < 0, q[1][:, None], recent))
        count = self._count
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(count > 0, self._sum / np.maximum(count, 1) / 1e9, np.nan)
        return ColumnStats(
            count=count.copy(),
            mean=mean,
            minimum=np.where(count > 0, self._min / 1e9, np.nan),
            maximum=np.where(count > 0, self._max / 1e9, np.nan),
            q25=q[0],
            median=q[1],
            q75=q[2],
            p90=q[3],
            recent=recent,
        )
