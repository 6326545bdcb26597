"""Module totals: the session's tensor roll-up adds up exactly what the plain one does."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

from fxtui.core.rollup import ModulePlan, module_stats
from fxtui.measure.inputs import Inputs
from fxtui.measure.pipeline import run_profile, session_for_module
from fxtui.measure.targets import LoadedModel

pytestmark = pytest.mark.unit


class Nested(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 8), nn.Sequential(nn.ReLU(), nn.Linear(8, 8)))
        self.head = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x) + x)


@pytest.mark.parametrize("train", [False, True])
def test_the_snapshot_module_totals_match_the_plain_roll_up(train: bool) -> None:
    loaded = LoadedModel(module=Nested(), inputs=Inputs((torch.randn(4, 8),)), name="nested", dtype="float32")
    session = session_for_module(loaded, analyse=False, train=train, keep_disturbed=True)
    run_profile(session, 3, 1)
    snap = session.snapshot()
    graph = snap.graph
    assert graph is not None
    run = snap.run_median_s or 1.0
    plain = module_stats(graph.nodes, graph.modules, snap.nodes, run)
    assert set(snap.modules) == set(plain) and "body.1" in plain
    for path, expected in plain.items():
        got = snap.modules[path]
        for field in dataclasses.fields(expected):
            assert getattr(got, field.name) == pytest.approx(getattr(expected, field.name), rel=1e-9, abs=1e-15)
    root = snap.modules[""]
    assert root.inclusive_s == pytest.approx(sum(s.median_s for s in snap.nodes.values()))
    if train:
        assert root.forward_s > 0 and root.backward_s > 0


def test_a_module_without_nodes_passes_its_children_on_to_its_nearest_ancestor() -> None:
    @dataclasses.dataclass
    class Node:
        name: str
        module_path: str
        phase: str = "forward"

    nodes = [Node("a", "x.y.z"), Node("b", "x"), Node("c", "")]
    plan = ModulePlan(nodes, ["", "x", "x.y.z"])  # "x.y" is not on the tree
    assert list(plan.roll_up([1.0, 2.0, 4.0])) == [7.0, 3.0, 1.0]
    own, inclusive, forward, backward = plan.totals([1.0, 2.0, 4.0])
    assert list(own) == [4.0, 2.0, 1.0] and list(inclusive) == [7.0, 3.0, 1.0]
    assert forward is not None and list(forward) == [7.0, 3.0, 1.0]
    assert backward is not None and list(backward) == [0.0] * 3


def test_each_module_lists_the_nodes_of_its_subtree() -> None:
    loaded = LoadedModel(module=Nested(), inputs=Inputs((torch.randn(4, 8),)), name="nested", dtype="float32")
    graph = session_for_module(loaded, analyse=False).snapshot().graph
    assert graph is not None
    plan = graph.module_plan
    flat, offsets = plan.subtree_nodes()
    for i, path in enumerate(plan.paths):
        below = [n for n in graph.nodes if path in ("", n.module_path) or n.module_path.startswith(path + ".")]
        inside = [n.index for n in below]
        assert list(flat[offsets[i] : offsets[i + 1]]) == inside, path
    assert offsets[-1] == len(flat) and offsets[1] - offsets[0] == len(graph.nodes)  # the root holds every node


def test_a_generations_modules_carry_their_prefill_and_decode_exactly() -> None:
    from fxtui.core.column_table import ColumnTable

    @dataclasses.dataclass
    class Node:
        name: str
        module_path: str
        phase: str

    nodes = [Node("p1", "mlp", "prefill"), Node("d1", "mlp", "decode"), Node("d2", "", "decode")]
    plan = ModulePlan(nodes, ["", "mlp"])
    assert plan.generating
    medians = {"p1": 4e-3, "d1": 1e-3, "d2": 0.5e-3}
    stats = {n: _stats(s) for n, s in medians.items()}  # a mapping, not in graph order
    table = module_stats(nodes, ["", "mlp"], stats, run_s=0.02, plan=plan)
    root, mlp = table[""], table["mlp"]
    assert (mlp.prefill_s, mlp.decode_s) == (4e-3, 1e-3) and (root.prefill_s, root.decode_s) == (4e-3, 1.5e-3)
    assert mlp.forward_s == 0.0 and mlp.backward_s == 0.0  # a generation has no forward and backward phases
    assert mlp.pct == 100.0 * 5e-3 / 0.02 and root.inclusive_s == 5.5e-3 and root.self_s == 0.5e-3
    # A node the statistics do not have yet counts as nothing.
    assert list(plan.medians({"p1": _stats(4e-3)})) == [4e-3, 0.0, 0.0]
    assert not isinstance(stats, ColumnTable)


def test_module_depths_order_the_tree_deepest_first() -> None:
    @dataclasses.dataclass
    class Node:
        name: str
        module_path: str
        phase: str = "forward"

    plan = ModulePlan([Node("a", "x.y")], ["", "x", "x.y"])
    assert plan.depth == [0, 1, 2]


def _stats(median_s: float):  # type: ignore[no-untyped-def]
    from fxtui.core.nodes import NodeStats

    return NodeStats(1, median_s, median_s, median_s, median_s, median_s, 0.0, 0.0)
