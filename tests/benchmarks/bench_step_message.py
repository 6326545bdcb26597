"""A sampled step's message to the collector, before (every op a tuple in ``Step.ops``) and now (per-node sums and
the first :data:`~fxtui.core.op_sums.RAW_OPS` ops raw, :mod:`fxtui.core.op_sums`).

    python tests/benchmarks/bench_step_message.py [--rounds 15] [--ops 1000 100000] [--nodes 120 400]

For each step size (``--ops``, over ``--nodes`` nodes, each op's shape its node's), three forms interleaved round by
round in one process, medians, the load average printed beside them: ``before`` (the step's op tuples sent as they
are), ``now`` (summed from the op tuples the namer resolves: the dispatch mode, a generated step, a native step of a
new shape) and ``arrays`` (summed from a native step's rows resolved as arrays, a step of a known shape):

- **bytes**: the pickled message (the socket's bytes, what the collector unpickles);
- **tracked**: objects the program's garbage collector tracks, more than before the step, once its message is built
  (and, now, its ops let go): what every collection scans until the message is sent;
- **build ms**: in the program, from the step's resolved ops to the message (``sums_of`` now; nothing before);
- **pickle ms**: in the program's sender thread, the message pickled;
- **gc ms**: one full collection of the program's garbage collector while the message waits in the sender's queue
  (the step's ops freshly made: young tuples, tracked until a collection untracks them; the whole heap of this
  process is scanned, so read the difference between the forms);
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

import numpy as np

from fxtui.core.op_nodes import EagerNode, OpTime, RootModule
from fxtui.core.op_sums import OpArrays, sums_of
from fxtui.jobs.collector import Collector
from fxtui.wire.agent_messages import Step

FORMS = ("before", "now", "arrays")


def step_ops(count: int, nodes: int, round_: int) -> list[OpTime]:
    """``count`` ops cycling over ``nodes`` nodes, as the namer resolves a loop's repeats (its shapes made afresh
    each step, as the namer's are)."""
    shapes = [f"{8 + round_ % 2}×{64 + n}" for n in range(nodes)]
    return [(i % nodes, 1_000 + (i * 7919) % 50_000, shapes[i % nodes], 10**12 + i * 2_000) for i in range(count)]


def as_arrays(ops: list[OpTime]) -> OpArrays:
    """The same ops as a native step of a known shape resolves them: arrays, the shape texts kept per row."""
    return OpArrays(
        np.array([o[0] for o in ops], dtype=np.int64),
        np.array([o[1] for o in ops], dtype=np.int64),
        [o[2] for o in ops],
        np.array([o[3] for o in ops], dtype=np.int64),
    )


def build(ops: list[OpTime] | OpArrays, form: str) -> Step:
    if form == "before":
        return Step(1, "train", 10**8, (0, 0, 0, 0, 0), True, False, ops)  # type: ignore[arg-type]
    return Step(1, "train", 10**8, (0, 0, 0, 0, 0), True, False, sums=sums_of(ops))


def tracked(count: int, nodes: int, form: str) -> int:
    """The objects a step's message leaves tracked by the garbage collector (its ops let go, now), counted with
    the collector off (a young tuple is tracked until a collection untracks it)."""
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects())
        ops: list[OpTime] | OpArrays = step_ops(count, nodes, 0)
        if form == "arrays":
            ops = as_arrays(ops)  # type: ignore[arg-type]
        message = build(ops, form)
        del ops
        kept = len(gc.get_objects()) - before
        assert message.sampled  # held until counted
        return kept
    finally:
        gc.enable()


def one(count: int, nodes: int, form: str, round_: int, collector: Collector) -> tuple[float, ...]:
    ops: list[OpTime] | OpArrays = step_ops(count, nodes, round_)
    if form == "arrays":
        ops = as_arrays(ops)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    m = build(ops, form)
    t1 = time.perf_counter()
    if form != "before":  # the agent lets the step's ops go once its message is built
        del ops
    t2 = time.perf_counter()
    data = pickle.dumps(m, protocol=pickle.HIGHEST_PROTOCOL)
    t3 = time.perf_counter()
    gc.collect()  # while the message waits in the sender's queue
    t4 = time.perf_counter()
    if form == "before":  # before, the ops went with the message, once sent
        del ops, m
    t5 = time.perf_counter()
    back = pickle.loads(data)
    t6 = time.perf_counter()
    collector.receive(back)
    t7 = time.perf_counter()
    free = (t5 - t4) if form == "before" else (t2 - t1)
    return len(data), (t1 - t0) * 1e3, (t3 - t2) * 1e3, (t4 - t3) * 1e3, free * 1e3, (t7 - t6) * 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--ops", type=int, nargs="+", default=[1_000, 100_000])
    p.add_argument("--nodes", type=int, nargs="+", default=[120, 400])
    a = p.parse_args()
    print(f"load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"{'ops':>8} {'form':>7} {'bytes':>10} {'tracked':>8} {'build ms':>9} {'pickle ms':>9} {'gc ms':>7} "
          f"{'free ms':>8} {'agent ms':>8} {'intake ms':>9}")  # fmt: skip
    for count, nodes in zip(a.ops, a.nodes, strict=True):
        made = [EagerNode(i, 0, f"m{i}", "forward", "linear", 1, "aten.linear") for i in range(nodes)]
        collectors = {}
        for form in FORMS:
            collectors[form] = c = Collector(("bench.py",), warmup=0)
            c.receive(Step(0, "train", 1, (0,) * 5, False, False, nodes=made, roots=[RootModule(0, "Net", {})]))
        rows: dict[str, list[tuple[float, ...]]] = {form: [] for form in FORMS}
        for r in range(a.rounds):
            for k in range(len(FORMS)):  # interleaved, each form first in turn
                form = FORMS[(r + k) % len(FORMS)]
                rows[form].append(one(count, nodes, form, r, collectors[form]))
        for form in FORMS:
            columns = list(zip(*rows[form], strict=True))
            size = int(statistics.median(columns[0]))
            built, pickled, collected, freed, intake = (statistics.median(c) for c in columns[1:])
            kept = tracked(count, nodes, form)
            agent = statistics.median(sum(r[1:5]) for r in rows[form])
            print(f"{count:>8} {form:>7} {size:>10,} {kept:>8,} {built:>9.2f} {pickled:>9.2f} {collected:>7.2f} "
                  f"{freed:>8.2f} {agent:>8.2f} {intake:>9.2f}")  # fmt: skip
        print(f"load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
