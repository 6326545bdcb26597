"""A module called at several shapes in one step: its row holds every call, and the header names its shapes."""

from __future__ import annotations

import pytest

from fxtui.core.op_nodes import EagerNode, OpTime, RootModule
from fxtui.core.program_run import STEP_PHASES
from fxtui.jobs.collector import Collector
from fxtui.jobs.kind_tally import KindTally, step_shapes
from fxtui.report.step_shapes_text import step_shapes_lines
from fxtui.wire.agent_messages import Step

pytestmark = pytest.mark.unit

WIDE, NARROW, LAST = "4×64×32×32", "4×32×32×32", "2×64×32×32"
PHASES = tuple(100 for _ in STEP_PHASES)


def reused_step(index: int, ops: list[OpTime], first: bool = False) -> Step:
    """A sampled training step of a model whose ``act`` (node 1) runs after layers of different widths."""
    nodes = [
        EagerNode(0, 0, "conv", "forward", "convolution", 1, "aten.convolution", WIDE),
        EagerNode(1, 0, "act", "forward", "relu", 1, "aten.relu", WIDE),
    ]
    roots = [RootModule(0, "Net", {"": "Net", "conv": "Conv2d", "act": "ReLU"})]
    return Step(index, "train", 10_000, PHASES, True, False, ops=ops, nodes=nodes if first else [],
                roots=roots if first else [])  # fmt: skip


def every_call(conv: int = 1000) -> list[OpTime]:
    return [(0, conv, WIDE, 0), (1, 300, WIDE, 1), (0, conv, WIDE, 2), (1, 200, WIDE, 3), (1, 100, NARROW, 4)]


def test_a_nodes_step_is_one_sample_holding_every_shape_it_ran_at() -> None:
    figures = KindTally("train")
    for i in range(5):
        figures.add(reused_step(i, every_call()))
    pick, others = figures.node_columns([0, 1])
    stats = figures.stats()
    assert round(stats.median[pick[1]] * 1e9) == 600  # 300 + 200 wide, 100 narrow: every step
    assert figures.calls_per_step(pick)[1] == 3
    assert figures.column_shapes(int(pick[1])) == f"{WIDE} + {NARROW}"
    assert others == {}  # every step alike: nothing listed apart


def test_a_step_at_other_shapes_is_still_kept_apart() -> None:
    """A last smaller batch: its steps are a column of their own, never mixed into the node's median."""
    figures = KindTally("train")
    for i in range(4):
        figures.add(reused_step(i, every_call()))
    figures.add(reused_step(4, [(0, 400, LAST, 0), (1, 100, LAST, 1)]))
    pick, others = figures.node_columns([0, 1])
    assert round(figures.stats().median[pick[1]] * 1e9) == 600
    assert [shape for shape, _n, _c in others[1]] == [f"{WIDE} + {NARROW}", LAST]


def test_step_shapes_name_a_few_and_say_there_are_more() -> None:
    assert step_shapes(["a"]) == "a"
    assert step_shapes(["a", "b", "c", "d"]) == "a + b + c + …"


def test_the_snapshot_names_the_nodes_and_the_header_says_the_row_holds_every_call() -> None:
    collector = Collector(("net.py",))
    for i in range(6):
        collector.receive(reused_step(i, every_call(conv=1000 + i), first=i == 0))
    snapshot = collector.snapshot()
    assert dict(snapshot.step_shapes) == {"act · relu": (WIDE, NARROW)}
    assert round(snapshot.nodes["act · relu"].median_s * 1e9) == 600  # every call's time, in the row the table sums
    (line,) = step_shapes_lines(snapshot.step_shapes, {"act · relu": 6e-7})
    assert f"act · relu at {WIDE}, {NARROW}" in line and "hold all of its calls" in line
    assert step_shapes_lines({}, {}) == []
