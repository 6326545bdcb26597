"""A sampled step's ops as the agent sends them (``core.op_sums``): per node Σ ns, calls and shapes key equal to what
the collector computed op by op, a bounded raw sample for the trace, and no Python object per op left behind."""

from __future__ import annotations

import gc
import io
import pickle
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fxtui.core.op_nodes import EagerNode, OpTime, RootModule
from fxtui.core.op_sums import MAX_STEP_SHAPES, RAW_OPS, OpArrays, sums_of
from fxtui.core.snapshot import State
from fxtui.jobs.collector import Collector
from fxtui.jobs.kind_tally import step_shapes
from fxtui.wire.agent_messages import Step
from fxtui.wire.sockets import Unpickler

pytestmark = pytest.mark.unit

SHAPES = ("8×32", "4×32", "8×64", "1", "2×2", "")
node_id = st.one_of(st.integers(0, 30), st.sampled_from([2**40, 2**41]))  # ids spread wide: made dense first
op = st.tuples(node_id, st.integers(0, 10**10), st.sampled_from(SHAPES), st.integers(0, 2**62))


def keys_op_by_op(ops: list[OpTime]) -> dict[int, str]:
    """Each node's shapes key as the collector made it from the raw ops before (``KindTally._new_layout``), in the
    order the nodes first ran."""
    seen: dict[int, list[str]] = {}
    for node, _ns, shape, _began in ops:
        kept = seen.get(node)
        if kept is None:
            seen[node] = [shape]
        elif shape not in kept and len(kept) <= MAX_STEP_SHAPES:
            kept.append(shape)
    return {node: step_shapes(shapes) for node, shapes in seen.items()}


@settings(max_examples=200, deadline=None, derandomize=True)
@given(ops=st.lists(op, max_size=300), raw=st.integers(0, 400))
def test_per_node_sums_equal_the_sum_of_the_raw_op_times(ops: list[OpTime], raw: int) -> None:
    sums = sums_of(ops, raw=raw)
    per_node: Counter[int] = Counter()
    calls: Counter[int] = Counter()
    for node, ns, _shape, _began in ops:
        per_node[node] += ns
        calls[node] += 1
    keys = keys_op_by_op(ops)
    nodes = sums.node_ids().tolist()
    assert nodes == list(keys)  # the order the nodes first ran: the order the collector makes new columns in
    assert dict(zip(nodes, sums.sums().tolist(), strict=True)) == dict(per_node)
    assert dict(zip(nodes, sums.call_counts().tolist(), strict=True)) == dict(calls)
    assert dict(zip(nodes, sums.shape_keys(), strict=True)) == keys
    assert sums.total_ns() == sum(ns for _, ns, _, _ in ops)
    assert sums.raw() == ops[:raw] and sums.left_out == max(len(ops) - raw, 0) and sums.ops == len(ops)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(ops=st.lists(op, max_size=300), raw=st.integers(0, 400))
def test_ops_as_arrays_give_the_sums_of_their_tuples(ops: list[OpTime], raw: int) -> None:
    """The native timer's rows of a known step (columns, no tuple per op) and the same ops as tuples: one message."""
    columns = [np.array([o[i] for o in ops], dtype=np.int64) for i in (0, 1, 3)]
    arrays = OpArrays(columns[0], columns[1], [o[2] for o in ops], columns[2])
    assert sums_of(arrays, raw=raw) == sums_of(ops, raw=raw)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(ops=st.lists(op, max_size=100))
def test_the_sums_cross_the_collector_s_unpickler_as_they_left(ops: list[OpTime]) -> None:
    sums = sums_of(ops)
    step = Step(0, "train", 1, (0,), True, False, sums=sums)
    back = Unpickler(io.BytesIO(pickle.dumps(step, protocol=pickle.HIGHEST_PROTOCOL))).load()
    assert back == step and back.node_sums().raw() == ops


def test_a_step_of_small_ops_crosses_in_fewer_bytes_than_its_ops_as_tuples() -> None:
    """A training step of ~1,000 small ops (850 nodes, each a few µs, some called twice): its per-node arrays travel
    in the narrowest integer types; sent with its ops raw it is about the tuples' size, without them (the sampled
    steps between two that carry raw ops) well under half."""
    ops = [(i % 850, 2_000 + 37 * i, SHAPES[i % 3], 10**12 + 5_000 * i) for i in range(1_000)]
    sums = sums_of(ops)
    assert sums.node_types == ("<i2", "<i4", "|i1", "|i1")
    twice = [2 * 2_000 + 37 * (i + i + 850) for i in range(2)]  # nodes 0 and 1: ops i and i + 850
    assert sums.node_ids().dtype == np.int64 and sums.sums().tolist()[:2] == twice
    size = {name: len(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
            for name, value in (("tuples", ops), ("raw", sums), ("sums", sums_of(ops, raw=0)))}  # fmt: skip
    assert size["raw"] < 1.15 * size["tuples"] and size["sums"] < 0.5 * size["tuples"], size
    assert sums_of(ops, raw=0).layout == sums.layout  # with or without raw ops, one layout for the collector


def test_a_sampled_step_without_raw_ops_leaves_the_trace_of_the_last_that_had_them() -> None:
    nodes = [EagerNode(i, 0, f"l{i}", "forward", "linear", 1, "aten.linear") for i in range(3)]
    collector = Collector(("train.py",), warmup=0)
    collector.receive(Step(0, "train", 1_000, (0,) * 5, False, False, nodes=nodes, roots=[RootModule(0, "Net", {})]))
    first = [(i % 3, 10, "8", 10**9 + i * 20) for i in range(30)]
    later = [(i % 3, 99, "8", 2 * 10**9 + i * 20) for i in range(30)]
    collector.receive(Step(1, "train", 2_000, (0,) * 5, True, False, sums=sums_of(first)))
    collector.receive(Step(2, "train", 2_000, (0,) * 5, True, False, sums=sums_of(later, raw=0)))
    assert [round(ns * 1e9) for _name, _began, ns in collector.trace()] == [10] * 30
    assert collector.trace_left_out() == 0
    assert collector.kinds["train"].sampled == 2  # its sums counted all the same


def test_a_kind_s_first_sampled_step_and_then_one_every_few_seconds_send_raw_ops(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from types import SimpleNamespace

    from fxtui.agent import agent as agent_module
    from fxtui.core.op_sums import RAW_EVERY_S

    now = [100.0]
    monkeypatch.setattr(agent_module.time, "monotonic", lambda: now[0])
    agent = SimpleNamespace(_raw_at={})
    due = []
    for at in (0.0, 1.0, RAW_EVERY_S - 0.1, RAW_EVERY_S, RAW_EVERY_S + 1):
        now[0] = 100.0 + at
        due.append(agent_module.Agent._raw_due(agent, "train"))  # type: ignore[arg-type]
    assert due == [True, False, False, True, False]
    assert agent_module.Agent._raw_due(agent, "eval")  # type: ignore[arg-type]  # each kind its own


def test_a_step_s_figures_from_its_sums_are_those_of_its_ops() -> None:
    """The same steps fed as raw ops (old form) and as the agent's sums give the same snapshot figures."""
    nodes = [EagerNode(i, 0, "fc", "forward" if i < 3 else "backward", "linear", i, "aten.linear") for i in range(6)]
    roots = [RootModule(0, "Net", {"fc": "Linear"})]
    rng = np.random.default_rng(4)
    steps = []
    for s in range(12):
        count = 40 if s != 7 else 41  # one step of an extra call: another layout
        ops = [
            (int(rng.integers(6)), int(rng.integers(1, 10**6)), "8×32" if s % 5 else "4×32", 0) for _ in range(count)
        ]
        steps.append(ops)
    snapshots = []
    for as_sums in (False, True):
        collector = Collector(("train.py",), warmup=0)
        for i, ops in enumerate(steps):
            first = dict(nodes=list(nodes), roots=list(roots)) if i == 0 else {}
            if as_sums:
                collector.receive(Step(i, "train", 2_000, (0,) * 5, True, False, sums=sums_of(ops), **first))
            else:
                collector.receive(Step(i, "train", 2_000, (0,) * 5, True, False, ops=ops, **first))
            collector.receive(Step(i, "train", 1_000, (0,) * 5, False, False))
        snapshots.append(collector.snapshot(State.DONE))
        assert collector.trace() and collector.trace_left_out() == 0
    old, new = snapshots
    for column in ("median_s", "calls_per_step"):
        assert np.array_equal(old.nodes.column(column), new.nodes.column(column), equal_nan=True)
    assert old.shapes == new.shapes and old.steps.phase_median_s == new.steps.phase_median_s


def tracked_after_a_message(count: int, nodes: int = 50, as_ops: bool = False) -> int:
    """The objects the garbage collector tracks, more than before, once a sampled step of ``count`` ops (over
    ``nodes`` nodes) is resolved and its message built, and the step's ops let go, as the agent does (``as_ops``: the
    message the agent sent before, every op a tuple in it).

    Counted with the collector off: a young tuple of ints and strings is tracked until a collection untracks it,
    and that first scan of every op's tuple is the cost to the program (a collection it runs while the message waits
    in the sender's queue)."""
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects())
        shapes = [f"8×{n}" for n in range(nodes)]
        ops = [(i % nodes, 1_000 + i, shapes[i % nodes], i) for i in range(count)]
        if as_ops:
            message = Step(0, "train", 1, (0,), True, False, ops=ops)
        else:
            message = Step(0, "train", 1, (0,), True, False, sums=sums_of(ops))
        del ops, shapes
        grown = len(gc.get_objects()) - before
    finally:
        gc.enable()
    assert message.node_sums().ops == count
    return grown


def test_the_tracked_objects_a_sampled_step_leaves_do_not_grow_with_its_ops() -> None:
    tracked_after_a_message(10)  # anything made once (numpy's caches) made before counting
    small, large = tracked_after_a_message(1_000), tracked_after_a_message(100_000)
    assert large - small < 10, (small, large)
    assert large < 50, large  # a handful of objects: the message, its tuples of shapes; none per op or per node
    # The counting sees per-op objects where there are: the old message's tuples.
    assert tracked_after_a_message(100_000, as_ops=True) > 100_000


def test_a_huge_step_sends_only_its_first_ops_raw_and_says_how_many_were_left_out() -> None:
    ops = [(i % 7, i, "4", i) for i in range(3 * RAW_OPS)]
    sums = sums_of(ops)
    assert sums.raw() == ops[:RAW_OPS] and sums.left_out == 2 * RAW_OPS
    small = pickle.dumps(sums_of(ops[: RAW_OPS + 7]))
    assert len(pickle.dumps(sums)) == len(small)  # beyond the sample, the bytes are the nodes', not the ops'


def test_a_trace_of_a_huge_step_is_drawn_from_its_first_ops_and_says_so() -> None:
    from fxtui.jobs.ranks import JobCollector
    from fxtui.report.chrome_trace import chrome_trace
    from fxtui.report.data import ReportData

    nodes = [EagerNode(i, 0, f"l{i}", "forward", "linear", 1, "aten.linear") for i in range(3)]
    job = JobCollector(("train.py",), warmup=0)
    job.receive(Step(0, "train", 1_000, (0,) * 5, False, False, nodes=nodes, roots=[RootModule(0, "Net", {})]))
    for count, index in ((RAW_OPS, 1), (RAW_OPS + 500, 2)):
        ops = [(i % 3, 10, "8", 10**9 + i * 20) for i in range(count)]
        job.receive(Step(index, "train", 2_000, (0,) * 5, True, False, sums=sums_of(ops)))
        snapshot = job.snapshot(State.DONE)
        (trace,) = snapshot.timelines.values()
        assert len(trace) == RAW_OPS
        names = [e["args"]["name"] for e in chrome_trace(ReportData.from_snapshot(snapshot))["traceEvents"]
                 if e["name"] == "process_name"]  # fmt: skip
        if count == RAW_OPS:  # the whole step: a plain trace
            assert snapshot.trace_left_out == {} and names == ["fxtui train.py"]
        else:
            assert snapshot.trace_left_out == {0: 500}
            assert names == [f"fxtui train.py (the step's first {RAW_OPS:,} ops drawn, 500 more left out)"]
