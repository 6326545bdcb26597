"""Drill-down, hotspots, sorting, tree/table selection sync, help, the command palette, and the state behind them."""

from __future__ import annotations

import pytest
from fakes import FakeSource, graph_of, resnet_snapshot, settle, stats_of, tree_cursor, tree_entries
from textual.app import App, ComposeResult

from fxtui.core.filters import FilterSpec
from fxtui.core.nodes import NodeStats
from fxtui.ui.app import FxtuiApp
from fxtui.ui.navigation import filter_showing, hottest, step_hotspot
from fxtui.ui.screens.help import HelpScreen
from fxtui.ui.view_filter import DEFAULT_FILTER
from fxtui.ui.widgets.detail_pane import DetailPane
from fxtui.ui.widgets.module_tree import Entry
from fxtui.ui.widgets.node_table import NodeTable
from fxtui.ui.widgets.status_bar import StatusBar

pytestmark = pytest.mark.unit

SIZE = (120, 36)


def stats_of_medians(medians: dict[str, float]) -> dict[str, NodeStats]:
    return {name: NodeStats(10, m, m, m, m, m, 0.0, 1.0) for name, m in medians.items()}


def status(app: FxtuiApp) -> str:
    return str(app.main.query_one(StatusBar).render())


async def test_enter_on_a_module_scopes_the_table_and_backspace_goes_up() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        main = app.main
        assert not main.check_action("scope_up", ())
        main.module_tree.focus()
        await pilot.press(*["down"] * 6)  # root → conv1, bn1, relu, maxpool → layer1 → layer2
        assert tree_cursor(main.module_tree) == Entry("module", "layer2")
        await pilot.press("enter")
        assert main.scope == "layer2"
        assert all(graph_of(app).node(n).module_path.startswith("layer2") for n in main.table.row_names)
        assert len(main.table.row_names) == 16
        assert "view layer2" in status(app)
        assert main.check_action("scope_up", ())
        await pilot.press("backspace")
        assert main.scope == ""
        assert "conv1" in main.table.row_names


async def test_h_walks_the_hottest_path_down_to_one_node() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        main = app.main
        totals = main.module_tree.totals
        await pilot.press("h")
        assert main.scope == max(("layer1", "layer2", "layer3", "layer4"), key=lambda p: totals[p]) == "layer4"
        await pilot.press("h")
        assert main.scope == "layer4.0"
        await pilot.press("h")
        assert main.selected == "layer4_0_conv1"
        assert tree_cursor(main.module_tree) == Entry("node", "layer4_0_conv1")
        await pilot.press("h")  # at a node: stays
        assert main.selected == "layer4_0_conv1" and main.scope == "layer4.0"


async def test_n_and_N_step_through_hotspots_by_median() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        main = app.main
        await pilot.press("s")  # sort by p90: hotspots still go by median
        assert main.selected == main.table.row_names[0]
        order = sorted(main.view, key=lambda n: -stats_of(app)[n.name].median_s)
        main.select_node(order[0].name)
        await pilot.press("n")
        assert main.selected == order[1].name
        await pilot.press("n")
        assert main.selected == order[2].name
        await pilot.press("N")
        assert main.selected == order[1].name
        assert main.table.cursor_name == order[1].name


async def test_table_selection_reveals_the_node_in_the_tree_and_back() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        main = app.main
        await pilot.press("down")
        second = main.table.row_names[1]
        assert main.selected == second == "layer4_0_conv1"
        assert tree_cursor(main.module_tree) == Entry("node", second)
        assert "layer4_0_conv1" in tree_entries(main.module_tree)
        assert ("target", "Conv2d") in main.query_one(DetailPane).fields
        main.module_tree.focus()
        await pilot.press("down")  # next leaf in layer4.0
        assert tree_cursor(main.module_tree) == Entry("node", "layer4_0_bn1")
        assert main.selected == main.table.cursor_name == "layer4_0_bn1"
        assert "layer4_0_bn1" in str(main.query_one("#detail-title").render())


async def test_sort_keys_and_header_clicks() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        table = app.main.table
        await pilot.press("s")
        assert table.sort_key == "p90" and table.sort_descending
        assert "sort p90 ↓" in status(app)
        await pilot.press("S")
        assert not table.sort_descending
        p90 = [stats_of(app)[n].p90_s for n in table.row_names]
        assert p90 == sorted(p90)
        await pilot.click(NodeTable, offset=(1, 0))  # the "node" header
        assert table.sort_key == "node" and not table.sort_descending
        assert list(table.row_names) == sorted(table.row_names)
        await pilot.click(NodeTable, offset=(1, 0))
        assert table.sort_descending


async def test_clicking_a_row_selects_it() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.click(NodeTable, offset=(2, 3))
        assert app.main.selected == app.main.table.row_names[2]


async def test_help_lists_every_key_and_closes() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        keys = {key for _group, key, _description in app.screen.rows}
        for key in ("Space", "r", "Backspace", "h", "n", "N", "/", "t", "o", "Esc", "s", "S", "e", "d", "q", "?"):
            assert any(key in k.split(", ") for k in keys), key
        await pilot.press("escape")
        assert app.screen is app.main


async def test_footer_hides_keys_that_do_not_apply() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        active = {b.binding.action for b in app.screen.active_bindings.values() if b.enabled}
        assert "scope_up" not in active and "goto_error" not in active and "clear_filters" not in active
        assert "toggle_pause" in active
        await pilot.press("h")  # into layer4: going up now applies
        active = {b.binding.action for b in app.screen.active_bindings.values() if b.enabled}
        assert "scope_up" in active


async def test_command_palette_offers_the_app_actions() -> None:
    source = FakeSource()
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        for title in ("Pause / resume", "Reset statistics", "Hottest child", "Next hotspot", "Filter by module path"):
            assert title in commands
        assert "Up a module" not in commands  # does not apply at the root
        await commands["Pause / resume"].callback()
        assert source.calls == ["pause"]


async def test_d_toggles_the_detail_pane() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        detail = app.main.query_one("#detail")
        await pilot.press("d")
        assert not detail.display
        await pilot.press("d")
        assert detail.display


def test_hottest_picks_the_slowest_child_and_the_first_of_a_tie() -> None:
    stats = stats_of_medians({"a": 2e-3, "b": 5e-3})
    entries = [Entry("module", "m1"), Entry("node", "a"), Entry("module", "m2"), Entry("node", "b")]
    assert hottest(entries, {"m1": 4e-3, "m2": 6e-3}, stats) == Entry("module", "m2")
    assert hottest(entries, {"m1": 5e-3, "m2": 1e-3}, stats) == Entry("module", "m1")  # ties with b: first wins
    assert hottest([Entry("node", "unmeasured")], {}, stats) == Entry("node", "unmeasured")
    assert hottest([], {}, stats) is None


def test_hotspots_wrap_around_and_start_from_either_end() -> None:
    order = ["slow", "middle", "fast"]
    assert step_hotspot(order, "fast", 1) == "slow"
    assert step_hotspot(order, "slow", -1) == "fast"
    assert step_hotspot(order, "elsewhere", 1) == "slow"
    assert step_hotspot(order, None, -1) == "fast"
    assert step_hotspot([], None, 1) is None


def test_showing_a_node_widens_the_filter_only_as_far_as_needed() -> None:
    graph = resnet_snapshot().graph
    assert graph is not None
    bn = graph.node("layer1_0_bn1")
    assert filter_showing(bn, DEFAULT_FILTER) == DEFAULT_FILTER
    typed = FilterSpec(ops=DEFAULT_FILTER.ops, path="layer1*", types=frozenset({"BatchNorm2d"}))
    assert filter_showing(bn, typed) == typed
    only_functions = FilterSpec(ops=frozenset({"call_function"}), path="layer1*")
    assert filter_showing(bn, only_functions) == FilterSpec(
        ops=frozenset({"call_function", "call_module"}), path="layer1*"
    )
    elsewhere = FilterSpec(ops=DEFAULT_FILTER.ops, path="layer4*")
    assert filter_showing(bn, elsewhere) == DEFAULT_FILTER


async def test_state_set_from_code_shows_in_the_status_line_the_table_and_the_tree() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        main = app.main
        main.spec = FilterSpec(ops=DEFAULT_FILTER.ops, path="layer2*")
        main.scope = "layer2.1"
        main.sort = ("node", False)
        main.paused = True
        await pilot.pause()
        assert list(main.table.row_names) == sorted(main.table.row_names)
        paths = {graph_of(app).node(n).module_path for n in main.table.row_names}
        assert paths and all(p == "layer2.1" or p.startswith("layer2.1.") for p in paths)
        assert tree_entries(main.module_tree) == ["", "layer2"]  # the filter emptied every other branch
        line = status(app)
        for part in ("paused", "view layer2.1", f"· {len(main.table.row_names)}/", "path=layer2*", "sort node ↑"):
            assert part in line, part
        assert main.check_action("scope_up", ()) and main.check_action("clear_filters", ())


async def test_a_cursor_key_selects_in_its_own_handler() -> None:
    # The table's and the tree's cursor moves select before their handler returns, so the tree, the
    # table and the detail pane change in one repaint (a posted message was handled after a repaint).
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        main = app.main
        table, tree = main.table, main.module_tree
        table.action_cursor(1)
        assert main.selected == table.cursor_name == table.row_names[1]
        assert tree_cursor(tree) == Entry("node", table.row_names[1])
        tree.focus()
        await pilot.pause()
        before = main.selected
        tree.action_cursor_down()  # conv1 → bn1 of the same block
        entry = tree_cursor(tree)
        assert entry is not None and entry.kind == "node" and main.selected == entry.key != before
        assert table.cursor_name == entry.key and main.query_one(DetailPane).selected == entry.key


async def test_a_table_on_its_own_tells_its_owner_its_cursor_moves() -> None:
    class OneTable(App[None]):
        def __init__(self) -> None:
            super().__init__()
            self.moved: list[str] = []

        def compose(self) -> ComposeResult:
            yield NodeTable(on_highlight=self.moved.append)

    snapshot = resnet_snapshot()
    assert snapshot.graph is not None
    app = OneTable()
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(NodeTable)
        table.set_graph(snapshot.graph)
        table.set_nodes(snapshot.graph.nodes, snapshot.nodes)
        table.focus()
        await pilot.press("down", "down")
        assert app.moved == list(table.row_names[1:3])
