"""Panels that ask the session for more: the Conv-BN what-if inside the hints, and the threads panel."""

from __future__ import annotations

import dataclasses

from fakes import FakeSource, resnet_snapshot, settle
from textual.widgets import Static

from fxtui.engine.findings import Hint, WhatIf
from fxtui.engine.snapshot import Snapshot
from fxtui.ui.app import FxtuiApp
from fxtui.ui.screens.help import HelpScreen
from fxtui.ui.screens.hints import HintsScreen
from fxtui.ui.screens.threads import ThreadsScreen
from fxtui.ui.widgets.status_bar import StatusBar

SIZE = (120, 36)

FOLD = Hint(
    "conv-bn-fold",
    "Fold batch norms into the convolutions",
    ("layer1_0_bn1", "layer1_0_conv1"),
    "20 BatchNorm2d after Conv2d take 0.8 ms",
    7e-4,
    6.6,
)
THREADS = Hint("threads", "Try more threads", (), "1 of 2 cores used", None, None)
TRIED = WhatIf(
    "fold 20 Conv-BN pairs",
    (("conv1", "bn1"), ("layer1_0_conv1", "layer1_0_bn1")),
    before_s=0.0120,
    after_s=0.0105,
    max_abs_diff=3.2e-6,
)


def what_if_panel(screen: HintsScreen) -> str:
    panel = screen.query_one("#hints-what-if", Static)
    return str(panel.render()) if panel.display else ""


def with_hints(seq: int, hints: tuple[Hint, ...], what_if: WhatIf | None = None) -> Snapshot:
    return dataclasses.replace(resnet_snapshot(seq=seq), hints=hints, what_if=what_if)


async def test_f_on_the_fold_hint_measures_it_and_shows_before_after_saving_and_difference() -> None:
    source = FakeSource([with_hints(1, (FOLD, THREADS))])
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("H")
        screen = app.screen
        assert isinstance(screen, HintsScreen)
        assert what_if_panel(screen) == ""
        assert "f: try it" in str(screen.query_one("#hints-list").render_line(0).text)
        assert screen.check_action("try_it", ())
        await pilot.press("f")
        assert source.calls[-1] == "try_fusion"
        assert "measuring" in what_if_panel(screen)
        # A snapshot without the result yet keeps "measuring…".
        source.push(with_hints(2, (FOLD, THREADS)))
        await settle(app, pilot, 2)
        assert "measuring" in what_if_panel(screen)
        assert not screen.check_action("try_it", ())  # no second request while one runs
        source.push(with_hints(3, (FOLD, THREADS), TRIED))
        await settle(app, pilot, 3)
        text = what_if_panel(screen)
        assert "measuring" not in text
        assert "12.0 ms → 10.5 ms" in text
        assert "12.5% faster" in text
        assert "3.2e-06" in text
        assert screen.check_action("try_it", ())  # it may be measured again


async def test_a_second_try_waits_for_a_new_result_not_the_old_one() -> None:
    source = FakeSource([with_hints(1, (FOLD,), TRIED)])
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("H")
        screen = app.screen
        assert isinstance(screen, HintsScreen)
        assert "12.5% faster" in what_if_panel(screen)
        await pilot.press("f")
        source.push(with_hints(2, (FOLD,), TRIED))  # still the earlier measurement
        await settle(app, pilot, 2)
        assert "measuring" in what_if_panel(screen)
        slower = dataclasses.replace(TRIED, after_s=0.0130)
        source.push(with_hints(3, (FOLD,), slower))
        await settle(app, pilot, 3)
        assert "slower" in what_if_panel(screen)


async def test_f_does_nothing_without_a_foldable_hint() -> None:
    source = FakeSource([with_hints(1, (THREADS,))])
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("H", "f")
        assert "try_fusion" not in source.calls
        assert "f: try it" not in str(app.screen.query_one("#hints-list").render_line(0).text)


def warned_snapshot() -> Snapshot:
    snapshot = resnet_snapshot()
    assert snapshot.graph is not None
    graph = dataclasses.replace(
        snapshot.graph,
        thread_info=("threads 4 (torch.get_num_threads)", "cores 2 (os.cpu_count)", "MKL-DNN on · OpenMP"),
        thread_warnings=("4 threads on 2 cores: the threads compete and timings swing",),
    )
    return dataclasses.replace(snapshot, graph=graph)


async def test_thread_warnings_show_in_the_status_line_and_T_lists_every_fact() -> None:
    app = FxtuiApp(FakeSource([warned_snapshot()]))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        status = str(app.main.query_one(StatusBar).render()).splitlines()[0]
        assert "⚠ 1 thread warning (T)" in status
        await pilot.press("T")
        assert isinstance(app.screen, ThreadsScreen)
        text = str(app.screen.query_one("#threads-text", Static).render())
        assert text.index("4 threads on 2 cores") < text.index("cores 2 (os.cpu_count)")
        assert "MKL-DNN on" in text
        await pilot.press("escape")
        assert app.screen is app.main


async def test_page_faults_per_run_show_in_the_status_line_and_the_threads_panel_explains_them() -> None:
    snapshot = dataclasses.replace(resnet_snapshot(), faults_per_run=16384.0, malloc="glibc")
    app = FxtuiApp(FakeSource([snapshot]))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(app, pilot)
        assert "⚠ 16,384 page faults/run (T)" in str(app.main.query_one(StatusBar).render())
        await pilot.press("T")
        text = str(app.screen.query_one("#threads-text", Static).render())
        assert "16,384 page faults per run" in text and "--malloc keep" in text
        assert "memory: glibc's default" in text
    quiet = FxtuiApp(FakeSource([dataclasses.replace(resnet_snapshot(), faults_per_run=3.0, malloc="keep")]))
    async with quiet.run_test(size=(120, 30)) as pilot:
        await settle(quiet, pilot)
        assert "page faults" not in str(quiet.main.query_one(StatusBar).render())
        await pilot.press("T")
        text = str(quiet.screen.query_one("#threads-text", Static).render())
        assert "page faults per run" not in text and "memory: freed memory kept in the process" in text


async def test_no_warning_marker_without_warnings_and_T_is_in_help() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert "thread warning" not in str(app.main.query_one(StatusBar).render())
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert any(key == "T" and "Threads" in what for _, key, what in app.screen.rows)
        assert any(key == "f" and "Try it" in what for _, key, what in app.screen.rows)


async def test_a_what_if_measured_after_the_hints_closed_shows_in_the_status_line_then_as_a_notice() -> None:
    source = FakeSource([with_hints(1, (FOLD,))])
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("H", "f")
        await pilot.press("escape")
        assert app.screen is app.main
        assert "what-if measuring" in str(app.main.query_one(StatusBar).render())
        source.push(with_hints(2, (FOLD,), TRIED))
        await settle(app, pilot, 2)
        assert "what-if measuring" not in str(app.main.query_one(StatusBar).render())
        assert any("12.5% faster" in n.message for n in app._notifications)
