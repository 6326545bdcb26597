"""A program on a shared server in the app: the status line's badge for sampled steps that waited for a CPU, the
sentence T gives, and k once the program (and its collector) has ended."""

from __future__ import annotations

import dataclasses
import threading

import pytest
from fakes import FakeSource, program_snapshot, settle
from textual.widgets import Static

from fxtui.core.nodes import Spread
from fxtui.core.program_run import KindSummary
from fxtui.core.snapshot import Snapshot
from fxtui.core.step_waiting import StepWaiting
from fxtui.ui.app import FxtuiApp
from fxtui.ui.widgets.status_bar import StatusBar

pytestmark = pytest.mark.unit

WAITED = StepWaiting(
    known=True, wait=Spread(0.61, 0.55, 0.7), ops=Spread(0.7, 0.65, 0.8), running_ops=Spread(0.3, 0.28, 0.33),
    others_cores=1.3, cpus=2, sampled=8, disturbed=6, left_out=0, kept_wait=0.58,
)  # fmt: skip


def waited_snapshot(waiting: StepWaiting, running: bool = True) -> Snapshot:
    base = program_snapshot(running=running)
    assert base.steps is not None
    kinds = (KindSummary("train", 40, 5, 8, 0.057, waiting=waiting), KindSummary("eval", 120, 5, 20, 0.012))
    return dataclasses.replace(base, steps=dataclasses.replace(base.steps, kinds=kinds))


def first_line(app: FxtuiApp) -> str:
    return str(app.main.query_one(StatusBar).render()).splitlines()[0]


async def test_sampled_steps_that_waited_for_a_cpu_badge_the_status_line_and_t_says_what_the_figures_are() -> None:
    app = FxtuiApp(FakeSource([waited_snapshot(WAITED)]))
    async with app.run_test(size=(180, 30)) as pilot:
        await settle(app, pilot)
        assert "⚠ 6/8 sampled steps waited for a CPU, in figures (T)" in first_line(app)
        await pilot.press("T")
        text = str(app.screen.query_one("#threads-text", Static).render())
        assert "waiting for a CPU 61% (other processes used 1.3 of 2 cores)" in text
        # The header's split, the same computation: ops (less their wait) 30, waiting 61, Python 9 add up to 100.
        assert "ops 30% (less the time they waited)" in text and "the program's Python 9% of the median step" in text
        assert "they are the program's times under this load, 58% of them waiting" in text


async def test_left_out_steps_say_so_and_a_quiet_program_has_no_badge() -> None:
    left_out = dataclasses.replace(WAITED, left_out=6)
    quiet = dataclasses.replace(WAITED, wait=Spread(0.01, 0.0, 0.02), disturbed=0)
    for waiting, badge in ((left_out, "⚠ 6/8 sampled steps waited for a CPU, left out (T)"), (quiet, "")):
        app = FxtuiApp(FakeSource([waited_snapshot(waiting)]))
        async with app.run_test(size=(180, 30)) as pilot:
            await settle(app, pilot)
            line = first_line(app)
            assert (badge in line) if badge else "waited for a CPU" not in line, line


class EndedSource(FakeSource):
    """A job whose collector has gone with the program, as the attach source reports it."""

    def __init__(self, snapshots: list[Snapshot]) -> None:
        super().__init__(snapshots)
        self.ended = threading.Event()
        self.ended.set()


async def test_k_after_a_program_ended_whose_profile_holds_one_kind_says_in_one_line_why_not() -> None:
    source = EndedSource([waited_snapshot(WAITED, running=False)])
    app = FxtuiApp(source)
    async with app.run_test(size=(180, 30)) as pilot:
        await settle(app, pilot)
        assert "120 eval" in first_line(app) and "(k)" not in first_line(app)  # not offered once it ended
        await pilot.press("k")
        await pilot.pause()
        assert "showkind" not in source.calls
        said = [n.message for n in app._notifications]
        assert any("the program has ended and its collector with it" in m and "--kind eval" in m for m in said), said


def ended_with_every_kind() -> Snapshot:
    """A last profile as the collector sends it at the end: the training figures, the evaluation calls' beside."""
    train = waited_snapshot(WAITED, running=False)
    assert train.steps is not None
    evals = dataclasses.replace(
        train, steps=dataclasses.replace(train.steps, kind="eval", steps=120, sampled=20, step_median_s=0.012)
    )
    return dataclasses.replace(train, other_kinds={"eval": evals})


async def test_k_after_the_program_ended_shows_each_kind_its_last_profile_holds() -> None:
    source = EndedSource([ended_with_every_kind()])
    app = FxtuiApp(source)
    async with app.run_test(size=(180, 30)) as pilot:
        await settle(app, pilot)
        assert "40 training steps" in first_line(app) and "120 eval (k)" in first_line(app), first_line(app)
        await pilot.press("k")
        await settle(app, pilot, applied=2)
        assert "showkind" not in source.calls  # no collector to ask: the profile holds the figures
        shown = app.main.snapshot
        assert shown is not None and shown.steps is not None and shown.steps.kind == "eval"
        assert "120 eval calls" in first_line(app) and "(k)" in first_line(app), first_line(app)
        await pilot.press("k")  # and back: every kind stays reachable
        await settle(app, pilot, applied=3)
        assert app.main.snapshot.steps.kind == "train" and "40 training steps" in first_line(app), first_line(app)


async def test_k_while_the_program_runs_asks_the_collector_for_the_next_kind() -> None:
    source = FakeSource([waited_snapshot(WAITED)])
    app = FxtuiApp(source)
    async with app.run_test(size=(180, 30)) as pilot:
        await settle(app, pilot)
        assert "120 eval (k)" in first_line(app)
        await pilot.press("k")
        await pilot.pause()
        assert "showkind" in source.calls
