"""Was the machine disturbed while a user's program ran? Sampled from the collector's process, once a second.

``fxtui MODEL`` reads its own threads around each run (:mod:`fxtui.measure.interference`). Under
``fxtui run`` the program is another process, and its steps are not the collector's to wrap, so the
collector samples the kernel's counters about once a second (:meth:`MachineLoad.sample`) and compares,
for each interval:

* the **run-queue wait** of the program's threads (``/proc/PID/task/TID/schedstat``, second field:
  time a thread was ready to run while another task held its core), and their time on a CPU (first
  field), over the program's processes and their descendants (DataLoader workers, torchrun's ranks);
* **other processes' CPU time**: the machine's busy time (``/proc/stat``) less the program's and this
  process's own;
* the machine's **steal time** (``/proc/stat``): time the hypervisor gave the CPUs to someone else,
  which a guest cannot see as waiting.

The program's threads also wait for one another (eight DataLoader workers on two cores): only as much
wait as other processes used CPU is theirs, the rest the program's own. An interval is *disturbed* when
other processes' share of the wait, plus stolen time, took more than :data:`DISTURBED_SHARE` of what
the program wanted (its CPU time plus its wait), the threshold the model mode uses.

Torch-free and cheap: one ``/proc`` listing and the new processes' ``stat`` per sample, and the
program's threads' ``schedstat``. Where ``/proc`` lacks these files (another OS, a restricted
container) the figures read as unknown and no interval is called disturbed.

Memory is bounded: the latest :data:`WINDOW` intervals (for :meth:`MachineLoad.lost_during`, which
tells a step's share by its start and end on ``time.monotonic()``, a clock every process of the
machine shares), and running totals for :meth:`MachineLoad.summary`.
"""

from __future__ import annotations

import collections
import os
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

#: An interval whose wait caused by other processes and stolen time took more than this share of what the program
#: wanted is disturbed: the model mode's threshold (``fxtui.measure.interference.DISTURBED_SHARE``, measured
#: there); ``tests/test_machine_load.py`` checks that the two agree.
DISTURBED_SHARE = 0.10
#: A run whose disturbed intervals add up to at least this share of its time has figures other work moved.
AFFECTS_FIGURES = 0.10
#: Intervals kept for :meth:`MachineLoad.lost_during` (an hour of one-second samples).
WINDOW = 3600
#: Lost shares of disturbed intervals kept for the summary's median.
LOST_KEPT = 4096

_TICK_S = 1.0 / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


@dataclass(frozen=True, slots=True)
class Interval:
    """What happened to the program and the machine between two samples."""

    start: float
    """``time.monotonic()`` at the earlier sample."""
    seconds: float
    program_cpu_s: float | None
    """The program's threads' time on a CPU, summed (None where the kernel does not say)."""
    wait_s: float | None
    """Their run-queue wait: ready to run while another task held the core."""
    others_cpu_s: float | None
    """Other processes' CPU time: the machine's busy time less the program's and fxtui's own."""
    steal_s: float | None
    """Steal time per CPU: the hypervisor gave the CPUs to another machine."""
    cpus: int

    @property
    def end(self) -> float:
        return self.start + self.seconds

    @property
    def lost_share(self) -> float:
        """The share of what the program wanted (CPU time plus wait) that other work took, 0–1 (0 when unknown).

        Only as much of the wait as other processes used CPU time is theirs: the rest is the program's threads
        waiting for one another. Stolen time counts over the interval's wall time.
        """
        wanted = (self.program_cpu_s or 0.0) + (self.wait_s or 0.0)
        theirs = min(self.wait_s or 0.0, max(self.others_cpu_s or 0.0, 0.0))
        waited = theirs / wanted if wanted > 0 else 0.0
        stolen = (self.steal_s or 0.0) / self.seconds if self.seconds > 0 else 0.0
        return min(1.0, waited + stolen)

    @property
    def own_share(self) -> float:
        """The share of what the program wanted that its own threads lost waiting for one another, 0–1."""
        wanted = (self.program_cpu_s or 0.0) + (self.wait_s or 0.0)
        theirs = min(self.wait_s or 0.0, max(self.others_cpu_s or 0.0, 0.0))
        return ((self.wait_s or 0.0) - theirs) / wanted if wanted > 0 else 0.0

    @property
    def disturbed(self) -> bool:
        """Other work took more than :data:`DISTURBED_SHARE` of what the program wanted."""
        return self.lost_share > DISTURBED_SHARE


@dataclass(frozen=True, slots=True)
class LoadSummary:
    """How much other work disturbed a program's run, over every interval sampled."""

    known: bool
    """The kernel reports run-queue waits: a disturbed interval can be told apart."""
    seconds: float
    disturbed_seconds: float
    intervals: int
    disturbed_intervals: int
    median_lost: float
    """The median :attr:`Interval.lost_share` of the disturbed intervals (0 when none)."""
    worst_lost: float
    others_cores: float
    """Other processes' mean CPU use, in cores."""
    program_cores: float
    """The program's mean CPU use, in cores."""
    steal_share: float
    """Stolen time over the run's wall time (per CPU)."""
    cpus: int

    @property
    def disturbed(self) -> bool:
        """Any interval was disturbed."""
        return self.disturbed_intervals > 0

    @property
    def affects_figures(self) -> bool:
        """Disturbed intervals make up at least :data:`AFFECTS_FIGURES` of the run: its figures are slower than on a
        quiet machine."""
        return self.seconds > 0 and self.disturbed_seconds / self.seconds >= AFFECTS_FIGURES

    def line(self) -> str:
        """One sentence for a header: ``""`` on a quiet machine (or where the kernel does not say)."""
        if not self.known or not self.disturbed:
            return ""
        share = f"{100 * self.median_lost:.0f}% of its time (median; worst {100 * self.worst_lost:.0f}%)"
        said = (
            f"other processes{' or the hypervisor' if self.steal_share > 0.01 else ''} took {share} in "
            f"{self.disturbed_seconds:.0f} of {self.seconds:.0f} s; they used {self.others_cores:.1f} of "
            f"{self.cpus} cores, the program {self.program_cores:.1f}"
        )
        if self.affects_figures:
            said += ": its figures are slower than on a quiet machine"
        return said


class MachineLoad:
    """Samples of the program's and the machine's counters (call :meth:`sample` about once a second)."""

    def __init__(
        self,
        pids: Iterable[int] | Callable[[], Iterable[int]],
        *,
        descendants: bool = True,
        proc: str | os.PathLike[str] = "/proc",
        own_pid: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        cpus: int | None = None,
    ) -> None:
        """``pids``: the program's processes (or a function that says them as they change: ranks that connect);
        with ``descendants`` their children too, found as they start. ``own_pid`` is fxtui's process whose CPU
        time is not other work's (this one by default). ``proc``, ``clock`` and ``cpus`` are for tests."""
        self._roots = pids if callable(pids) else (lambda fixed=tuple(pids): fixed)
        self._descendants = descendants
        self._proc = Path(proc)
        self._own_pid = own_pid if own_pid is not None else os.getpid()
        self._clock = clock
        self._cpus = cpus or os.cpu_count() or 1
        self._parents: dict[int, int] = {}
        """Every process seen, with its parent (read once, when first seen)."""
        self._last: _Reading | None = None
        self.intervals: collections.deque[Interval] = collections.deque(maxlen=WINDOW)
        """The latest intervals, oldest first."""
        self._lost: collections.deque[float] = collections.deque(maxlen=LOST_KEPT)
        self._totals = {"seconds": 0.0, "disturbed_s": 0.0, "others_s": 0.0, "program_s": 0.0, "steal_s": 0.0}
        self._counts = {"intervals": 0, "disturbed": 0}
        self.known = (self._proc / "self" / "task").is_dir() and (self._proc / "stat").is_file()
        self._schedstat = False
        self._children: dict[int, list[int]] | None = None
        self.threads: dict[int, dict[int, tuple[int, int]]] = {}
        """Each thread's time on a CPU and run-queue wait over the latest interval, ns, by pid and tid
        (:mod:`fxtui.jobs.thread_waits` apportions them to a process's steps)."""

    # -- sampling ----------------------------------------------------------------------------------------------

    def sample(self) -> Interval | None:
        """Read the counters now; the interval since the last sample (None for the first)."""
        reading = self._read()
        last, self._last = self._last, reading
        if last is None:
            return None
        interval = _interval(last, reading, self._cpus)
        self.threads = _thread_deltas(last, reading)
        self._children = None
        self._add(interval)
        return interval

    def subtree(self, pid: int) -> set[int]:
        """``pid`` and its descendants as last seen (its DataLoader workers), fxtui's own process left out."""
        if self._children is None:  # once a sample: a job of many ranks asks for each
            self._children = {}
            for child, parent in self._parents.items():
                self._children.setdefault(parent, []).append(child)
        children = self._children
        found, frontier = {pid}, [pid]
        while frontier:
            for child in children.get(frontier.pop(), ()):
                if child not in found and child != self._own_pid:
                    found.add(child)
                    frontier.append(child)
        return found

    def _add(self, interval: Interval) -> None:
        self.intervals.append(interval)
        totals = self._totals
        totals["seconds"] += interval.seconds
        totals["others_s"] += max(interval.others_cpu_s or 0.0, 0.0)
        totals["program_s"] += interval.program_cpu_s or 0.0
        totals["steal_s"] += interval.steal_s or 0.0
        self._counts["intervals"] += 1
        if interval.disturbed:
            totals["disturbed_s"] += interval.seconds
            self._counts["disturbed"] += 1
            self._lost.append(interval.lost_share)

    # -- what the samples say ----------------------------------------------------------------------------------

    def lost_during(self, start: float, end: float) -> float | None:
        """The share of the program's time other work took between ``start`` and ``end`` (``time.monotonic()``;
        a step's start and end), from the intervals that overlap it, weighted by the overlap; None when no
        sampled interval covers any of it."""
        weight = lost = 0.0
        for interval in reversed(self.intervals):
            if interval.end <= start:
                break
            overlap = min(end, interval.end) - max(start, interval.start)
            if overlap > 0:
                weight += overlap
                lost += overlap * interval.lost_share
        return lost / weight if weight > 0 else None

    def summary(self) -> LoadSummary:
        """Every interval sampled so far, summed up."""
        totals, counts = self._totals, self._counts
        seconds = totals["seconds"]
        lost = sorted(self._lost)
        return LoadSummary(
            known=self.known and self._schedstat,
            seconds=seconds,
            disturbed_seconds=totals["disturbed_s"],
            intervals=counts["intervals"],
            disturbed_intervals=counts["disturbed"],
            median_lost=statistics.median(lost) if lost else 0.0,
            worst_lost=lost[-1] if lost else 0.0,
            others_cores=totals["others_s"] / seconds if seconds > 0 else 0.0,
            program_cores=totals["program_s"] / seconds if seconds > 0 else 0.0,
            steal_share=totals["steal_s"] / seconds if seconds > 0 else 0.0,
            cpus=self._cpus,
        )

    # -- reading /proc -----------------------------------------------------------------------------------------

    def _read(self) -> _Reading:
        now = self._clock()
        busy, steal = self._machine()
        pids = self._program_pids()
        threads: dict[tuple[int, int], tuple[int, int]] = {}
        for pid in pids:
            threads.update(self._threads(pid))
        return _Reading(now, busy, steal, threads, self._process_cpu(self._own_pid))

    def _machine(self) -> tuple[float | None, float | None]:
        """The machine's busy and steal time so far, in CPU-seconds (all CPUs)."""
        try:
            fields = (self._proc / "stat").read_text().split("\n", 1)[0].split()
            # cpu user nice system idle iowait irq softirq steal guest guest_nice (guest time is inside user)
            user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[1:9])
        except (OSError, ValueError, IndexError):
            return None, None
        return (user + nice + system + irq + softirq) * _TICK_S, steal * _TICK_S

    def _program_pids(self) -> set[int]:
        roots = {int(p) for p in self._roots() if p}
        if not self._descendants:
            return roots
        try:
            alive = {int(name) for name in os.listdir(self._proc) if name.isdigit()}
        except OSError:
            return roots
        for gone in set(self._parents) - alive:
            del self._parents[gone]
        for pid in alive - set(self._parents):
            parent = _parent(self._proc / str(pid) / "stat")
            if parent is not None:
                self._parents[pid] = parent
        found, frontier = set(roots), set(roots)
        children: dict[int, list[int]] = {}
        for pid, parent in self._parents.items():
            children.setdefault(parent, []).append(pid)
        while frontier:
            frontier = {child for pid in frontier for child in children.get(pid, ()) if child not in found}
            found |= frontier
        return found & alive

    def _threads(self, pid: int) -> dict[tuple[int, int], tuple[int, int]]:
        """Each thread's time on a CPU and run-queue wait so far, ns, keyed by (pid, tid)."""
        tasks = self._proc / str(pid) / "task"
        out: dict[tuple[int, int], tuple[int, int]] = {}
        try:
            tids = [int(t) for t in os.listdir(tasks) if t.isdigit()]
        except OSError:
            return out
        for tid in tids:
            try:
                on_cpu, waiting = (tasks / str(tid) / "schedstat").read_text().split()[:2]
                out[(pid, tid)] = (int(on_cpu), int(waiting))
                self._schedstat = True
            except (OSError, ValueError):
                continue
        return out

    def _process_cpu(self, pid: int) -> float | None:
        """A process's user and system time so far, seconds (its threads summed by the kernel)."""
        try:
            fields = _stat_fields(self._proc / str(pid) / "stat")
            return (int(fields[11]) + int(fields[12])) * _TICK_S  # utime, stime: the 14th and 15th fields
        except (OSError, ValueError, IndexError):
            return None


@dataclass(frozen=True, slots=True)
class _Reading:
    at: float
    busy_s: float | None
    steal_s: float | None
    threads: dict[tuple[int, int], tuple[int, int]]
    own_cpu_s: float | None


def _interval(before: _Reading, after: _Reading, cpus: int) -> Interval:
    both = [(after.threads[k], before.threads[k]) for k in after.threads if k in before.threads]
    # A new thread of a process read before counts from its birth (its counters start at 0); a process seen for the
    # first time counts from the next interval (its counters hold its history); a thread that ended is lost.
    known_pids = {pid for pid, _ in before.threads}
    born = [after.threads[k] for k in after.threads if k not in before.threads and k[0] in known_pids]
    cpu_ns = sum(max(0, a[0] - b[0]) for a, b in both) + sum(a[0] for a in born)
    wait_ns = sum(max(0, a[1] - b[1]) for a, b in both) + sum(a[1] for a in born)
    known = bool(after.threads) or bool(before.threads)
    program_cpu = cpu_ns / 1e9 if known else None
    others = None
    if before.busy_s is not None and after.busy_s is not None:
        own = (after.own_cpu_s or 0.0) - (before.own_cpu_s or 0.0)
        others = after.busy_s - before.busy_s - (program_cpu or 0.0) - max(own, 0.0)
    steal = None
    if before.steal_s is not None and after.steal_s is not None:
        steal = (after.steal_s - before.steal_s) / cpus
    return Interval(
        start=before.at,
        seconds=after.at - before.at,
        program_cpu_s=program_cpu,
        wait_s=wait_ns / 1e9 if known else None,
        others_cpu_s=others,
        steal_s=steal,
        cpus=cpus,
    )


def _thread_deltas(before: _Reading, after: _Reading) -> dict[int, dict[int, tuple[int, int]]]:
    """Each thread's time on a CPU and wait between two readings, ns, by pid and tid; a new thread of a process read
    before from its birth (as :func:`_interval` counts it)."""
    known_pids = {pid for pid, _ in before.threads}
    out: dict[int, dict[int, tuple[int, int]]] = {}
    for (pid, tid), (cpu, wait) in after.threads.items():
        was = before.threads.get((pid, tid))
        if was is not None:
            out.setdefault(pid, {})[tid] = (max(0, cpu - was[0]), max(0, wait - was[1]))
        elif pid in known_pids:
            out.setdefault(pid, {})[tid] = (cpu, wait)
    return out


def _stat_fields(path: Path) -> list[str]:
    """``/proc/PID/stat``'s fields after the command name (which may hold spaces and parentheses)."""
    text = path.read_text()
    return text[text.rindex(")") + 2 :].split()


def _parent(path: Path) -> int | None:
    try:
        return int(_stat_fields(path)[1])  # state, then ppid
    except (OSError, ValueError, IndexError):
        return None
