"""What a user's terminal does to the app: no colour, tiny sizes, 80 columns."""

from __future__ import annotations

import pytest
from fakes import FakeSource, settle
from textual.strip import Strip

from fxtui.core.columns import BY_KEY
from fxtui.ui.app import FxtuiApp
from fxtui.ui.widgets.detail_pane import DetailPane
from fxtui.ui.widgets.module_tree import Entry
from fxtui.ui.widgets.status_bar import StatusBar

pytestmark = pytest.mark.unit


def _styled(strip: Strip, text: str) -> list[tuple[bool, bool]]:
    """(reverse, underline) of the segments of ``strip`` that hold ``text``."""
    return [(bool(s.style and s.style.reverse), bool(s.style and s.style.underline)) for s in strip if text in s.text]


async def test_no_color_still_shows_the_cursor_and_which_widget_has_focus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        assert app.no_color
        table, tree = app.main.table, app.main.module_tree
        await pilot.press("down")
        name = table.cursor_name
        assert name is not None
        row = table.row_names.index(name) + 1  # below the header
        assert (True, False) in _styled(table.render_line(row), name)  # focused: reversed
        await pilot.press("shift+tab")
        assert app.focused is tree
        await pilot.pause()
        assert (False, True) in _styled(table.render_line(row), name)  # not focused: underlined
        cursor = tree.cursor_line - tree.scroll_offset.y
        label = tree.label_text(Entry("node", name)).split()[0]
        assert any(reverse for reverse, _ in _styled(tree.render_line(cursor), label))


async def test_shrinking_to_40x12_and_back_recovers_the_layout() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        sizes = {w: app.main.query_one(w).size for w in ("#tree", "#table", "#detail", StatusBar)}
        await pilot.resize_terminal(40, 12)
        await pilot.pause()
        assert app.main.table.size.height >= 5  # the detail pane gives way to the table
        await pilot.press("down", "h", "n", "question_mark")
        await pilot.press("escape")
        await pilot.resize_terminal(60, 16)
        await pilot.pause()
        await pilot.resize_terminal(120, 36)
        await pilot.pause()
        assert {w: app.main.query_one(w).size for w in sizes} == sizes
        assert app.main.table.row_names
        assert "running" in str(app.main.query_one(StatusBar).render())


async def test_at_80x24_the_table_shows_the_numbers_and_the_tree_names_with_shares() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        table = app.main.table
        header = table.render_line(0).text
        for key in ("median", "p90", "pct", "calls"):
            assert BY_KEY[key].app_label in header
        assert table.render_line(1).text.rstrip().endswith("200")  # the calls of the first row
        label = app.main.module_tree.label_text(Entry("node", "conv1"))
        assert label.startswith("conv1") and label.rstrip().endswith("%")
        assert app.main.query_one(DetailPane).display


async def test_at_80x24_the_tree_keeps_its_shares_in_one_column_at_every_depth() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("h", "h", "h")  # down to layer4.0's nodes, three levels deep
        await pilot.pause()
        tree = app.main.module_tree
        lines = [tree.render_line(y).text.rstrip() for y in range(tree.size.height)]
        shown = [line for line in lines if line.endswith("%")]
        assert len(shown) > 15
        assert len({len(line) for line in shown}) == 1, shown
        assert tree.virtual_size.width <= tree.scrollable_content_region.width  # no sideways scrolling
