"""Did other work on the machine take the CPU from a run? Read around each run, never inside one.

A profiler on a shared server sees its runs slow down when another process, or the
hypervisor, takes the cores, and nothing in the timings alone says which. The kernel
does: a :class:`LoadProbe` reads, before and after a run,

* the **run-queue wait** of each of this process's threads (``/proc/self/task/*/schedstat``,
  second field): time a thread was ready to run while another task held its core;
* the machine's **steal time** (``/proc/stat``): time the hypervisor gave this virtual
  machine's CPUs to someone else, which the guest cannot see as waiting;
* the process's **involuntary context switches** and **minor page faults** (``getrusage``).

A run is *disturbed* when waiting and stolen time took more than :data:`DISTURBED_SHARE`
of it (:attr:`RunLoad.lost_share`). Reading costs tens of microseconds per run,
outside the timed code. Where ``/proc`` lacks these files (another OS, a restricted
container) waits and steal read as unknown and no run is called disturbed.

In the live app the engine runs in a child process and the app draws on the same cores. The
probe then also **watches the display** (:meth:`LoadProbe.watch`): the app's threads' time on
a CPU during the run. Up to that much of the run's wait is the display's
(:attr:`RunLoad.display_share`), the rest other processes'; and between steps the engine waits
for the display to finish drawing (:meth:`LoadProbe.wait_for_display`), so that drawing falls
between the runs rather than inside them.
"""

from __future__ import annotations

import contextlib
import os
import resource
import time
from dataclasses import dataclass

#: A run that other work took more than this share from (:attr:`RunLoad.lost_share`) is disturbed.
#: Measured with `bench_interference.py` (resnet18 5×3×224×224) on a 2-core machine kept quiet
#: apart from the load the benchmark makes. Quiet, 2 threads: median 0.5%, p90 2.7%, max 5.7%
#: (fxtui's own two threads and the system's daemons sharing two cores); quiet, 1 thread: max 2.0%.
#: Two processes busy in bursts: 2 threads lost 27–44% (p10–max), 1 thread lost 1.4–32%
#: (median 9.2%). At 10% no quiet step of either is called disturbed (at 5%, 2 of 80 were),
#: every loaded 2-thread step is, and the loaded 1-thread steps that are left out are the ones
#: that moved its figures (fidelity −0.033 against the quiet phases with all kept, −0.010 without them).
DISTURBED_SHARE = 0.10

#: After a snapshot is published the engine waits for the display to draw it: until the app has used no
#: CPU for DISPLAY_QUIET_S (looking every DISPLAY_POLL_S), at most DISPLAY_LONGEST_S. Applying and
#: painting a snapshot costs the app 18–30 ms of CPU at 10,000 nodes (bench_keys_live.py), and Textual
#: paints within a frame (~16 ms) of the apply; while keys keep the app busy the wait ends at the limit.
DISPLAY_QUIET_S = 0.02
DISPLAY_POLL_S = 0.002
DISPLAY_LONGEST_S = 0.12

_TICK_NS = 1_000_000_000 // (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


@dataclass(frozen=True, slots=True)
class Reading:
    """The counters at one moment."""

    ns: int
    threads: dict[int, tuple[int, int]] | None
    """Per thread id: time on a CPU and run-queue wait so far, ns (None where the kernel does not say)."""
    steal_ns: int | None
    involuntary: int
    minor_faults: int
    display_ns: int | None = None
    """The watched display process's threads' time on a CPU so far, ns (None when none is watched)."""


@dataclass(frozen=True, slots=True)
class RunLoad:
    """What other work took from one run."""

    wall_ns: int
    cpu_ns: int | None
    """This process's threads' time on a CPU during the run, summed over threads."""
    wait_ns: int | None
    """Their run-queue wait during the run: ready to run while another task held the core."""
    steal_ns: int | None
    """Steal time during the run, per CPU (the machine's total over its CPU count)."""
    involuntary: int
    """Involuntary context switches of the process during the run."""
    minor_faults: int
    display_ns: int | None = None
    """The display's (the live app's) time on a CPU during the run; None when no display is watched."""

    @property
    def lost_share(self) -> float:
        """The share of the run taken by other work, 0–1 (0 when unknown).

        The threads' wait over the time they wanted (on a CPU plus waiting), plus the CPUs'
        stolen time over the wall time: with two threads of which one waited half the run,
        a quarter of what the run asked for was taken.
        """
        wanted = (self.cpu_ns or 0) + (self.wait_ns or 0)
        waited = (self.wait_ns or 0) / wanted if wanted > 0 else 0.0
        stolen = (self.steal_ns or 0) / self.wall_ns if self.wall_ns > 0 else 0.0
        return min(1.0, waited + stolen)

    @property
    def disturbed(self) -> bool:
        """True when other work took more than :data:`DISTURBED_SHARE` of the run."""
        return self.lost_share > DISTURBED_SHARE

    @property
    def display_share(self) -> float:
        """The part of :attr:`lost_share` the display took, 0–1: the run's wait, up to the display's CPU time.

        The app is not niced and the engine is, so while the app draws, one of the engine's threads
        waits; what it waited beyond the app's own CPU time was someone else's.
        """
        wanted = (self.cpu_ns or 0) + (self.wait_ns or 0)
        if not self.display_ns or wanted <= 0:
            return 0.0
        return min(self.lost_share, min(self.wait_ns or 0, self.display_ns) / wanted)


class LoadProbe:
    """Reads the counters :class:`RunLoad` is made of; one per process is enough."""

    def __init__(self) -> None:
        self._cpus = os.cpu_count() or 1
        self._stat = _open("/proc/stat")
        self._tasks: dict[int, int] = {}
        """Thread id → an open schedstat file."""
        self._schedstat = os.path.exists(f"/proc/self/task/{os.getpid()}/schedstat")
        self.display: int | None = None
        """The process id of the display whose drawing is told apart (:meth:`watch`)."""
        self._display_tasks: dict[int, int] = {}

    @property
    def known(self) -> bool:
        """True when the kernel reports run-queue waits, so a disturbed run can be told apart."""
        return self._schedstat

    def watch(self, pid: int) -> bool:
        """Tell the display process ``pid`` (the live app) apart from other work; False where it cannot be read."""
        if not self._schedstat or not os.path.exists(f"/proc/{pid}/task"):
            return False
        self.display = pid
        return True

    def read(self) -> Reading:
        """The counters now."""
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return Reading(
            ns=time.perf_counter_ns(),
            threads=self._threads() if self._schedstat else None,
            steal_ns=self._steal(),
            involuntary=usage.ru_nivcsw,
            minor_faults=usage.ru_minflt,
            display_ns=self.display_cpu(),
        )

    def display_cpu(self) -> int | None:
        """The display's threads' time on a CPU so far, ns; None when no display is watched (or it is gone)."""
        if self.display is None:
            return None
        found = self._per_thread(f"/proc/{self.display}/task", self._display_tasks)
        if found is None:
            self.display = None  # the app has gone: nothing left to tell apart
            return None
        return sum(on_cpu for on_cpu, _ in found.values())

    def wait_for_display(self, quiet_s: float = DISPLAY_QUIET_S, longest_s: float = DISPLAY_LONGEST_S) -> float:
        """Wait until the display has used no CPU for ``quiet_s`` (at most ``longest_s``); the seconds waited.

        Called right after a snapshot is published: the app receives it, applies it and repaints, and
        a run started meanwhile would share the cores with that. A display that does not start
        drawing within ``quiet_s`` (it holds snapshots while keys come) costs that wait only.
        """
        start = time.perf_counter()
        last = self.display_cpu()
        if last is None:
            return 0.0
        quiet_since = start
        while (now := time.perf_counter()) - start < longest_s and now - quiet_since < quiet_s:
            time.sleep(DISPLAY_POLL_S)
            cpu = self.display_cpu()
            if cpu is None:
                break
            if cpu != last:
                last, quiet_since = cpu, time.perf_counter()
        return time.perf_counter() - start

    def since(self, before: Reading, after: Reading | None = None) -> RunLoad:
        """What happened between ``before`` and ``after`` (now, by default)."""
        after = after or self.read()
        cpu = wait = display = None
        if before.display_ns is not None and after.display_ns is not None:
            display = max(0, after.display_ns - before.display_ns)
        if before.threads is not None and after.threads is not None:
            # Only threads present at both ends: a thread born mid-run brings its whole history.
            both = [(after.threads[t], before.threads[t]) for t in after.threads if t in before.threads]
            cpu = sum(max(0, a[0] - b[0]) for a, b in both)
            wait = sum(max(0, a[1] - b[1]) for a, b in both)
        steal = None
        if before.steal_ns is not None and after.steal_ns is not None:
            steal = (after.steal_ns - before.steal_ns) // self._cpus
        return RunLoad(
            wall_ns=after.ns - before.ns,
            cpu_ns=cpu,
            wait_ns=wait,
            steal_ns=steal,
            involuntary=after.involuntary - before.involuntary,
            minor_faults=after.minor_faults - before.minor_faults,
            display_ns=display,
        )

    def _threads(self) -> dict[int, tuple[int, int]] | None:
        return self._per_thread("/proc/self/task", self._tasks)

    @staticmethod
    def _per_thread(tasks: str, files: dict[int, int]) -> dict[int, tuple[int, int]] | None:
        """Time on a CPU and run-queue wait of each thread under ``tasks``; ``files`` keeps their schedstat open."""
        try:
            tids = [int(t) for t in os.listdir(tasks)]
        except OSError:
            return None
        out = {}
        for tid in tids:
            fd = files.get(tid)
            if fd is None:
                fd = _open(f"{tasks}/{tid}/schedstat")
                if fd is None:
                    continue
                files[tid] = fd
            try:
                on_cpu, waiting = os.pread(fd, 128, 0).split()[:2]
                out[tid] = (int(on_cpu), int(waiting))
            except (OSError, IndexError, ValueError):
                continue
        for gone in set(files) - set(tids):
            os.close(files.pop(gone))
        return out

    def _steal(self) -> int | None:
        if self._stat is None:
            return None
        try:
            fields = os.pread(self._stat, 256, 0).split(b"\n", 1)[0].split()
            return int(fields[8]) * _TICK_NS  # cpu user nice system idle iowait irq softirq steal
        except (OSError, IndexError, ValueError):
            return None

    def close(self) -> None:
        """Close the files the probe keeps open."""
        for fd in [
            *self._tasks.values(),
            *self._display_tasks.values(),
            *([self._stat] if self._stat is not None else []),
        ]:
            os.close(fd)
        self._tasks.clear()
        self._display_tasks.clear()
        self._stat = None

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter exit os may be gone already
            self.close()


def _open(path: str) -> int | None:
    try:
        return os.open(path, os.O_RDONLY)
    except OSError:
        return None
