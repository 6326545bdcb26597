"""The wait of a process's other threads that held its steps up: read by the collector once a second.

The agent measures the stepping thread's own run-queue delay per step (:mod:`fxtui.agent.cpu_wait`). A step is
also held up when its other threads wait for a CPU: torch's intra-op (OpenMP) pool, whose slowest thread ends
each parallel op, and the program's DataLoader workers, whose batch the step waits for. Reading every thread at
every step boundary would cost the program a system call per thread and step; the collector reads them all
anyway, once a second (:class:`~fxtui.jobs.machine_load.MachineLoad`), at no cost to the program.

**The rule.** While the stepping thread waits in the run queue, the step is held up, whatever the other threads
do: that wait is the step's. While it is *blocked* (neither on a CPU nor waiting for one: at the end of a parallel
op for a pool thread, on a DataLoader's queue for a batch), the step is held up by whatever it waits on; if the
other threads waited for a CPU meanwhile, that wait held it up too, at most for as long as it was blocked. So,
over each sampled second of the process::

    beside = min(blocked, Σ other threads' run-queue wait)
    blocked = the second − the stepping thread's time on a CPU − its own wait

``beside`` is shared among the steps of that second by their overlap with it, and each step's waiting is its own
thread's wait plus its share, never more than its wall time. Waits that happen at once (both threads of a parallel
op kept off a CPU together) count once: the stepping thread is waiting then, not blocked. The rule under-counts
where the stepping thread spins instead of sleeping (an OpenMP barrier spins a little before it sleeps): that
time is on a CPU, so it is read as the op's.

The stepping thread is taken to be the process's main thread (its tid is its pid), where a training loop runs.
Steps newer than the latest sample (up to a second of them) take the latest second's rate. Torch-free; memory
is bounded (:data:`WINDOW` seconds).
"""

from __future__ import annotations

import bisect
import collections
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

#: Seconds of beside-waits kept (a window of 256 steps of a few seconds each fits).
WINDOW = 1800


@dataclass(frozen=True, slots=True)
class BesideWait:
    """One sampled stretch of a process: the other threads' wait that held its steps up (ns)."""

    start_ns: int
    end_ns: int
    beside_ns: int

    @property
    def rate(self) -> float:
        """``beside_ns`` per ns of the stretch."""
        span = self.end_ns - self.start_ns
        return self.beside_ns / span if span > 0 else 0.0


def beside_wait(
    threads: Mapping[int, Mapping[int, tuple[int, int]]], pids: Iterable[int], main: int, seconds: float
) -> int | None:
    """The other threads' wait that held the stepping thread up over one stretch of ``seconds``: the rule above.

    ``threads``: each thread's (time on a CPU, wait) over the stretch, ns, by pid and tid; ``pids``: the process and
    its descendants; ``main``: the process (its main thread steps). None where its main thread was not read."""
    own = threads.get(main, {}).get(main)
    if own is None or seconds <= 0:
        return None
    others = sum(wait for pid in pids for tid, (_cpu, wait) in threads.get(pid, {}).items() if tid != main)
    blocked = max(0, int(seconds * 1e9) - own[0] - own[1])
    return min(blocked, others)


class ThreadWaits:
    """A process's beside-waits, second by second; what of them each step takes (:meth:`during`)."""

    def __init__(self) -> None:
        self.stretches: collections.deque[BesideWait] = collections.deque(maxlen=WINDOW)
        self._ends: collections.deque[int] = collections.deque(maxlen=WINDOW)

    def add(self, start_ns: int, end_ns: int, beside_ns: int) -> None:
        """One sampled stretch (``time.monotonic_ns()``, the clock of the agent's ``perf_counter_ns`` on Linux)."""
        if end_ns <= start_ns or (self.stretches and start_ns < self.stretches[-1].start_ns):
            return
        self.stretches.append(BesideWait(start_ns, end_ns, max(0, beside_ns)))
        self._ends.append(end_ns)

    @property
    def known(self) -> bool:
        return bool(self.stretches)

    def latest_rate(self) -> float:
        """The latest stretch's beside-wait per ns (0 before the first)."""
        return self.stretches[-1].rate if self.stretches else 0.0

    def during(self, start_ns: int, wall_ns: int) -> int:
        """The beside-wait a step from ``start_ns`` lasting ``wall_ns`` takes: each stretch's, by their overlap; the
        part after the latest stretch at its rate."""
        if not self.stretches or wall_ns <= 0:
            return 0
        end = start_ns + wall_ns
        total = 0.0
        i = bisect.bisect_right(self._ends, start_ns)  # the first stretch that ends after the step starts
        covered = start_ns
        stretches = self.stretches
        while i < len(stretches) and stretches[i].start_ns < end:
            s = stretches[i]
            overlap = min(end, s.end_ns) - max(start_ns, s.start_ns)
            if overlap > 0:
                total += overlap * s.rate
            covered = max(covered, min(end, s.end_ns))
            i += 1
        if covered < end and stretches[-1].end_ns <= end:  # newer than the latest sample
            total += (end - max(covered, stretches[-1].end_ns)) * stretches[-1].rate
        return int(total)
