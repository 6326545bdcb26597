"""A busy machine is said in the app too: a badge on the status line, the sentence in the threads panel."""

from __future__ import annotations

import dataclasses

from fakes import FakeSource, resnet_snapshot, settle
from textual.widgets import Static

from fxtui.core.findings import Disturbance
from fxtui.ui.app import FxtuiApp
from fxtui.ui.widgets.status_bar import StatusBar

BUSY = Disturbance(steps=30, disturbed=7, median_lost=0.23, worst_lost=0.61, used=23, in_window=7, left_out=7)


async def test_disturbed_steps_show_on_the_status_line_and_the_threads_panel_says_how_many_and_by_how_much() -> None:
    app = FxtuiApp(FakeSource([dataclasses.replace(resnet_snapshot(), disturbance=BUSY)]))
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(app, pilot)
        status = str(app.main.query_one(StatusBar).render()).splitlines()[0]
        assert "⚠ 7/30 steps disturbed, left out (T)" in status
        await pilot.press("T")
        text = str(app.screen.query_one("#threads-text", Static).render())
        assert "7 of 30 steps disturbed" in text and "23% of their time" in text and "leave out 7" in text


async def test_a_quiet_machine_shows_no_badge() -> None:
    quiet = Disturbance(steps=30, disturbed=0, median_lost=0.0, worst_lost=0.0, used=30)
    app = FxtuiApp(FakeSource([dataclasses.replace(resnet_snapshot(), disturbance=quiet)]))
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(app, pilot)
        assert "disturbed" not in str(app.main.query_one(StatusBar).render())
