"""The demo (``python -m fxtui.ui.demo``) answers every command the app sends: nothing waits forever."""

from __future__ import annotations

import pytest
from fakes import settle
from textual.pilot import Pilot

from fxtui.core.snapshot import Snapshot, State
from fxtui.ui.app import FxtuiApp
from fxtui.ui.demo.demo_findings import findings_snapshot
from fxtui.ui.demo.demo_session import answer, resnet18_findings_source
from fxtui.ui.screens.what_if import WhatIfScreen
from fxtui.wire.viewer_commands import Explain, MeasureWhatIfs, Pause, RequestHints, Reset, Resume, Stop

pytestmark = pytest.mark.unit

SIZE = (160, 48)


async def until(pilot: Pilot[None], done: object, what: str) -> None:
    for _ in range(1500):
        if done():  # type: ignore[operator]
            return
        await pilot.pause(0.01)
    raise AssertionError(f"the demo never answered: {what}")


async def test_enter_on_a_what_if_in_the_demo_measures_it_and_the_status_line_stops_measuring() -> None:
    app = FxtuiApp(resnet18_findings_source())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        main = app.main
        before = {w.name: w.serial for w in main.snapshot.what_ifs} if main.snapshot else {}
        await pilot.press("w")
        assert isinstance(app.screen, WhatIfScreen)
        await pilot.press("down", "down", "down")  # threads=1: the demo had no result for it before
        await pilot.press("enter")
        # Waiting for it, unless the demo's answer already came (a busy machine can run the source's thread first).
        answered = main.snapshot is not None and any(w.name == "threads=1" for w in main.snapshot.what_ifs)
        assert main.waiting == frozenset({"threads=1"}) or (answered and not main.waiting)
        await until(pilot, lambda: not main.waiting, "the what-if's result")
        results = {w.name: w for w in main.snapshot.what_ifs} if main.snapshot else {}
        assert "threads=1" not in before and results["threads=1"].measured
        assert main.view_state.measuring == ""  # the status line no longer says a what-if is being measured
        await pilot.press("up", "up", "up", "enter")  # channels-last again: measured anew, a later serial
        await until(pilot, lambda: not main.waiting, "the second what-if")
        assert main.snapshot is not None
        assert {w.name: w.serial for w in main.snapshot.what_ifs}["channels-last"] > before["channels-last"]


async def test_the_demo_pauses_explains_and_gives_hints() -> None:
    app = FxtuiApp(resnet18_findings_source())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        main = app.main
        await pilot.press("space")
        await until(pilot, lambda: main.snapshot is not None and main.snapshot.state is State.PAUSED, "pause")
        await pilot.press("x")
        selected = main.selected
        assert selected is not None
        await until(pilot, lambda: main.snapshot is not None and selected in main.snapshot.aten, "aten")
        assert main.snapshot is not None and main.snapshot.aten[selected]


def test_every_command_gets_an_answer() -> None:
    start = findings_snapshot()
    node = next(n.name for n in start.graph.nodes if n.type_name == "Conv2d") if start.graph else ""
    commands = (Pause(), Resume(), Reset(), Explain(node), RequestHints(), MeasureWhatIfs(("int8-dynamic",)))
    for command in commands:
        answered: list[Snapshot] = list(answer(start, command))
        assert answered, command
    assert list(answer(start, Stop())) == []  # the source itself ends on a Stop
    measured = list(answer(start, MeasureWhatIfs(("int8-dynamic", "threads=1"))))
    assert [s.what_if_progress for s in measured].count("") >= 2 and measured[-1].what_if_progress == ""
    final = {w.name: w for w in measured[-1].what_ifs}
    assert final["int8-dynamic"].measured and final["threads=1"].measured
    assert final["threads=1"].serial > final["int8-dynamic"].serial > max(w.serial for w in start.what_ifs)
