"""Tab and Shift+Tab show at once, in the text, which pane the keys go to (10,000 layers, as in the issue).

Focus used to show by colour only: a look at the text (``tmux capture-pane``) or a terminal without
colours saw nothing change on Tab until the next numbers were drawn, a quarter of a second later.
"""

from __future__ import annotations

import pytest
from fakes import SIZE, FakeSource, as_sent, sequential_graph, started

from fxtui.core.snapshot import Snapshot
from fxtui.ui.app import FxtuiApp
from fxtui.ui.demo.demo_source import make_snapshot
from fxtui.ui.widgets.detail_pane import DetailPane
from fxtui.ui.widgets.module_tree import ModuleTree
from fxtui.ui.widgets.node_table import NodeTable
from fxtui.ui.widgets.outline_view import FOCUS_MARK

pytestmark = pytest.mark.unit


def marked(widget: ModuleTree | NodeTable) -> list[str]:
    """The lines on screen that carry the focus mark, as text."""
    lines = [widget.render_line(y).text for y in range(widget.size.height)]
    return [line for line in lines if line.startswith(FOCUS_MARK)]


def snapshot() -> Snapshot:
    graph, medians = sequential_graph()
    return as_sent(make_snapshot(graph, medians))


async def test_tab_and_shift_tab_move_the_focus_mark_between_the_tree_and_the_table() -> None:
    app = FxtuiApp(FakeSource([snapshot()]))
    async with app.run_test(size=SIZE) as pilot:
        app = await started(pilot)
        table, tree = app.main.table, app.main.module_tree
        await pilot.press("down")  # the table has the keys: its cursor row is marked, the tree has no mark
        assert app.focused is table
        (row,) = marked(table)
        assert table.cursor_name is not None and row[1:].startswith(table.cursor_name) and marked(tree) == []
        await pilot.press("shift+tab")
        assert app.focused is tree
        (line,) = marked(tree)
        assert line == tree.render_line(tree.cursor_line - round(tree.scroll_y)).text  # the tree's cursor line
        assert marked(table) == []
        await pilot.press("tab")
        assert app.focused is table and len(marked(table)) == 1 and marked(tree) == []
        await pilot.press("tab")  # on to the detail pane (it scrolls): no pane is marked
        assert isinstance(app.focused, DetailPane) and marked(table) == [] and marked(tree) == []
