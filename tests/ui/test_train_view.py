"""A training step in the app: phase column and filter, backward time in the tree, gradients in the detail pane."""

from __future__ import annotations

import pytest
from fakes import FakeSource, resnet_snapshot, settle

from fxtui.core.filters import FilterSpec
from fxtui.core.nodes import NodeInfo, build_module_tree
from fxtui.core.snapshot import GraphInfo, Snapshot
from fxtui.ui import view_filter
from fxtui.ui.app import FxtuiApp
from fxtui.ui.demo.demo_source import make_snapshot
from fxtui.ui.widgets.detail_pane import DetailPane
from fxtui.ui.widgets.module_tree import Entry
from fxtui.ui.widgets.status_bar import StatusBar
from fxtui.ui.widgets.tree_labels import BACKWARD_BLOCK, bar

pytestmark = pytest.mark.unit

SIZE = (220, 40)  # wide enough for the tree's bars


def node(name: str, index: int, op: str, target: str, path: str, phase: str, **extra: object) -> NodeInfo:
    type_name = target.rpartition(".")[2]
    return NodeInfo(name, index, op, target, type_name, path, name, phase=phase, **extra)  # type: ignore[arg-type]


def training_snapshot() -> Snapshot:
    nodes = [
        node("x", 0, "placeholder", "x", "", "forward"),
        node("fc · addmm", 1, "call_function", "aten.addmm", "fc", "forward", gradients=("fc · ∇mm", "fc · ∇sum")),
        node("∇loss", 2, "placeholder", "tangents_1", "", "backward"),
        node("fc · ∇mm", 3, "call_function", "aten.mm", "fc", "backward"),
        node("fc · ∇sum", 4, "call_function", "aten.sum", "fc", "backward"),
        node("SGD.step", 5, "call_module", "OptimizerStep", "", "optimizer"),
        node("zero_grad", 6, "call_module", "ZeroGrad", "", "optimizer"),
    ]
    graph = GraphInfo(
        model="tiny",
        inputs=("2×4",),
        dtype="float32",
        threads=1,
        nodes=tuple(nodes),
        modules=build_module_tree(nodes, {"": "Net", "fc": "Linear"}),
        capture="train",
        training=True,
        loss="cross-entropy",
        optimizer="SGD(lr=0.001)",
    )
    return make_snapshot(graph, [0.5, 100.0, 0.5, 150.0, 50.0, 30.0, 5.0])


def phases_shown(app: FxtuiApp) -> set[str]:
    graph = app.main.graph
    assert graph is not None
    return {graph.node(n).phase for n in app.main.table.row_names}


def test_the_bar_shades_the_backward_part() -> None:
    assert bar(0.5, width=8, backward=0.25) == "██" + BACKWARD_BLOCK * 2 + "    "
    assert BACKWARD_BLOCK not in bar(0.5, width=8)


async def test_phase_column_filter_tree_and_gradients() -> None:
    app = FxtuiApp(FakeSource([training_snapshot()]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        main = app.main
        assert "phase" in [c.key for c in main.table.columns]
        assert main.table.cell_text("fc · ∇mm", "phase") == "backward"
        assert phases_shown(app) == {"forward", "backward", "optimizer"}
        assert "Filter by phase" in {c.title for c in app.get_system_commands(app.screen)}
        for expected in ("forward", "backward", "optimizer"):
            await pilot.press("p")
            await pilot.pause()
            assert phases_shown(app) == {expected}
            assert f"phase={expected}" in str(main.query_one(StatusBar).render())
        await pilot.press("p")
        await pilot.pause()
        assert phases_shown(app) == {"forward", "backward", "optimizer"}
        # The tree's bar shades the backward part of fc's time.
        tree = main.module_tree
        assert tree.backward["fc"] > 0
        label = tree.label_text(Entry("module", "fc"))
        assert BACKWARD_BLOCK in label
        # fc: forward 100 µs, backward 150 + 50 µs: two thirds of its time is its gradients.
        assert label.rstrip().endswith(f"{BACKWARD_BLOCK} 67%"), label
        # A forward node's detail names its gradients and their time.
        main.select_node("fc · addmm")
        await pilot.pause()
        fields = dict((label, value) for label, value in main.query_one(DetailPane).fields if label)
        assert fields["phase"] == "forward"
        assert fields["gradients"].endswith("in 2 backward nodes")
        shown = [value for label, value in main.query_one(DetailPane).fields if not label]
        assert any("fc · ∇mm" in line for line in shown)


async def test_inference_has_no_phase_column_or_key() -> None:
    app = FxtuiApp(FakeSource([resnet_snapshot()]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert "phase" not in [c.key for c in app.main.table.columns]
        assert app.main.check_action("cycle_phase", ()) is False


def test_a_filtered_tree_counts_the_backward_part_of_what_it_shows() -> None:
    snapshot = training_snapshot()
    graph = snapshot.graph
    assert graph is not None
    shown = view_filter.Shown.of(graph, FilterSpec(path="fc"))
    totals, backward = view_filter.tree_totals(snapshot, shown)
    assert totals["fc"] == pytest.approx((100.0 + 150.0 + 50.0) * 1e-6)  # addmm and its two gradients
    assert backward["fc"] == pytest.approx((150.0 + 50.0) * 1e-6)
    assert totals[""] == totals["fc"]  # the root holds only what the filter lets through
