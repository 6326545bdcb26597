"""Fixed-size rings of the latest steps' figures, allocated whole at a kind's first step: a collector's memory for
its ranks' steps reaches its level in the first seconds, not over the minutes the windows take to fill.

A deque of Python objects (a step's wall time and its phases as a tuple: ~300 bytes a step) grows until it is full:
at 2 steps a second, the latest 300 steps take 2½ minutes and the latest 256 sampled steps (one in 5 sampled) 10,
so a collector of 256 ranks grew by ~30 MB after its first minute. Here each ring is one int64 array, written
through when it is made (its pages counted at once), a row a step, the oldest overwritten: ~70 kB a kind of step.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from fxtui.core.program_run import STEP_PHASES, StepTimes

#: Phases a step's row holds (:data:`~fxtui.core.program_run.STEP_PHASES`).
PHASES = len(STEP_PHASES)


class Ring:
    """The latest ``capacity`` rows of ``width`` int64 values; nothing allocated until the first row."""

    __slots__ = ("_rows", "_written", "capacity", "width")

    def __init__(self, capacity: int, width: int = 1) -> None:
        self.capacity = capacity
        self.width = width
        self._rows: np.ndarray | None = None
        self._written = 0

    def add(self, row: Sequence[int]) -> None:
        """One step's row (a shorter one padded with zeros, a longer one cut)."""
        rows = self._rows
        if rows is None:  # np.full writes every page now: the ring's memory is counted from its first step
            rows = self._rows = np.full((self.capacity, self.width), 0, dtype=np.int64)
        at = self._written % self.capacity
        n = min(len(row), self.width)
        rows[at, :n] = row[:n]
        if n < self.width:
            rows[at, n:] = 0
        self._written += 1

    def __len__(self) -> int:
        return min(self._written, self.capacity)

    def __bool__(self) -> bool:
        return self._written > 0

    def rows(self) -> np.ndarray:
        """The rows kept, oldest first (a copy: the ring's own keeps being written)."""
        rows = self._rows
        if rows is None:
            return np.zeros((0, self.width), dtype=np.int64)
        if self._written <= self.capacity:
            return rows[: self._written].copy()
        at = self._written % self.capacity
        return np.concatenate((rows[at:], rows[:at]))

    def column(self, i: int = 0) -> list[int]:
        """Column ``i`` of the rows kept, oldest first, as Python ints (the figures' medians are of exact ints)."""
        return self.rows()[:, i].tolist()

    def clear(self) -> None:
        """Forget the rows (the memory stays: the ring is the same size again at the next step)."""
        self._written = 0


class Timeline(Ring):
    """The latest steps' index, wall time, whether sampled, and phases: :class:`StepTimes` read back."""

    __slots__ = ()

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity, 3 + PHASES)

    def append(self, times: StepTimes) -> None:
        self.add((times.index, times.wall_ns, int(times.sampled), *times.phases_ns))

    def __iter__(self) -> Iterator[StepTimes]:
        for index, wall, sampled, *phases in self.rows().tolist():
            yield StepTimes(index, wall, tuple(phases), bool(sampled))

    def phases(self) -> np.ndarray:
        """(steps, phases) ns, oldest first."""
        return self.rows()[:, 3:]


def phase_medians(phases: np.ndarray) -> tuple[float, ...]:
    """The median of each phase over the rows of ``phases`` (ns), in seconds; zeros for none (as
    :func:`~fxtui.core.program_run.phase_medians` of the same steps)."""
    if not len(phases):
        return tuple(0.0 for _ in STEP_PHASES)
    return tuple(float(m) / 1e9 for m in np.median(phases, axis=0))
