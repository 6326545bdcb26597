"""Where a training step's time goes when torch's intra-op pool shares the cores with other work: the stepping
thread's and the pool's time on a CPU, in the run queue and blocked, per step, quiet and beside busy processes.

    python tests/benchmarks/bench_pool_waits.py [--threads N] [--busy N] [--blocks N] [--steps N]

It trains the corpus's char-level GPT (``tests/programs/char_gpt.py``'s model) in this process, without fxtui,
and reads every thread's ``/proc/self/task/TID/schedstat`` around each step, in blocks that alternate quiet and
beside ``--busy`` plain Python loops. Printed per load (medians over the steps):

* the step's wall time; the stepping thread's time on a CPU, its run-queue wait, and the time it was blocked
  (neither); the other threads' wait and time on a CPU;
* the waiting share three rules give: the stepping thread's own wait; that plus the other threads' wait while it
  was blocked, at most that long (blind to a pool that spins); and fxtui's (:mod:`fxtui.jobs.thread_waits`, here
  per step rather than per second): the share of the step in which some thread waited, their waits taken as
  independent, ``1 − Π (1 − wait ÷ wall)`` over every thread;
* for each rule, the step's *running* time (wall less the waiting): a rule that counts every wait leaves it
  the same quiet and busy; and the share the step grew by, ``1 − quiet running ÷ busy wall``, beside the
  share the rule reports busy.

The machine is shared: print the load average beside the figures, as this script does.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
Row = tuple[int, int, int, int, int, int, int, int]
"""wall, own wait, own + others' while blocked, own cpu, blocked, others' wait, others' cpu, fxtui's (some waited)."""


def threads_now() -> dict[int, tuple[int, int]]:
    """Every thread of this process: time on a CPU and run-queue wait so far, ns."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                on_cpu, waiting = f.read().split()[:2]
            out[int(tid)] = (int(on_cpu), int(waiting))
        except (OSError, ValueError):
            continue
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
    p.add_argument("--busy", type=int, default=2)
    p.add_argument("--blocks", type=int, default=6, help="blocks of steps, alternately quiet and busy")
    p.add_argument("--steps", type=int, default=12, help="steps per block")
    a = p.parse_args()
    sys.path.insert(0, str(ROOT / "tests" / "programs"))
    import torch
    from char_gpt import CharGPT, Config

    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = CharGPT(Config(40, 64, 2, 4, 128))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randint(0, 40, (12, 64)), torch.randint(0, 40, (12, 64))

    def step() -> None:
        _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        loss.item()

    for _ in range(5):
        step()
    me = threading.get_native_id()
    rows: dict[bool, list[Row]] = {False: [], True: []}
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    for block in range(a.blocks):
        busy = block % 2 == 1
        procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.busy if busy else 0)]
        try:
            time.sleep(0.2)
            for _ in range(a.steps):
                before, t0 = threads_now(), time.perf_counter_ns()
                step()
                wall, after = time.perf_counter_ns() - t0, threads_now()
                d = {k: (after[k][0] - before[k][0], after[k][1] - before[k][1]) for k in after if k in before}
                own_cpu, own_wait = d[me]
                others_wait = sum(w for k, (_c, w) in d.items() if k != me)
                others_cpu = sum(c for k, (c, _w) in d.items() if k != me)
                blocked = max(0, wall - own_cpu - own_wait)
                rule = min(wall, own_wait + min(blocked, others_wait))
                free = 1.0
                for _c, w in d.values():  # no thread waiting, were their waits independent of one another
                    free *= max(0.0, 1.0 - w / wall)
                union = int(wall * (1.0 - free))
                rows[busy].append((wall, own_wait, rule, own_cpu, blocked, others_wait, others_cpu, union))
        finally:
            for proc in procs:
                proc.kill()
                proc.wait()
    load = os.getloadavg()[0]

    def ms(kept: list[Row], i: int) -> str:
        return f"{statistics.median(r[i] for r in kept) / 1e6:.1f}ms"

    def running(kept: list[Row], i: int) -> float:
        return statistics.median(r[0] - r[i] for r in kept)

    def share(kept: list[Row], i: int) -> float:
        return statistics.median(r[i] / r[0] for r in kept)

    print(
        f"\nthreads {torch.get_num_threads()}, {a.steps * (a.blocks // 2)} steps quiet and as many beside {a.busy} busy"
    )
    print(f"{'':6} {'wall':>9} {'own cpu':>8} {'own wait':>9} {'blocked':>8} {'others wait':>11} {'others cpu':>10}")
    for busy in (False, True):
        r = rows[busy]
        print(
            f"{'busy' if busy else 'quiet':6} {ms(r, 0):>9} {ms(r, 3):>8} {ms(r, 1):>9} {ms(r, 4):>8} {ms(r, 5):>11} "
            f"{ms(r, 6):>10}"
        )
    print(f"\n{'rule':<28} {'quiet':>6} {'busy':>6} {'running quiet':>13} {'running busy':>12} {'grown':>6}")
    q, b = rows[False], rows[True]
    rules = (("the stepping thread's wait", 1), ("+ others' while it blocked", 2), ("fxtui's: some thread waited", 7))
    for name, i in rules:
        grown = 1 - running(q, i) / statistics.median(r[0] for r in b)
        print(
            f"{name:<28} {100 * share(q, i):5.1f}% {100 * share(b, i):5.1f}% {running(q, i) / 1e6:11.1f}ms "
            f"{running(b, i) / 1e6:10.1f}ms {100 * grown:5.1f}%"
        )
    print(f"\nload average after: {load:.2f}")


if __name__ == "__main__":
    main()
