"""Where a training step's time goes when torch's intra-op pool shares the cores with other work: the stepping
thread's and the pool's time on a CPU, in the run queue and blocked, per step, quiet and beside busy processes.

    python tests/benchmarks/bench_pool_waits.py [--threads N] [--busy N] [--blocks N] [--steps N] [--program cnn]

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

With ``--program cnn`` it trains the corpus's CNN (``tests/programs/loader_workers.py``'s model, batches from a
DataLoader with two worker processes) instead, and splits each step into its fetch (``next()`` on the loader) and
its compute (forward, backward, optimizer), reading the stepping thread (time on a CPU, run-queue wait, blocked,
minor page faults) in each, and the worker processes' time on a CPU and wait over the step. Printed: what fxtui's
rule counts as waiting (the stepping thread's own wait, and the workers' wait while it was blocked, at most that
long) and what it leaves to the program's Python (the fetch's time on a CPU, and the time it was blocked beyond
the workers' wait: their own work, no longer hidden behind the step's), quiet and busy.

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


def thread_now(tid: int) -> tuple[int, int, int]:
    """One thread of this process: time on a CPU and run-queue wait so far (ns), and its minor page faults."""
    with open(f"/proc/self/task/{tid}/schedstat") as f:
        on_cpu, waiting = f.read().split()[:2]
    with open(f"/proc/self/task/{tid}/stat") as f:
        faults = int(f.read().rsplit(")", 1)[1].split()[7])
    return int(on_cpu), int(waiting), faults


def children_now(pids: list[int]) -> tuple[int, int]:
    """The worker processes' time on a CPU and run-queue wait so far (ns), every thread of each."""
    cpu = wait = 0
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    on_cpu, waiting = f.read().split()[:2]
            except OSError:
                continue
            cpu, wait = cpu + int(on_cpu), wait + int(waiting)
    return cpu, wait


def loader_main(a: argparse.Namespace) -> None:
    """The CNN from DataLoader workers: where its step's time goes, fetch and compute apart, quiet and busy."""
    import multiprocessing

    sys.path.insert(0, str(ROOT / "tests" / "programs"))
    import torch
    import torch.nn.functional as F
    from loader_workers import MadeImages, SmallCNN
    from torch.utils.data import DataLoader

    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = SmallCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    me = threading.get_native_id()
    # Columns: wall, fetch wall, fetch cpu, fetch wait, fetch blocked, fetch faults, compute wall, compute cpu,
    # compute wait, workers' cpu, workers' wait (ns; faults a count).
    rows: dict[bool, list[tuple[int, ...]]] = {False: [], True: []}
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    for block in range(a.blocks):
        busy = block % 2 == 1
        procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.busy if busy else 0)]
        try:
            # An epoch per block, as the program runs one: the workers start with it and prefetch two batches each.
            loader = DataLoader(MadeImages((a.steps + 3) * 32, 32, block), batch_size=32, num_workers=2)
            batches = iter(loader)
            pids = [c.pid for c in multiprocessing.active_children() if c.pid is not None]
            time.sleep(0.2)
            for i in range(a.steps + 2):
                t0, c0, k0 = time.perf_counter_ns(), thread_now(me), children_now(pids)
                x, y = next(batches)
                t1, c1 = time.perf_counter_ns(), thread_now(me)
                optimizer.zero_grad()
                F.cross_entropy(model(x), y).backward()
                optimizer.step()
                t2, c2, k2 = time.perf_counter_ns(), thread_now(me), children_now(pids)
                if i < 2:  # the first batches were made before the step asked: warm-up
                    continue
                fetch, compute = t1 - t0, t2 - t1
                fc, fw, ff = c1[0] - c0[0], c1[1] - c0[1], c1[2] - c0[2]
                cc, cw = c2[0] - c1[0], c2[1] - c1[1]
                blocked = max(0, fetch - fc - fw)
                rows[busy].append((t2 - t0, fetch, fc, fw, blocked, ff, compute, cc, cw, k2[0] - k0[0], k2[1] - k0[1]))
            del batches, loader
        finally:
            for proc in procs:
                proc.kill()
                proc.wait()
    load = os.getloadavg()[0]
    print(
        f"\nthreads {torch.get_num_threads()}, {a.steps * (a.blocks // 2)} steps quiet and as many beside {a.busy} busy"
    )
    names = (
        "wall",
        "fetch",
        "f cpu",
        "f wait",
        "f blocked",
        "faults",
        "compute",
        "c cpu",
        "c wait",
        "wk cpu",
        "wk wait",
    )
    print(f"{'':6} " + " ".join(f"{n:>9}" for n in names))
    for busy in (False, True):
        r = rows[busy]
        cells = [
            f"{statistics.median(x[i] for x in r):9.0f}"
            if i == 5
            else f"{statistics.median(x[i] for x in r) / 1e6:7.2f}ms"
            for i in range(len(names))
        ]
        print(f"{'busy' if busy else 'quiet':6} " + " ".join(cells))
    print(f"\n{'':6} {'waiting':>9} {'python':>9} {'f cpu':>9} {'blocked-beyond':>15} {'waiting%':>9} {'python%':>8}")
    for busy in (False, True):
        r = rows[busy]
        # fxtui's rule, per step: the stepping thread's own wait and the workers' wait while it was blocked.
        waiting = [x[3] + x[8] + min(x[4], x[10]) for x in r]
        beyond = [max(0, x[4] - x[10]) for x in r]  # blocked on the workers' own work: left to Python
        python = [x[2] + b for x, b in zip(r, beyond, strict=True)]
        print(
            f"{'busy' if busy else 'quiet':6} {statistics.median(waiting) / 1e6:7.2f}ms "
            f"{statistics.median(python) / 1e6:7.2f}ms {statistics.median(x[2] for x in r) / 1e6:7.2f}ms "
            f"{statistics.median(beyond) / 1e6:13.2f}ms "
            f"{100 * statistics.median(w / x[0] for w, x in zip(waiting, r, strict=True)):8.1f}% "
            f"{100 * statistics.median(p / x[0] for p, x in zip(python, r, strict=True)):7.1f}%"
        )
    print(f"\nload average after: {load:.2f}")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
    p.add_argument("--busy", type=int, default=2)
    p.add_argument("--blocks", type=int, default=6, help="blocks of steps, alternately quiet and busy")
    p.add_argument("--steps", type=int, default=12, help="steps per block")
    p.add_argument("--program", choices=("char_gpt", "cnn"), default="char_gpt")
    a = p.parse_args()
    if a.program == "cnn":
        loader_main(a)
        return
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
