"""The app's memory view: ``m`` switches the table to bytes per node and shows the live-memory plot."""

from __future__ import annotations

import dataclasses

import pytest
from fakes import FakeSource, resnet18_graph_cached, resnet_snapshot, settle

from fxtui.core.findings import MemorySummary
from fxtui.core.snapshot import GraphInfo, Snapshot
from fxtui.core.units import format_bytes
from fxtui.ui.app import FxtuiApp
from fxtui.ui.widgets.detail_pane import DetailPane
from fxtui.ui.widgets.memory_plot import MemoryPlot, plot_rows

pytestmark = pytest.mark.unit

SIZE = (140, 40)
PEAK = "layer2_0_conv1"


def memory_graph() -> GraphInfo:
    """resnet18's graph with made-up bytes: live memory climbs to a single peak at :data:`PEAK`."""
    graph = resnet18_graph_cached()
    peak_at = graph.by_name[PEAK].index
    nodes = tuple(
        dataclasses.replace(
            n,
            output_bytes=4096 * (n.index % 5),
            alloc_bytes=4096 * (n.index % 5) + 1024,
            live_bytes=1_000_000 - 10_000 * abs(n.index - peak_at),
        )
        for n in graph.nodes
    )
    memory = MemorySummary(peak_live_bytes=1_000_000, peak_node=PEAK, param_bytes=46_796_608)
    return dataclasses.replace(graph, nodes=nodes, memory=memory)


def with_memory(seq: int) -> Snapshot:
    return dataclasses.replace(resnet_snapshot(seq=seq), graph=memory_graph())


async def test_m_waits_for_the_memory_pass() -> None:
    app = FxtuiApp(FakeSource([resnet_snapshot()]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert not app.main.check_action("toggle_memory", ())
        await pilot.press("m")
        assert app.main.column_set == "time"
        assert not app.main.query_one(MemoryPlot).display


async def test_m_shows_bytes_per_node_and_the_plot_marks_the_cursor() -> None:
    source = FakeSource([with_memory(1)])
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        table = app.main.table
        assert "live" not in [c.key for c in table.columns]
        await pilot.press("m")
        await pilot.pause()
        keys = [c.key for c in table.columns]
        assert keys[:4] == ["node", "output", "alloc", "live"] and "saved" not in keys  # inference
        graph = app.main.graph
        assert graph is not None
        node = table.cursor_name
        assert node is not None
        info = graph.by_name[node]
        assert table.cell_text(node, "live") == format_bytes(info.live_bytes)
        assert table.cell_text(node, "alloc") == format_bytes(info.alloc_bytes)
        # The plot: one column per node at this width, the cursor's node marked, the peak the tallest.
        plot = app.main.query_one(MemoryPlot)
        assert plot.display
        assert plot.marked_column == info.index
        peak_index = graph.by_name[PEAK].index
        assert plot.rows[0][peak_index] == "█" and plot.rows[0][0] != "█"
        assert app.main.check_action("toggle_memory", ())
        palette = {c.title for c in app.get_system_commands(app.screen)}
        assert "Memory columns" in palette
        fields = dict(app.main.query_one(DetailPane).fields)
        assert fields["live after"].startswith(format_bytes(info.live_bytes))
        assert f"after {PEAK}" in fields["live after"]
        # Sorting by live bytes puts the peak on top; the plot follows the cursor there.
        app.main.sort = ("live", True)
        await pilot.pause()
        await pilot.press("end", "home")
        await pilot.pause()
        assert table.row_names[0] == PEAK
        assert app.main.selected == PEAK and plot.marked_column == peak_index
        # m again: the timings, and no plot.
        await pilot.press("m")
        await pilot.pause()
        assert "live" not in [c.key for c in table.columns] and not plot.display


def test_the_plot_keeps_a_narrow_peak_when_nodes_share_a_column() -> None:
    values = [0] * 100
    values[37] = 50
    rows, column = plot_rows(values, 37, width=10, height=2)
    assert len(rows) == 2 and all(len(r) == 10 for r in rows)
    assert rows[0][3] == "█" and rows[0].count(" ") == 9  # the one tall node survives the squeeze
    assert column == 3
