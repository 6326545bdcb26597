"""The wait of a process's other threads that held its steps up: read by the collector once a second.

The agent measures the stepping thread's own run-queue delay per step (:mod:`fxtui.agent.cpu_wait`). A step is
also held up when its other threads wait for a CPU: torch's intra-op (OpenMP) pool, whose slowest thread ends
each parallel op, and the program's DataLoader workers, whose batch the step waits for. Reading every thread at
every step boundary would cost the program a system call per thread and step; the collector reads them all
anyway, once a second (:class:`~fxtui.jobs.machine_load.MachineLoad`), at no cost to the program.

**The rule.** A step is held up whenever one of the threads it needs waits in the run queue, and waits that
happen at once count once:

* the process's own threads (the stepping thread and its intra-op pool, which every parallel op waits for): the
  share of the step in which *some* of them waited, taking their waits as independent of one another,
  ``1 − (1 − own) × Π (1 − other thread's wait ÷ the second)``, where ``own`` is the stepping thread's measured
  share of that step. The other threads are the pool's: of a pool of N threads (torch's intra-op threads, the
  agent's ``Hello.threads`` at its start), the N − 1 other threads that ran longest in the second. A process
  has threads that hold no step up (fxtui's own sender, a DataLoader's queue feeders, a logger): each wakes for a
  moment, and on a busy machine may wait longer than it runs. Counted, their wait would read as the step's, with
  one intra-op thread as much as with more. (Beside the CNN of ``tests/programs/loader_workers.py`` with one
  intra-op thread and two busy loops, load 11, the one other thread of its process waited 0–5 ms a second: small
  there, and nothing the step waits for.) A pool counted this way is as many threads as torch had when the agent
  started; a program that sets more later has its extra threads left out. A pool spins at the end of a parallel
  op rather than sleeping, so the time the stepping thread spends waiting for a partner kept off a CPU is time
  *on* a CPU: only the partner's wait shows it
  (``tests/benchmarks/bench_pool_waits.py`` measures this; the stepping thread is almost never blocked);
* its child processes (DataLoader workers), which work beside the step: their wait only while the stepping
  thread was *blocked* (neither on a CPU nor waiting: on the loader's queue), at most that long,
  ``min(blocked, Σ their wait)`` per second, shared among the second's steps by their overlap.

A step's waiting is never more than its wall time. The rule over-counts threads that wait together (two pool
threads that share one core take turns); it is what fxtui measures, not a model of the scheduler.

The stepping thread is taken to be the process's main thread (its tid is its pid), where a training loop runs.
Steps newer than the latest sample (up to a second of them) take the latest second's figures. Torch-free; memory
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
    """One sampled stretch of a process: how its other threads' waits held its steps up."""

    start_ns: int
    end_ns: int
    beside_ns: int
    """Its child processes' wait while the stepping thread was blocked (ns)."""
    running: float = 1.0
    """Π (1 − each other thread's wait ÷ the stretch) over the process's own threads: the share of time none of
    them waited, were their waits independent."""

    @property
    def rate(self) -> float:
        """``beside_ns`` per ns of the stretch."""
        span = self.end_ns - self.start_ns
        return self.beside_ns / span if span > 0 else 0.0


def beside_wait(
    threads: Mapping[int, Mapping[int, tuple[int, int]]],
    pids: Iterable[int],
    main: int,
    seconds: float,
    pool: int | None = None,
) -> tuple[float, int] | None:
    """How the other threads held the stepping thread up over one stretch of ``seconds``: the rule above, as the
    share of time none of the process's pool threads waited, and the child processes' wait while it was blocked.

    ``threads``: each thread's (time on a CPU, wait) over the stretch, ns, by pid and tid; ``pids``: the process and
    its descendants; ``main``: the process (its main thread steps); ``pool``: its intra-op threads, the main one
    among them (None: every other thread counts). None where its main thread was not read."""
    own = threads.get(main, {}).get(main)
    if own is None or seconds <= 0:
        return None
    span = seconds * 1e9
    others = [times for tid, times in threads.get(main, {}).items() if tid != main]
    if pool is not None:  # the pool's threads run in every parallel op: the ones that ran longest
        others = sorted(others, key=lambda times: -times[0])[: max(0, pool - 1)]
    running = 1.0
    for _cpu, wait in others:
        running *= max(0.0, 1.0 - wait / span)
    children = sum(wait for pid in pids if pid != main for _cpu, wait in threads.get(pid, {}).values())
    blocked = max(0, int(span) - own[0] - own[1])
    return running, min(blocked, children)


class ThreadWaits:
    """A process's beside-waits, second by second; what each step waited in all (:meth:`step_wait`)."""

    def __init__(self) -> None:
        self.stretches: collections.deque[BesideWait] = collections.deque(maxlen=WINDOW)
        self._ends: collections.deque[int] = collections.deque(maxlen=WINDOW)

    def add(self, start_ns: int, end_ns: int, beside_ns: int, running: float = 1.0) -> None:
        """One sampled stretch (``time.monotonic_ns()``, the clock of the agent's ``perf_counter_ns`` on Linux)."""
        if end_ns <= start_ns or (self.stretches and start_ns < self.stretches[-1].start_ns):
            return
        self.stretches.append(BesideWait(start_ns, end_ns, max(0, beside_ns), min(1.0, max(0.0, running))))
        self._ends.append(end_ns)

    @property
    def known(self) -> bool:
        return bool(self.stretches)

    def step_wait(self, start_ns: int, wall_ns: int, own_ns: int) -> int:
        """A step's waiting in all (ns): its own thread's ``own_ns`` and its other threads', by the rule above."""
        if own_ns < 0 or wall_ns <= 0:
            return own_ns
        running, beside = self.during(start_ns, wall_ns)
        waited = wall_ns - (wall_ns - min(own_ns, wall_ns)) * running + beside
        return min(wall_ns, int(waited))

    def during(self, start_ns: int, wall_ns: int) -> tuple[float, int]:
        """Over a step from ``start_ns`` lasting ``wall_ns``: the stretches' share of time none of the other threads
        waited, and their child processes' beside-wait, each by the stretches' overlap with the step; the part after
        the latest stretch as the latest. (1.0, 0) where nothing covers it."""
        if not self.stretches or wall_ns <= 0:
            return 1.0, 0
        end = start_ns + wall_ns
        beside = weighted = covered_ns = 0.0
        i = bisect.bisect_right(self._ends, start_ns)  # the first stretch that ends after the step starts
        stretches = self.stretches
        while i < len(stretches) and stretches[i].start_ns < end:
            s = stretches[i]
            overlap = min(end, s.end_ns) - max(start_ns, s.start_ns)
            if overlap > 0:
                beside += overlap * s.rate
                weighted += overlap * s.running
                covered_ns += overlap
            i += 1
        latest = stretches[-1]
        if latest.end_ns < end:  # newer than the latest sample: as the latest
            after = end - max(start_ns, latest.end_ns)
            beside += after * latest.rate
            weighted += after * latest.running
            covered_ns += after
        return (weighted / covered_ns if covered_ns > 0 else 1.0), int(beside)
