"""Filters by op type, module path and target type apply to the table and the tree and survive refreshes."""

from __future__ import annotations

import pytest
from fakes import FakeSource, graph_of, resnet_snapshot, settle, tree_entries
from textual.widgets import Input

from fxtui.core.filters import FilterSpec, matches, select
from fxtui.core.nodes import NodeInfo, module_ancestors
from fxtui.core.snapshot import OPCODES
from fxtui.ui import view_filter
from fxtui.ui.app import FxtuiApp
from fxtui.ui.screens.op_filter import OpFilterScreen
from fxtui.ui.view_filter import DEFAULT_FILTER, describe, shown_ops, with_ops
from fxtui.ui.widgets.status_bar import StatusBar

pytestmark = pytest.mark.unit

SIZE = (120, 36)


def status(app: FxtuiApp) -> str:
    return str(app.main.query_one(StatusBar).render())


def with_op_toggled(spec: FilterSpec, op: str) -> FilterSpec:
    """``spec`` with opcode ``op`` shown if it was hidden and hidden if it was shown."""
    shown = shown_ops(spec)
    return with_ops(spec, shown - {op} if op in shown else shown | {op})


def test_op_toggling_round_trips_and_describes_hidden_ops() -> None:
    spec = with_op_toggled(DEFAULT_FILTER, "placeholder")
    assert describe(spec) == "-output"
    spec = with_op_toggled(spec, "output")
    assert describe(spec) == "none" and not spec.active
    nothing = with_ops(spec, frozenset())
    assert describe(nothing) == " ".join("-" + op for op in OPCODES)


def test_shown_modules_keep_only_branches_with_matching_nodes() -> None:
    graph = resnet_snapshot().graph
    assert graph is not None
    expected = {""}
    for layer in ("layer2", "layer3", "layer4"):
        expected |= {layer, f"{layer}.0", f"{layer}.0.downsample", f"{layer}.0.downsample.0", f"{layer}.0.downsample.1"}
    assert view_filter.Shown.of(graph, FilterSpec(path="downsample")).modules == expected
    assert view_filter.Shown.of(graph, FilterSpec(path="nothing*")).modules == {""}


def enclosing_modules(nodes: list[NodeInfo]) -> set[str]:
    """The root and every module holding one of ``nodes`` in its subtree, walked up one node at a time."""
    return {""} | {path for n in nodes for path in module_ancestors(n.module_path)}


SPECS = [
    FilterSpec(),
    DEFAULT_FILTER,
    FilterSpec(path="layer[12]*"),
    FilterSpec(path="conv"),
    FilterSpec(path="nothing*"),
    FilterSpec(types=frozenset({"conv2d", "ADD"})),  # type names in any case, and a function's target
    FilterSpec(ops=frozenset({"call_function"}), path="layer4"),
    FilterSpec(ops=frozenset({"call_module"}), path="*.0.*", types=frozenset({"BatchNorm2d"})),
    FilterSpec(phases=frozenset({"forward"})),
]


@pytest.mark.parametrize("spec", SPECS, ids=map(describe, SPECS))
def test_selection_by_columns_is_what_matches_says_of_each_node(spec: FilterSpec) -> None:
    graph = resnet_snapshot().graph
    assert graph is not None
    expected = [n for n in graph.nodes if matches(n, spec)]
    assert select(graph.nodes, spec) == expected
    shown = view_filter.Shown.of(graph, spec)
    assert list(shown.nodes) == expected and shown.names == {n.name for n in expected}
    assert shown.modules == enclosing_modules(expected)


@pytest.mark.parametrize("spec", SPECS[2:8], ids=map(describe, SPECS[2:8]))
def test_filtered_tree_totals_sum_what_the_filter_lets_through(spec: FilterSpec) -> None:
    snapshot = resnet_snapshot()
    graph = snapshot.graph
    assert graph is not None
    expected: dict[str, float] = {}
    for n in select(graph.nodes, spec):
        for path in module_ancestors(n.module_path):
            expected[path] = expected.get(path, 0.0) + snapshot.nodes[n.name].median_s
    totals, backward = view_filter.tree_totals(snapshot, view_filter.Shown.of(graph, spec))
    assert backward == {}  # not a training step
    assert {p: totals[p] for p in expected} == pytest.approx(expected)
    assert all(totals[p] == 0.0 for p in graph.modules if p not in expected)


async def type_filter(pilot, key: str, text: str) -> None:
    await pilot.press(key)
    for char in text:
        await pilot.press(char)
    await pilot.press("enter")
    await pilot.pause()


async def test_path_glob_filters_table_and_tree_and_esc_clears_it() -> None:
    source = FakeSource()
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await type_filter(pilot, "", "layer[12]*")
        assert source.calls == []  # letters typed into the prompt (r, e …) are text, not keys
        main = app.main
        modules = {graph_of(app).node(n).module_path for n in main.table.row_names}
        assert modules and all(m.startswith(("layer1", "layer2")) for m in modules)
        assert tree_entries(main.module_tree) == ["", "layer1", "layer2"]
        # The tree's times count only what the filter lets through.
        totals = main.module_tree.totals
        assert totals[""] == pytest.approx(totals["layer1"] + totals["layer2"])
        assert "path=layer[12]*" in status(app)
        assert app.focused is main.table
        # The filter survives a refresh.
        source.push(resnet_snapshot(seq=2, scale=1.5))
        await settle(app, pilot, 2)
        assert {graph_of(app).node(n).module_path[:6] for n in main.table.row_names} == {"layer1", "layer2"}
        await pilot.press("escape")
        assert "path=" not in status(app)
        assert "conv1" in main.table.row_names


async def test_path_substring_and_esc_in_the_prompt_clears_it() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await type_filter(pilot, "slash", "downsample")
        rows = app.main.table.row_names
        assert sorted(rows) == sorted(f"layer{i}_0_downsample_{j}" for i in (2, 3, 4) for j in (0, 1))
        await pilot.press("slash")
        await pilot.press("escape")
        assert app.main.spec.path == ""
        assert not app.main.query_one(Input).display
        assert len(app.main.table.row_names) > 60


async def test_type_filter_keeps_one_target_type() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await type_filter(pilot, "t", "add")
        main = app.main
        assert {graph_of(app).node(n).type_name for n in main.table.row_names} == {"add"}
        assert len(main.table.row_names) == 8
        assert "type=add" in status(app)
        # Branches without an add disappear from the tree: the root's own nodes are gone.
        assert "conv1" not in tree_entries(main.module_tree)


async def test_op_filter_modal_shows_inputs_when_ticked() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("o")
        assert isinstance(app.screen, OpFilterScreen)
        await pilot.press("space")  # the first entry, placeholder
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is app.main
        assert "x" in app.main.table.row_names
        assert "-placeholder" not in status(app)
        assert "-output" in status(app)


async def test_op_filter_modal_escape_changes_nothing() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("o", "down", "down", "space", "escape")
        await pilot.pause()
        assert app.main.spec == DEFAULT_FILTER


async def test_hiding_call_module_hides_module_nodes() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.main.spec = FilterSpec(ops=frozenset({"call_function"}))
        await pilot.pause()
        assert sorted(app.main.table.row_names)[:2] == ["add", "add_1"]
        assert "flatten" in app.main.table.row_names
        assert all(graph_of(app).node(n).op == "call_function" for n in app.main.table.row_names)
