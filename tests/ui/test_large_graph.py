"""A graph of 10,000 nodes through the app, as a live session sends it (statistics as columns).

The case of the scale issue: an ``nn.Sequential`` of 10,000 layers puts 10,000 entries under
the tree's root. These tests check behaviour, not time (bench_keys_live.py and bench_ui.py
print the figures).
"""

from __future__ import annotations

import pytest
from fakes import LAYERS, SIZE, FakeSource, as_sent, sequential_graph, settle, started, tree_cursor

from fxtui.core.column_table import ColumnTable
from fxtui.core.filters import FilterSpec
from fxtui.ui.app import FxtuiApp
from fxtui.ui.demo.demo_source import make_snapshot
from fxtui.ui.widgets.module_tree import Entry

pytestmark = pytest.mark.unit


async def test_ten_thousand_layers_fill_the_table_and_the_tree_in_order() -> None:
    graph, medians = sequential_graph()
    app = FxtuiApp(FakeSource([as_sent(make_snapshot(graph, medians))]))
    async with app.run_test(size=SIZE) as pilot:
        app = await started(pilot)
        main = app.main
        assert isinstance(main.snapshot and main.snapshot.nodes, ColumnTable)
        table, tree = main.table, main.module_tree
        assert len(table.row_names) == LAYERS
        stats = main.snapshot.nodes if main.snapshot else {}
        medians_shown = [stats[name].median_s for name in table.row_names]
        assert medians_shown == sorted(medians_shown, reverse=True)
        assert tree.last_line == LAYERS  # the root and one line per layer, each layer shown as its node
        assert tree.entry_at(1) == Entry("node", "_0") and tree.entry_at(LAYERS) == Entry("node", f"_{LAYERS - 1}")
        assert f"{LAYERS}/{LAYERS + 2} nodes" in str(main.query_one("#status").render())


async def test_the_cursor_and_the_scroll_survive_refreshes_that_reorder_every_row() -> None:
    graph, medians = sequential_graph()
    source = FakeSource([as_sent(make_snapshot(graph, medians))])
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        app = await started(pilot)
        main, table = app.main, app.main.table
        for _ in range(3):
            await pilot.press("pagedown")
        await pilot.press("down")
        chosen = table.cursor_name
        assert chosen is not None and main.selected == chosen
        for i in range(3):
            # Every median changes, differently per node: the order changes, the cursor stays on its node.
            shuffled = [m * (1.0 + 0.3 * (((k * 7 + i) % 11) / 11)) for k, m in enumerate(medians)]
            source.push(as_sent(make_snapshot(graph, shuffled, seq=i + 2)))
            await settle(app, pilot, i + 2)
            assert table.cursor_name == chosen and main.selected == chosen
            stats = main.snapshot.nodes if main.snapshot else {}
            assert stats[chosen].median_s == shuffled[graph.node(chosen).index] * 1e-6
            assert tree_cursor(main.module_tree) == Entry("node", chosen)


async def test_a_path_filter_and_its_clearing_on_ten_thousand_layers() -> None:
    graph, medians = sequential_graph()
    app = FxtuiApp(FakeSource([as_sent(make_snapshot(graph, medians))]))
    async with app.run_test(size=SIZE) as pilot:
        app = await started(pilot)
        main = app.main
        await pilot.press("slash", *"999", "enter")
        await pilot.pause()
        expected = {f"_{i}" for i in range(LAYERS) if "999" in str(i)}
        assert set(main.table.row_names) == expected
        tree = main.module_tree
        assert {tree.entry_at(line).key for line in range(1, tree.last_line + 1)} == expected  # type: ignore[union-attr]
        stats = main.snapshot.nodes if main.snapshot else {}
        assert tree.totals[""] == pytest.approx(sum(stats[name].median_s for name in expected))  # only those
        await pilot.press("escape")
        await pilot.pause()
        assert main.spec == FilterSpec(ops=main.spec.ops)
        assert len(main.table.row_names) == LAYERS and main.module_tree.last_line == LAYERS


async def test_sorting_by_a_text_column_and_stepping_through_hotspots() -> None:
    graph, medians = sequential_graph()
    app = FxtuiApp(FakeSource([as_sent(make_snapshot(graph, medians))]))
    async with app.run_test(size=SIZE) as pilot:
        app = await started(pilot)
        main = app.main
        stats = main.snapshot.nodes if main.snapshot else {}
        slowest = sorted(stats, key=lambda name: (-stats[name].median_s, graph.node(name).index))
        assert main.selected == slowest[0]  # the first row of the default sort
        main.sort = ("module", False)
        await pilot.pause()
        assert list(main.table.row_names[:3]) == ["_0", "_1", "_10"]  # module paths as text
        assert main.selected == slowest[0]
        await pilot.press("n", "n")
        assert main.selected == slowest[2]


async def test_a_refresh_draws_only_the_tree_lines_in_view_of_ten_thousand() -> None:
    graph, medians = sequential_graph()
    source = FakeSource([as_sent(make_snapshot(graph, medians))])
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        app = await started(pilot)
        tree = app.main.module_tree
        drawn: list[Entry] = []
        parts = tree.label_parts

        def counted(entry: Entry, depth: int) -> list[tuple[str, str]]:
            drawn.append(entry)
            return parts(entry, depth)

        tree.label_parts = counted  # type: ignore[method-assign]
        source.push(as_sent(make_snapshot(graph, medians, seq=2, scale=1.1)))
        await settle(app, pilot, 2)
        assert 0 < len(drawn) <= 2 * tree.size.height
