"""A busy machine is said in the app too: a badge on the status line, the sentence in the threads panel; and
figures that do not add up (a fidelity far above 1) are a caution there and in the header, not a plain number."""

from __future__ import annotations

import dataclasses

import pytest
from fakes import FakeSource, program_snapshot, resnet_snapshot, settle
from textual.widgets import Static

from fxtui.core.column_table import column_total
from fxtui.core.findings import Disturbance
from fxtui.core.program_run import KindSummary
from fxtui.ui.app import FxtuiApp
from fxtui.ui.widgets.status_bar import StatusBar

pytestmark = pytest.mark.unit

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


async def test_a_program_whose_sampled_ops_outgrow_its_steps_shows_its_fidelity_as_a_caution() -> None:
    """Under heavy load the sampled steps wait for a core inside their ops: fidelity 30 was seen, shown plainly."""
    snapshot = program_snapshot()
    attributed = column_total(snapshot.nodes, "median_s")
    sound = dataclasses.replace(snapshot, eager_median_s=attributed / 0.95)
    overcounted = dataclasses.replace(snapshot, eager_median_s=attributed / 30)
    for shown, badge in ((sound, False), (overcounted, True)):
        app = FxtuiApp(FakeSource([shown]))
        async with app.run_test(size=(160, 30)) as pilot:
            await settle(app, pilot)
            status = str(app.main.query_one(StatusBar).render()).splitlines()[0]
            assert ("⚠ fidelity 30.000 (T)" in status) is badge, status
            assert "fidelity 0.950" in status or badge
            await pilot.press("T")
            text = str(app.screen.query_one("#threads-text", Static).render())
            assert ("the sampled training steps' ops add up to 30.00× an unsampled one" in text) is badge, text


def test_the_header_doubts_another_kinds_fidelity_far_above_one_under_its_line() -> None:
    from fxtui.report.data import ReportData
    from fxtui.report.program_text import program_lines

    snapshot = program_snapshot()
    assert snapshot.steps is not None
    kinds = (
        KindSummary("train", 40, 5, 8, step_median_s=0.057, fidelity=0.95),
        KindSummary("eval", 24, 5, 6, step_median_s=0.004, fidelity=30.3),
    )
    lines = program_lines(
        ReportData.from_snapshot(dataclasses.replace(snapshot, steps=dataclasses.replace(snapshot.steps, kinds=kinds)))
    )
    at = next(i for i, line in enumerate(lines) if line.startswith("eval "))
    assert "fidelity 30.300" in lines[at]
    assert lines[at + 1].startswith("caution    the sampled evaluation calls' ops add up to 30.30× an unsampled one")
    assert sum(line.startswith("caution") for line in lines) == 1  # the training steps' 0.95 is not doubted
