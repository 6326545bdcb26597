"""The key bar: shows the keys that apply now, draws again only when they change, presses a clicked key."""

from __future__ import annotations

import pytest
from fakes import FakeSource, resnet_snapshot, settle

from fxtui.ui.app import FxtuiApp
from fxtui.ui.widgets.key_bar import KeyBar

pytestmark = pytest.mark.unit

SIZE = (120, 36)


def bar_text(bar: KeyBar) -> str:
    return bar.render_line(0).text


async def test_the_bar_shows_the_keys_that_apply_and_follows_the_scope() -> None:
    app = FxtuiApp(FakeSource([resnet_snapshot(seq=1)]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        bar = app.main.query_one(KeyBar)
        shown = {key.description for key in bar.keys}
        assert {"Pause/Resume", "Reset stats", "Hottest child", "Next hotspot"} <= shown
        assert "Up a module" not in shown  # at the root there is nothing above
        assert "Pause/Resume" in bar_text(bar) and " space " in bar_text(bar)
        await pilot.press("h")  # into the hottest child: going up now applies
        await pilot.pause()
        assert "Up a module" in {key.description for key in bar.keys}
        assert "Up a module" in bar_text(bar)
        await pilot.press("backspace")
        await pilot.pause()
        assert "Up a module" not in {key.description for key in bar.keys}
        assert not bar.children  # keys are drawn, never mounted


async def test_a_focus_change_that_keeps_the_keys_draws_nothing_again(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    app = FxtuiApp(FakeSource([resnet_snapshot(seq=1)]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        bar = app.main.query_one(KeyBar)
        drawn: list[int] = []
        draw = bar._draw
        monkeypatch.setattr(bar, "_draw", lambda width, styles: drawn.append(width) or draw(width, styles))
        keys = bar.keys
        app.main.module_tree.focus()
        await pilot.pause()
        assert bar.keys == keys  # the tree's keys do not show, and Space pauses there too
        app.main.table.focus()
        await pilot.pause()
        assert bar.keys == keys and drawn == []
        await pilot.press("h")  # the keys change: drawn once more
        await pilot.pause()
        assert bar.keys != keys and len(drawn) >= 1


async def test_clicking_a_key_presses_it() -> None:
    source = FakeSource([resnet_snapshot(seq=1)])
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        bar = app.main.query_one(KeyBar)
        x = bar_text(bar).index("Pause/Resume")
        await pilot.click(KeyBar, offset=(x, 0))
        await pilot.pause()
        assert source.calls == ["pause"]


async def test_the_command_palette_key_sits_at_the_right_edge() -> None:
    app = FxtuiApp(FakeSource([resnet_snapshot(seq=1)]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        text = bar_text(app.main.query_one(KeyBar))
        assert len(text) == SIZE[0]
        assert text.rstrip().endswith("palette")
        assert text.index("palette") > text.index("Pause/Resume")
