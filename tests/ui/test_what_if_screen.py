"""The what-if screen: which what-ifs apply, measuring one or all, progress, results per node and module."""

from __future__ import annotations

import dataclasses

import pytest
from fakes import FakeSource, resnet_snapshot, settle
from textual.widgets import Label, OptionList, Static

from fxtui.core.findings import WhatIf, WhatIfOption
from fxtui.core.snapshot import Snapshot
from fxtui.ui.app import FxtuiApp
from fxtui.ui.demo.demo_what_ifs import demo_what_ifs
from fxtui.ui.screens.what_if import WhatIfScreen
from fxtui.ui.widgets.change_table import ChangeTable

pytestmark = pytest.mark.unit

SIZE = (120, 36)

OPTIONS = (
    WhatIfOption("channels-last", "the model and its 4-D inputs in torch.channels_last memory format"),
    WhatIfOption("bf16", "bfloat16 autocast on the CPU"),
    WhatIfOption("threads=1", "1 intra-op thread instead of the session's count"),
    WhatIfOption(
        "int8-dynamic", "dynamic int8 quantization", "int8-dynamic quantizes nn.Linear layers, and this model has none"
    ),
)
CHANNELS_LAST = demo_what_ifs()[0]


def snapshot(seq: int, *what_ifs: WhatIf, progress: str = "") -> Snapshot:
    return dataclasses.replace(
        resnet_snapshot(seq=seq), what_if_options=OPTIONS, what_ifs=what_ifs, what_if_progress=progress
    )


def line(screen: WhatIfScreen, name: str) -> str:
    return str(screen.query_one(OptionList).get_option(name).prompt)


def table_column(screen: WhatIfScreen, column: int = 0) -> list[str]:
    table = screen.query_one(ChangeTable)
    return [str(table.get_row_at(i)[column]) for i in range(table.row_count)]


async def open_what_ifs(app: FxtuiApp, pilot) -> WhatIfScreen:  # type: ignore[no-untyped-def]
    await settle(app, pilot)
    await pilot.press("w")
    screen = app.screen
    assert isinstance(screen, WhatIfScreen)
    return screen


async def test_enter_measures_the_highlighted_what_if_and_its_result_lists_nodes_by_change() -> None:
    source = FakeSource([snapshot(1)])
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_what_ifs(app, pilot)
        assert "torch.channels_last memory format" in line(screen, "channels-last")
        assert "cannot apply: int8-dynamic quantizes nn.Linear layers" in line(screen, "int8-dynamic")
        assert not screen.query_one(ChangeTable).display  # nothing measured yet
        await pilot.press("enter")
        assert source.calls[-1] == "what-if channels-last"
        assert "queued" in line(screen, "channels-last")
        assert "being measured" in str(screen.query_one("#what-ifs-result", Static).render())
        assert not screen.check_action("measure", ())  # not twice while it is being measured
        source.push(snapshot(2, progress="what-if channels-last: pair 7 of 20"))
        await settle(app, pilot, 2)
        assert "pair 7 of 20" in line(screen, "channels-last")
        assert "measuring: what-if channels-last: pair 7 of 20" in str(
            screen.query_one("#what-ifs-progress", Label).render()
        )
        source.push(snapshot(3, CHANNELS_LAST))
        await settle(app, pilot, 3)
        assert "9.98 ms → 8.51 ms, 14.7% faster · rel diff 4.0e-07" in line(screen, "channels-last")
        result = str(screen.query_one("#what-ifs-result", Static).render())
        assert "run median (p25–p75) 9.98 ms (9.78–10.2 ms) → 8.51 ms (8.34–8.68 ms): 14.7% faster · 20 pairs" in result
        assert "max abs diff 2.4e-06 · max rel diff 4.0e-07" in result
        table = screen.query_one(ChangeTable)
        assert table.display
        nodes = table_column(screen)
        assert nodes[:2] == ["conv1", "maxpool"]  # largest absolute change first
        assert table_column(screen, -1)[1] == "×0.12"
        assert screen.check_action("measure", ())  # measured: Enter measures it anew


async def test_m_switches_to_modules_and_the_tables_follow_the_highlighted_what_if() -> None:
    fold = demo_what_ifs()[2]
    options = (*OPTIONS[:2], WhatIfOption("fold-bn", "each BatchNorm folded"))
    first = dataclasses.replace(snapshot(1, CHANNELS_LAST, fold), what_if_options=options)
    app = FxtuiApp(FakeSource([first]))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_what_ifs(app, pilot)
        await pilot.press("m")
        assert table_column(screen)[0] == "(root)"
        await pilot.press("m", "down", "down")  # fold-bn: its BatchNorm nodes are gone
        assert screen.highlighted == "fold-bn"
        table = screen.query_one(ChangeTable)
        gone = [str(table.get_row_at(i)[0]) for i in range(table.row_count) if str(table.get_row_at(i)[-1]) == "gone"]
        assert "bn1" in gone and all("bn" in name or "downsample_1" in name for name in gone)


async def test_a_measures_every_what_if_that_applies_and_one_that_cannot_apply_is_never_asked_for() -> None:
    source = FakeSource([snapshot(1)])
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_what_ifs(app, pilot)
        await pilot.press("end")  # int8-dynamic cannot apply here
        assert screen.highlighted == "int8-dynamic"
        assert not screen.check_action("measure", ())
        await pilot.press("enter")
        assert not any(c.startswith("what-if") for c in source.calls)
        await pilot.press("a")
        assert source.calls[-1] == "what-if channels-last,bf16,threads=1"
        assert not screen.check_action("measure_all", ())
        failed = WhatIf("bf16", "bfloat16 autocast", error="the changed model does not run: boom", serial=1)
        source.push(snapshot(2, failed))
        await settle(app, pilot, 2)
        assert "could not measure: the changed model does not run: boom" in line(screen, "bf16")
        assert app.main.waiting == {"channels-last", "threads=1"}
        await pilot.press("escape")
        assert app.screen is app.main


async def test_the_palette_offers_the_what_ifs() -> None:
    app = FxtuiApp(FakeSource([snapshot(1)]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        await commands["What-ifs"].callback()
        await pilot.pause()
        assert isinstance(app.screen, WhatIfScreen)
