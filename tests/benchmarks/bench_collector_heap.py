"""What grows in a collector of hundreds of ranks after its first minutes: its objects, or the C heap under them.

    python tests/benchmarks/bench_collector_heap.py                     # 256 ranks, 10 minutes of the program's time
    python tests/benchmarks/bench_collector_heap.py --trim              # the heap trimmed after each full pass
    python tests/benchmarks/bench_collector_heap.py --mmap-threshold 131072 --minutes 5

In this process, no sockets: :class:`~fxtui.jobs.job_state.JobState` is fed the recorded messages of
``bench_collector_scale.py`` (its pickle; recorded first when absent), each rank's message its own bytes read through
the collector's unpickler, at 2 steps a second of the program's time, as fast as it takes them; as the daemon does,
a viewer's snapshot every 0.25 s, a member's report to its lead every second (:mod:`fxtui.jobs.cross_node`) and the
collector's garbage-collection policy (:mod:`fxtui.jobs.collector_gc`), on a clock of the program's time: the modules
that read ``time.monotonic`` (when a rank's snapshot is stale, when its figures are due in a report, when a pass
walks everything) read that clock instead, so what they keep is what ten minutes would keep. The rebuild budget of a
refresh stays in real time (``time.perf_counter``), as the daemon's. No step is left out for lag: each is stamped as
having just ended.

At each minute it prints the RSS, Python's allocated blocks, glibc's heap (``mallinfo2``: its size, the bytes in use
and free in it, the bytes in blocks of their own mapping), the objects the garbage collector tracks, and the
collector's own sizes (windows, histories, shape counts, snapshots kept); at minute 3 and at the end a census of the
tracked objects by type (their difference), with ``--trace`` ``tracemalloc``'s snapshots of minute 3 and of the end
compared by line (traced from the start: slower); at the end, the garbage cycles held frozen.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import dataclasses
import gc
import io
import os
import pickle
import sys
import tempfile
import time
import tracemalloc
import types
from pathlib import Path
from typing import Any

STEPS_PER_S = 2.0
SNAPSHOT_EVERY_S = 0.25
REPORT_EVERY_S = 1.0


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                     "fsmblks", "uordblks", "fordblks", "keepcost")]  # fmt: skip


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def _census() -> collections.Counter[str]:
    """The tracked objects by type, the frozen ones too."""
    gc.unfreeze()
    counts = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
    gc.freeze()
    return counts


def _sizes(state: Any) -> str:
    """The collector's own structures, summed over its ranks."""
    out: collections.Counter[str] = collections.Counter()
    for collector in state.collector.agents.values():
        for figures in collector.kinds.values():
            w = figures.window
            out["window MB"] += sum(a.nbytes for a in (w._buf, w._count, w._sum, w._min, w._max)) / 1e6
            out["history"] += len(figures._history)
            out["shape counts"] += sum(len(v) for v in figures._shape_counts.values())
            out["columns"] += len(figures._columns)
    out["snapshots kept"] = len(state.collector.built._built)
    return ", ".join(f"{k} {v:.0f}" for k, v in out.items())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=256)
    p.add_argument("--minutes", type=int, default=10, help="of the program's time (at least 4)")
    p.add_argument("--trim", action="store_true", help="the heap trimmed after each full pass (fxtui/jobs/heap_trim)")
    p.add_argument("--mmap-threshold", type=int, default=0, help="glibc's M_MMAP_THRESHOLD, fixed (bytes)")
    p.add_argument("--trace", type=int, default=0, help="tracemalloc's frames a trace, traced from the start (0: off)")
    p.add_argument("--messages", type=Path, default=Path(tempfile.gettempdir()) / "fxtui-bench-scale-5.pickle")
    a = p.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_collector_scale import load_recorded, record

    if not a.messages.exists():
        print("recording the program's messages …", flush=True)
        record(a.messages, 5)

    from fxtui.core.settings import ProgramSettings
    from fxtui.core.snapshot import State
    from fxtui.jobs import collector_gc, cross_node, heap_trim, rank_paces, rank_snapshots
    from fxtui.jobs.cross_node import Packers, _dumps, _local_ranks
    from fxtui.jobs.job_state import JobState
    from fxtui.wire.agent_messages import Hello, Step
    from fxtui.wire.job_link import NodeReport
    from fxtui.wire.sockets import Unpickler

    clock = [1000.0]
    program_time = types.SimpleNamespace(monotonic=lambda: clock[0], perf_counter=time.perf_counter,
                                         perf_counter_ns=time.perf_counter_ns, time=lambda: 1.7e9 + clock[0],
                                         thread_time=time.thread_time, sleep=time.sleep)  # fmt: skip
    for module in (collector_gc, cross_node, rank_paces, rank_snapshots):
        module.time = program_time  # type: ignore[attr-defined]
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MallInfo2
    if a.mmap_threshold:
        libc.mallopt(-3, a.mmap_threshold)  # M_MMAP_THRESHOLD: fixed, no longer raised by what is freed

    recorded = load_recorded(a.messages)
    hello = next(m for m in recorded if isinstance(m, Hello))
    hello = dataclasses.replace(hello, torch=str(hello.torch))
    steps = [m for m in recorded if isinstance(m, Step) and m.kind == "train"]
    again = [dataclasses.replace(s, nodes=[], roots=[]) for s in steps]  # a second pass describes nothing anew
    if a.trace:
        tracemalloc.start(a.trace)
    state = JobState(ProgramSettings(("sim.py",), warmup=2))
    collector_gc.take_over()
    for rank in range(a.ranks):
        data = pickle.dumps(dataclasses.replace(hello, pid=10_000_000 + rank, rank=rank, world_size=a.ranks))
        state.receive(Unpickler(io.BytesIO(data)).load(), rank)
    packers = Packers()
    halves = (range(0, a.ranks // 2), range(a.ranks // 2, a.ranks))
    next_report = clock[0] + REPORT_EVERY_S
    began = time.perf_counter()
    snapshots = passes = 0
    snapshot_s = 0.0
    trims: list[float] = []
    census: dict[int, collections.Counter[str]] = {}
    traced: dict[int, tracemalloc.Snapshot] = {}
    print(f"{a.ranks} ranks; load {os.getloadavg()[0]:.1f}; trim {a.trim}; mmap threshold {a.mmap_threshold or '-'}")
    print(f"{'min':>4} {'rss MB':>7} {'blocks':>9} {'heap MB':>8} {'in use':>7} {'free':>7} {'mapped':>7} "
          f"{'tracked':>8} {'real s':>7}  the collector's", flush=True)  # fmt: skip
    for tick in range(int(a.minutes * 60 * STEPS_PER_S)):
        pass_, at = divmod(tick, len(steps))
        base = (steps if pass_ == 0 else again)[at]
        data = pickle.dumps(dataclasses.replace(base, index=tick, start_ns=time.perf_counter_ns() - base.wall_ns))
        for half in halves:  # half the ranks' steps, a snapshot, the other half's, a snapshot: 0.25 s each
            for rank in half:
                state.receive(Unpickler(io.BytesIO(data)).load(), rank)
            clock[0] += 1 / STEPS_PER_S / 2
            t = time.perf_counter()
            state.snapshot(State.RUNNING)
            snapshot_s += time.perf_counter() - t
            snapshots += 1
            if clock[0] >= next_report:
                next_report = clock[0] + REPORT_EVERY_S
                with state.lock:
                    ranks = _local_ranks(state, packers, False)
                _dumps(NodeReport(1, "sim", tuple(ranks)))
            if collector_gc.collect_if_due():
                passes += 1
                if a.trim:
                    t = time.perf_counter()
                    heap_trim.trim()
                    trims.append(time.perf_counter() - t)
        if (tick + 1) % int(60 * STEPS_PER_S):
            continue
        minute = (tick + 1) // int(60 * STEPS_PER_S)
        heap = libc.mallinfo2()
        print(f"{minute:>4} {_rss_mb():>7.1f} {sys.getallocatedblocks():>9} {heap.arena / 1e6:>8.1f} "
              f"{heap.uordblks / 1e6:>7.1f} {heap.fordblks / 1e6:>7.1f} {heap.hblkhd / 1e6:>7.1f} "
              f"{len(gc.get_objects()) + gc.get_freeze_count():>8} {time.perf_counter() - began:>7.1f}  "
              f"{_sizes(state)}", flush=True)  # fmt: skip
        if minute in (3, a.minutes):
            census[minute] = _census()
            if a.trace:
                traced[minute] = tracemalloc.take_snapshot()
    print(f"{snapshots} snapshots, {snapshot_s / max(snapshots, 1) * 1e3:.1f} ms each (mean); {passes} full passes; "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    if trims:
        trims.sort()
        print(f"{len(trims)} trims: median {trims[len(trims) // 2] * 1e3:.1f} ms, worst {trims[-1] * 1e3:.1f} ms")
    if len(census) == 2:
        grew = census[a.minutes].copy()
        grew.subtract(census[3])
        print("tracked objects, minute 3 → the end:", ", ".join(f"{k} {v:+}" for k, v in grew.most_common(6) if v))
    if len(traced) == 2:
        print("grew most, minute 3 → the end (by line):")
        for stat in traced[a.minutes].compare_to(traced[3], "lineno")[:15]:
            print(f"  {stat.size_diff / 1e6:>+8.2f} MB {stat.count_diff:>+9} blocks  {stat.traceback[0]}")
    gc.unfreeze()
    print(f"garbage cycles held frozen at the end: {gc.collect()} objects")
    heap_trim.trim()
    print(f"RSS after a last trim: {_rss_mb():.1f} MB", flush=True)


if __name__ == "__main__":
    main()
