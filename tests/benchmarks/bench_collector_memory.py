"""What a collector of hundreds of ranks keeps, step after step: its memory after the first minute and later.

    python tests/benchmarks/bench_collector_memory.py                     # 256 ranks, 1 and 10 minutes of steps
    python tests/benchmarks/bench_collector_memory.py --ranks 64 --minutes 1 5 20 --trace

In this process, no sockets: :class:`~fxtui.jobs.job_state.JobState` is fed the recorded messages of
``bench_collector_scale.py`` (its pickle; recorded first when absent) for ``--ranks`` ranks at 2 steps a second of the
program's time, as fast as it takes them, with a snapshot every 120 messages a rank (a viewer's). At each of
``--minutes`` (of the program's time) it prints the RSS and the collector's own sizes; ``--trace`` diffs
``tracemalloc``'s snapshots between the first mark and the last, by line, the lines that grew most first.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import pickle
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

STEPS_PER_S = 2.0


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=256)
    p.add_argument("--minutes", type=float, nargs="*", default=[1.0, 10.0], help="marks, in the program's minutes")
    p.add_argument("--trace", action="store_true", help="diff tracemalloc between the first mark and the last")
    p.add_argument("--messages", type=Path, default=Path(tempfile.gettempdir()) / "fxtui-bench-scale-5.pickle")
    p.add_argument("--all-ops", action="store_true", help="ranks outside a large job's sample send their ops too")
    a = p.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_collector_scale import load_recorded, record, untimed

    if not a.messages.exists():
        print("recording the program's messages …", flush=True)
        record(a.messages, 5)

    from fxtui.core.settings import ProgramSettings
    from fxtui.core.snapshot import State
    from fxtui.jobs.job_state import JobState
    from fxtui.wire.agent_messages import Hello, Step
    from fxtui.wire.rank_sample import times_ops

    recorded = load_recorded(a.messages)
    hello = next(m for m in recorded if isinstance(m, Hello))
    hello = dataclasses.replace(hello, torch=str(hello.torch))
    steps = [m for m in recorded if isinstance(m, Step) and m.kind == "train"]
    again = [dataclasses.replace(s, nodes=[], roots=[]) for s in steps]
    # As the agents send them: each message its own bytes, read back as the collector reads them.
    first = [pickle.dumps(s) for s in steps]
    later = [pickle.dumps(s) for s in again]
    # A rank outside the sample (above 256 ranks) as its agent sends its steps: no ops.
    first_untimed = [pickle.dumps(s) for s in untimed(steps)]
    later_untimed = [pickle.dumps(s) for s in untimed(again)]
    timed = [a.all_ops or times_ops(rank, a.ranks) for rank in range(a.ranks)]
    state = JobState(ProgramSettings(("sim.py",), warmup=2))
    for rank in range(a.ranks):
        state.receive(dataclasses.replace(hello, pid=10_000_000 + rank, rank=rank, world_size=a.ranks), rank)
    marks = sorted(int(m * 60 * STEPS_PER_S) for m in a.minutes)
    if a.trace:
        tracemalloc.start(4)
    traced = None
    began = time.perf_counter()
    print(f"{a.ranks} ranks; load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"{'minute':>7} {'steps':>6} {'rss':>8} {'taken s':>8}  timeline steps kept (rank 0)", flush=True)
    for tick in range(marks[-1]):
        pass_, at = divmod(tick, len(steps))
        data = (first if pass_ == 0 else later)[at]
        data_untimed = (first_untimed if pass_ == 0 else later_untimed)[at]
        for rank in range(a.ranks):
            message = pickle.loads(data if timed[rank] else data_untimed)
            state.receive(dataclasses.replace(message, index=tick) if pass_ else message, rank)
        if tick % 120 == 119:
            state.snapshot(State.RUNNING)
        if tick + 1 in marks:
            gc.collect()
            figures = state.collector.agents[0].kinds["train"]
            print(f"{(tick + 1) / STEPS_PER_S / 60:>7.1f} {tick + 1:>6} {_rss_mb():>7.0f}M "
                  f"{time.perf_counter() - began:>8.1f}  {len(figures.timeline)}", flush=True)  # fmt: skip
            if a.trace:
                now = tracemalloc.take_snapshot()
                if traced is None:
                    traced = now
                else:
                    print("grew most, between the first mark and this one (by line):")
                    for stat in now.compare_to(traced, "lineno")[:12]:
                        print(f"  {stat.size_diff / 1e6:>+8.1f} MB {stat.count_diff:>+9} blocks  {stat.traceback[0]}")


if __name__ == "__main__":
    sys.exit(main())
