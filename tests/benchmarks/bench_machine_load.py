"""What fxtui run's machine-load sample costs the collector, and whether it tells a loaded machine from a quiet one.

    python tests/benchmarks/bench_machine_load.py [SECONDS]   # default 10

Starts a stand-in program (a process with a busy thread and a DataLoader-like child), then samples it
with :class:`fxtui.jobs.machine_load.MachineLoad` once a second for SECONDS quiet, then SECONDS with two
other busy processes on the machine. Printed: the median and the worst cost of one ``sample()`` (the
collector pays it once a second), the quiet and the loaded phase's lost shares, and each phase's summary
line. Needs the machine to itself apart from the load it makes.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

from fxtui.jobs.machine_load import MachineLoad

PROGRAM = """
import multiprocessing as mp, threading, time
def spin():
    while True: sum(range(1000))
if __name__ == "__main__":
    mp.Process(target=spin, daemon=True).start()
    threading.Thread(target=spin, daemon=True).start()
    time.sleep(3600)
"""
BUSY = "while True: pass"


def phase(load: MachineLoad, seconds: float, costs: list[float]) -> list[float]:
    shares = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(1.0)
        t0 = time.perf_counter()
        interval = load.sample()
        costs.append(time.perf_counter() - t0)
        if interval is not None:
            shares.append(interval.lost_share)
    return shares


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    program = subprocess.Popen([sys.executable, "-c", PROGRAM])
    others: list[subprocess.Popen[bytes]] = []
    try:
        time.sleep(1.0)  # the program's child has started
        costs: list[float] = []
        quiet_load = MachineLoad((program.pid,))
        quiet_load.sample()
        quiet = phase(quiet_load, seconds, costs)
        quiet_summary = quiet_load.summary()
        others = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(2)]
        loaded_load = MachineLoad((program.pid,))
        loaded_load.sample()
        loaded = phase(loaded_load, seconds, costs)
        loaded_summary = loaded_load.summary()
    finally:
        for p in (*others, program):
            p.kill()
            p.wait()
    costs.sort()
    print(f"sample() cost: median {1e3 * statistics.median(costs):.2f} ms, worst {1e3 * costs[-1]:.2f} ms "
          f"({len(costs)} samples)")  # fmt: skip
    for name, shares, summary in (("quiet", quiet, quiet_summary), ("loaded", loaded, loaded_summary)):
        print(f"{name:<7} lost share median {statistics.median(shares):.1%}, max {max(shares):.1%}; "
              f"{summary.disturbed_intervals} of {summary.intervals} intervals disturbed; "
              f"others {summary.others_cores:.2f} cores, program {summary.program_cores:.2f}")  # fmt: skip
        print(f"        {summary.line() or '(quiet: no line)'}")


if __name__ == "__main__":
    main()
