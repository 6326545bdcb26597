"""Keys first: snapshots wait while keys come, are shown when input pauses, and never later than the limit;
full garbage collections wait for the pause too."""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from fakes import FakeSource, resnet_snapshot, settle
from textual.pilot import Pilot

from fxtui.core.snapshot import Snapshot, State
from fxtui.ui import gc_pauses
from fxtui.ui.app import FxtuiApp

pytestmark = pytest.mark.unit

SIZE = (120, 36)


def later(first: Snapshot, seq: int, **changes: object) -> Snapshot:
    """The same session ``seq`` runs on (same graph)."""
    return dataclasses.replace(first, seq=seq, **changes)  # type: ignore[arg-type]


async def wait_applied(app: FxtuiApp, pilot: Pilot, applied: int, limit_s: float) -> bool:
    for _ in range(round(limit_s / 0.02)):
        if app.main.applied >= applied:
            return True
        await pilot.pause(0.02)
    return False


@asynccontextmanager
async def live() -> AsyncIterator[tuple[Snapshot, FakeSource, FxtuiApp, Pilot]]:
    """The app showing its first snapshot; the source, for pushing later ones."""
    first = resnet_snapshot(seq=1)
    source = FakeSource([first])
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        yield first, source, app, pilot


async def test_without_input_each_snapshot_is_shown_at_once() -> None:
    async with live() as (first, source, app, pilot):
        for seq in (2, 3, 4):  # one at a time: queued snapshots replace each other before they are handled
            source.push(later(first, seq))
            await settle(app, pilot, applied=seq)
        assert app.main.snapshot is not None and app.main.snapshot.seq == 4
        assert app.main.keys_first.superseded == 0


async def test_a_snapshot_waits_while_keys_come_and_shows_when_they_pause() -> None:
    async with live() as (first, source, app, pilot):
        pacer = app.main.keys_first
        # Both snapshots come and are held within the quiet time after the key: at 0.5 s a busy machine (its load
        # in the tens, the app's loop waiting for a core) once took longer, and the first was shown as input paused.
        pacer.quiet_s, pacer.longest_s = 3.0, 30.0
        await pilot.press("down")
        for seq in (2, 3):  # one at a time, each handled (and held) before the next comes
            source.push(later(first, seq))
            for _ in range(100):
                if pacer.held is not None and pacer.held.seq == seq:
                    break
                await pilot.pause(0.01)
        assert pacer.held is not None and pacer.held.seq == 3 and pacer.superseded == 1
        assert app.main.applied == 1
        assert await wait_applied(app, pilot, 2, limit_s=10.0)  # input paused: the latest is shown
        assert app.main.snapshot is not None and app.main.snapshot.seq == 3 and pacer.held is None


async def test_a_held_snapshot_is_shown_by_the_limit_while_keys_keep_coming() -> None:
    async with live() as (first, source, app, pilot):
        pacer = app.main.keys_first
        pacer.quiet_s, pacer.longest_s = 5.0, 0.3  # input never pauses long enough
        await pilot.press("down")
        source.push(later(first, 2))
        shown = False
        for _ in range(40):  # keys every 50 ms for up to 2 s
            await pilot.press("up" if app.main.applied % 2 else "down")
            await pilot.pause(0.05)
            if app.main.applied >= 2:
                shown = True
                break
        assert shown and pacer.input_coming


async def test_a_change_of_state_is_shown_even_while_keys_come() -> None:
    async with live() as (first, source, app, pilot):
        app.main.keys_first.quiet_s = 30.0
        await pilot.press("down")
        source.push(later(first, 2, state=State.PAUSED))
        assert await wait_applied(app, pilot, 2, limit_s=5.0)
        assert app.main.snapshot is not None and app.main.snapshot.state is State.PAUSED


async def test_a_due_full_collection_runs_when_keys_pause_not_while_they_come() -> None:
    passes: list[int] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    before = gc.get_threshold()
    async with live() as (_first, _source, app, pilot):
        pacer = app.main.keys_first
        pacer.quiet_s = 2.0  # long enough that a busy machine cannot make the key's own handling look like a pause
        assert gc.get_threshold()[2] >= gc_pauses.DEFERRED  # the app defers full passes while it runs
        for _ in range(gc_pauses.DUE_AFTER):
            gc.collect(1)  # each young pass counts towards the next full one
        gc.callbacks.append(record)
        try:
            await pilot.press("down")
            assert 2 not in passes and pacer.input_coming
            for _ in range(500):
                if 2 in passes:
                    break
                await pilot.pause(0.02)
        finally:
            gc.callbacks.remove(record)
        assert 2 in passes and not pacer.input_coming
        assert gc.get_count()[2] < gc_pauses.DUE_AFTER
    assert gc.get_threshold() == before  # Python's own policy again once the app is gone


def test_a_full_collection_is_due_only_after_enough_young_passes() -> None:
    gc.disable()  # no automatic pass may reset the count meanwhile
    try:
        gc.collect()
        for _ in range(gc_pauses.DUE_AFTER - 1):
            gc.collect(1)
        assert not gc_pauses.collect_if_due() and gc.get_count()[2] == gc_pauses.DUE_AFTER - 1
        gc.collect(1)
        assert gc_pauses.collect_if_due() and gc.get_count()[2] == 0
    finally:
        gc.enable()
