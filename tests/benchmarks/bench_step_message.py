"""A sampled step's message to the collector, before (every op a tuple in ``Step.ops``) and now (per-node sums and
the first :data:`~fxtui.core.op_sums.RAW_OPS` ops raw, :mod:`fxtui.core.op_sums`).

    python tests/benchmarks/bench_step_message.py [--rounds 15] [--ops 1000 100000] [--nodes 120 400]

For each step size (``--ops``, over ``--nodes`` nodes, each op's shape its node's, a few nodes at two shapes), the
two forms interleaved round by round in one process, medians, the load average printed beside them:

- **bytes**: the pickled message (the socket's bytes, what the collector unpickles);
- **build ms**: in the program, from the step's resolved ops to the message (``sums_of`` now; nothing before);
- **pickle ms**: in the program's sender thread, the message pickled;
- **gc ms**: one full collection of the program's garbage collector while the message waits in the sender's queue
  (the step's ops freshly made: young tuples, tracked until a collection untracks them);
- **free ms**: the step's ops let go (now: once the message is built; before: with the message, once sent);
- **agent ms**: the four above, in the program's process (median of each round's sum);
- **intake ms**: the collector's ``receive`` of the unpickled message (a repeated layout: the steady state).

The "before" collector summed the raw ops itself; here it takes the old form through ``Step.node_sums`` (the agent no
longer sends it), so its intake column is today's code on the old message, not the old code.
"""

from __future__ import annotations

import argparse
import gc
import os
import pickle
import statistics
import time

from fxtui.core.op_nodes import EagerNode, OpTime, RootModule
from fxtui.core.op_sums import sums_of
from fxtui.jobs.collector import Collector
from fxtui.wire.agent_messages import Step


def step_ops(count: int, nodes: int, round_: int) -> list[OpTime]:
    """``count`` ops cycling over ``nodes`` nodes, as the namer resolves a loop's repeats (its shapes made afresh
    each step, as the namer's are)."""
    shapes = [f"{8 + round_ % 2}×{64 + n}" for n in range(nodes)]
    return [(i % nodes, 1_000 + (i * 7919) % 50_000, shapes[i % nodes], 10**12 + i * 2_000) for i in range(count)]


def message(ops: list[OpTime], new: bool) -> Step:
    if new:
        return Step(1, "train", 10**8, (0, 0, 0, 0, 0), True, False, sums=sums_of(ops))
    return Step(1, "train", 10**8, (0, 0, 0, 0, 0), True, False, ops)


def one(count: int, nodes: int, new: bool, round_: int, collector: Collector) -> tuple[float, ...]:
    ops = step_ops(count, nodes, round_)
    t0 = time.perf_counter()
    m = message(ops, new)
    t1 = time.perf_counter()
    if new:  # the agent lets the step's ops go once its message is built
        del ops
    t2 = time.perf_counter()
    data = pickle.dumps(m, protocol=pickle.HIGHEST_PROTOCOL)
    t3 = time.perf_counter()
    gc.collect()  # while the message waits in the sender's queue
    t4 = time.perf_counter()
    if not new:  # before, the ops went with the message, once sent
        del ops, m
    t5 = time.perf_counter()
    back = pickle.loads(data)
    t6 = time.perf_counter()
    collector.receive(back)
    t7 = time.perf_counter()
    free = (t2 - t1) if new else (t5 - t4)
    return len(data), (t1 - t0) * 1e3, (t3 - t2) * 1e3, (t4 - t3) * 1e3, free * 1e3, (t7 - t6) * 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--ops", type=int, nargs="+", default=[1_000, 100_000])
    p.add_argument("--nodes", type=int, nargs="+", default=[120, 400])
    a = p.parse_args()
    print(f"load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"{'ops':>8} {'form':>7} {'bytes':>10} {'build ms':>9} {'pickle ms':>9} {'gc ms':>7} {'free ms':>8} "
          f"{'agent ms':>8} {'intake ms':>9}")  # fmt: skip
    for count, nodes in zip(a.ops, a.nodes, strict=True):
        made = [EagerNode(i, 0, f"m{i}", "forward", "linear", 1, "aten.linear") for i in range(nodes)]
        collectors = {}
        for new in (False, True):
            collectors[new] = c = Collector(("bench.py",), warmup=0)
            c.receive(Step(0, "train", 1, (0,) * 5, False, False, nodes=made, roots=[RootModule(0, "Net", {})]))
        rows: dict[bool, list[tuple[float, ...]]] = {False: [], True: []}
        for r in range(a.rounds):
            for new in (r % 2 == 0, r % 2 == 1):  # interleaved, each form first every other round
                rows[new].append(one(count, nodes, new, r, collectors[new]))
        for new in (False, True):
            columns = list(zip(*rows[new], strict=True))
            size = int(statistics.median(columns[0]))
            build, pickled, collected, freed, intake = (statistics.median(c) for c in columns[1:])
            agent = statistics.median(sum(r[1:5]) for r in rows[new])
            form = "now" if new else "before"
            print(f"{count:>8} {form:>7} {size:>10,} {build:>9.2f} {pickled:>9.2f} {collected:>7.2f} {freed:>8.2f} "
                  f"{agent:>8.2f} {intake:>9.2f}")  # fmt: skip
        print(f"load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
