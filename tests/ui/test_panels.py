"""Panels that ask the session for more: a hint's what-if measured from the hints, and the threads panel."""

from __future__ import annotations

import dataclasses

import pytest
from fakes import FakeSource, resnet_snapshot, settle
from textual.widgets import OptionList, Static

from fxtui.core.findings import Hint, WhatIf
from fxtui.core.snapshot import Snapshot
from fxtui.ui.app import FxtuiApp
from fxtui.ui.screens.help import HelpScreen
from fxtui.ui.screens.hints import HintsScreen
from fxtui.ui.screens.threads import ThreadsScreen
from fxtui.ui.screens.what_if import WhatIfScreen
from fxtui.ui.widgets.status_bar import StatusBar

pytestmark = pytest.mark.unit

SIZE = (120, 36)

FOLD = Hint(
    "conv-bn-fold",
    "Fold batch norms into the convolutions",
    ("layer1_0_bn1", "layer1_0_conv1"),
    "20 BatchNorm2d after Conv2d take 0.8 ms",
    7e-4,
    6.6,
    "fold-bn",
)
THREADS = Hint("threads", "Try more threads", (), "1 of 2 cores used", None, None)
TRIED = WhatIf(
    "fold-bn",
    "fold 20 BatchNorm layers into the convolution before each",
    before_s=0.0120,
    before_p25_s=0.0118,
    before_p75_s=0.0122,
    after_s=0.0105,
    after_p25_s=0.0104,
    after_p75_s=0.0107,
    pairs=20,
    max_abs_diff=3.2e-6,
    max_rel_diff=4.1e-7,
    serial=1,
)


def hint_line(screen: HintsScreen, index: int = 0) -> str:
    option = screen.query_one("#hints-list", OptionList).get_option_at_index(index)
    return str(option.prompt)


def with_hints(seq: int, hints: tuple[Hint, ...], *what_ifs: WhatIf) -> Snapshot:
    return dataclasses.replace(resnet_snapshot(seq=seq), hints=hints, what_ifs=what_ifs)


async def test_w_on_a_hint_measures_its_what_if_and_the_hint_then_shows_the_measured_saving() -> None:
    source = FakeSource([with_hints(1, (FOLD, THREADS))])
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("H")
        hints = app.screen
        assert isinstance(hints, HintsScreen)
        assert "w: measure it (fold-bn)" in hint_line(hints)
        assert "saves about 700 µs" in hint_line(hints)
        assert hints.check_action("measure_hint", ())
        await pilot.press("w")
        assert source.calls[-1] == "what-if fold-bn"
        assert isinstance(app.screen, WhatIfScreen)  # the what-ifs open on it
        assert app.main.waiting == {"fold-bn"}
        source.push(with_hints(2, (FOLD, THREADS), TRIED))
        await settle(app, pilot, 2)
        assert app.main.waiting == frozenset()
        await pilot.press("escape")
        assert app.screen is hints
        line = hint_line(hints)
        assert "measured (what-if fold-bn): 12.0 ms → 10.5 ms, 12.5% faster" in line
        assert "saves about" not in line and "w: measure it" not in line
        assert "fold-bn 12.5% faster" in str(hints.query_one("#hints-what-if", Static).render())
        await pilot.press("w")  # measured already: the what-ifs open without measuring again
        assert source.calls.count("what-if fold-bn") == 1 and isinstance(app.screen, WhatIfScreen)


async def test_w_does_nothing_on_a_hint_without_a_what_if() -> None:
    source = FakeSource([with_hints(1, (THREADS,))])
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("H", "w")
        assert not any(c.startswith("what-if") for c in source.calls)
        assert isinstance(app.screen, HintsScreen)
        assert not app.screen.check_action("measure_hint", ())
        assert "w: measure it" not in hint_line(app.screen)


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
        assert any(key == "w" and "What-ifs" in what for _, key, what in app.screen.rows)
        assert any(key == "w" and "Measure it" in what for _, key, what in app.screen.rows)


async def test_a_what_if_measured_after_its_screen_closed_shows_in_the_status_line_then_as_a_notice() -> None:
    source = FakeSource([with_hints(1, (FOLD,))])
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("H", "w")
        await pilot.press("escape", "escape")
        assert app.screen is app.main
        assert "what-if queued: fold-bn" in str(app.main.query_one(StatusBar).render())
        progress = dataclasses.replace(with_hints(2, (FOLD,)), what_if_progress="what-if fold-bn: pair 7 of 20")
        source.push(progress)
        await settle(app, pilot, 2)
        assert "what-if fold-bn: pair 7 of 20" in str(app.main.query_one(StatusBar).render())
        source.push(with_hints(3, (FOLD,), TRIED))
        await settle(app, pilot, 3)
        assert "what-if" not in str(app.main.query_one(StatusBar).render()).splitlines()[1]
        assert any("what-if fold-bn: 12.0 ms → 10.5 ms, 12.5% faster" in n.message for n in app._notifications)
