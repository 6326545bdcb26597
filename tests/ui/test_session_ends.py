"""How a session ends in the app: the engine dies (the figures stay, final, and can be saved), a signal ends the
app (as q does), the model keeps raising (the reruns stop; Space resumes), a backlog of snapshots."""

from __future__ import annotations

import dataclasses
import os
import signal
from collections.abc import Iterator

import pytest
from fakes import FakeSource, resnet_snapshot, settle

from fxtui.core.snapshot import RunError, Snapshot, State
from fxtui.ui.app import FxtuiApp
from fxtui.ui.widgets.status_bar import StatusBar

pytestmark = pytest.mark.unit

SIZE = (120, 36)


def status(app: FxtuiApp) -> str:
    return str(app.main.query_one(StatusBar).render())


def banner(app: FxtuiApp) -> str:
    return str(app.main.query_one("#error-banner").render())


class Saves:
    """A fake ``save``: records each snapshot and names a path."""

    def __init__(self) -> None:
        self.saved: list[Snapshot] = []

    def __call__(self, snapshot: Snapshot) -> str:
        self.saved.append(snapshot)
        return f"/saved/{len(self.saved)}.json"


def engine_died(before: Snapshot) -> Snapshot:
    """What a source sent when its process died, before it kept the figures: the graph, no numbers."""
    return Snapshot(before.graph, State.ERROR, seq=before.seq + 1, message="the profiling process ended unexpectedly")


async def test_after_the_engine_dies_the_figures_stay_and_E_saves_them() -> None:
    source, saves = FakeSource(), Saves()
    app = FxtuiApp(source, save=saves)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        before = app.main.table.cell_text("conv1", "median")
        assert before != "–"
        source.push(engine_died(app.main.snapshot))  # type: ignore[arg-type]
        await settle(app, pilot, 2)
        assert app.main.table.cell_text("conv1", "median") == before
        assert "● error" in status(app) and "200 runs" in status(app)
        assert "E: save them" in banner(app)
        assert app.unsaved()
        await pilot.press("E")
        await pilot.pause()
        assert len(saves.saved) == 1 and saves.saved[0].runs == 200 and saves.saved[0].nodes
        assert app.saved == (saves.saved[0].seq, "/saved/1.json") and not app.unsaved()


async def test_E_is_hidden_without_figures_or_a_way_to_save() -> None:
    app = FxtuiApp(FakeSource([Snapshot(None, State.LOADING, seq=1, message="loading")]), save=Saves())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.check_action("save", ()) is False
    unsaving = FxtuiApp(FakeSource())
    async with unsaving.run_test(size=SIZE) as pilot:
        await settle(unsaving, pilot)
        assert unsaving.check_action("save", ()) is False and unsaving.save_figures() is None


@pytest.fixture
def signals_fail_the_test() -> Iterator[None]:
    """Without the app's own handlers a signal would end pytest; this turns it into a failed test instead."""

    def unhandled(signum: int, frame: object) -> None:
        raise AssertionError(f"the app did not handle {signal.Signals(signum).name}")

    previous = {sig: signal.signal(sig, unhandled) for sig in (signal.SIGTERM, signal.SIGHUP)}
    yield
    for sig, handler in previous.items():
        signal.signal(sig, handler)


@pytest.mark.usefixtures("signals_fail_the_test")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
async def test_sigterm_and_sighup_leave_as_q_does_with_status_128_plus_the_signal(sig: signal.Signals) -> None:
    source = FakeSource()
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        os.kill(os.getpid(), sig)
        for _ in range(200):
            if app.return_code is not None:
                break
            await pilot.pause(0.01)
        assert app.return_code == 128 + sig and app.ended_by == sig
        assert "stop" in source.calls
    assert source.finished.wait(5)
    # The handlers are the app's only while it runs: the ones before it are back.
    assert getattr(signal.getsignal(sig), "__name__", "") == "unhandled"


async def test_a_session_that_stopped_because_the_model_kept_raising_resumes_on_space() -> None:
    source = FakeSource()
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        before = app.main.table.cell_text("conv1", "median")
        error = RunError("RuntimeError: the sensor went away", node="layer3_0_bn2", runs_failed=5)
        stopped = resnet_snapshot(seq=2, state=State.STOPPED, error=error)
        source.push(dataclasses.replace(stopped, message="the model raised in 5 runs in a row; space reruns"))
        await settle(app, pilot, 2)
        assert "● stopped: the model raised in 5 runs in a row" in status(app)
        assert app.main.table.cell_text("conv1", "median") == before
        await pilot.press("space")
        assert source.calls == ["resume"]  # not a pause: the user had not paused
        assert not app.main.paused
        source.push(resnet_snapshot(seq=3))
        await settle(app, pilot, 3)
        await pilot.press("space")
        assert source.calls == ["resume", "pause"]


async def test_a_backlog_of_snapshots_is_applied_as_its_newest() -> None:
    burst = [resnet_snapshot(seq=seq, scale=1 + seq / 100) for seq in range(1, 201)]
    app = FxtuiApp(FakeSource(burst))
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(500):
            if app.main.snapshot is not None and app.main.snapshot.seq == 200:
                break
            await pilot.pause(0.01)
        assert app.main.snapshot is not None and app.main.snapshot.seq == 200
        assert app.main.applied < 200 // 2  # most were replaced by a newer one before they were applied
