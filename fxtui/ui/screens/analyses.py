"""The modal screens that show what the session analysed: hints, what-ifs, threads, the program's output.

Which screen opens with what, and how each follows the snapshots: an open hints, what-if or log
screen shows every new snapshot, even under another modal, so answers appear as they arrive.
The screen that opens them keeps the state (the latest snapshot, the what-ifs still awaited) and
hands over what each needs; nothing here knows that screen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from textual.app import App

from fxtui.core.findings import WhatIf
from fxtui.core.snapshot import Snapshot
from fxtui.core.what_if_text import summary
from fxtui.ui.screens.hints import HintsScreen
from fxtui.ui.screens.program_log import ProgramLogScreen
from fxtui.ui.screens.threads import ThreadsScreen
from fxtui.ui.screens.what_if import WhatIfScreen


def open_hints(
    app: App[None],
    snapshot: Snapshot | None,
    waiting: frozenset[str],
    *,
    on_select: Callable[[str | None], None],
    on_measure: Callable[[str], None],
) -> None:
    """List the suggestions; Enter on one hands its node to ``on_select``, ``w`` its what-if to ``on_measure``."""
    screen = HintsScreen(None, on_measure=on_measure)
    if snapshot is not None:
        screen.show_latest(snapshot, waiting)
    app.push_screen(screen, on_select)


def open_what_ifs(
    app: App[None],
    snapshot: Snapshot | None,
    waiting: frozenset[str],
    *,
    measure: Callable[[tuple[str, ...]], None],
    focus: str | None = None,
) -> None:
    """List the what-ifs and their results (on ``focus``); Enter hands the chosen names to ``measure``."""
    if isinstance(app.screen, WhatIfScreen):
        return
    screen = WhatIfScreen(measure, focus=focus)
    if snapshot is not None:
        screen.show_latest(snapshot, waiting)
    app.push_screen(screen)


def open_log(app: App[None], snapshot: Snapshot | None) -> None:
    """The program's own output (``fxtui run``): its latest lines, following it as it prints."""
    if snapshot is not None and not isinstance(app.screen, ProgramLogScreen):
        app.push_screen(ProgramLogScreen(snapshot))


def open_threads(app: App[None], snapshot: Snapshot | None) -> None:
    """Threads, cores, build flags and library versions, warnings first (once a graph was traced)."""
    if snapshot is not None and snapshot.graph is not None and not isinstance(app.screen, ThreadsScreen):
        app.push_screen(ThreadsScreen.for_snapshot(snapshot))


def follow(app: App[None], snapshot: Snapshot | None, waiting: frozenset[str]) -> None:
    """Show the latest snapshot in every open hints, what-if or log screen (under another one too: it shows again)."""
    if snapshot is None:
        return
    for screen in app.screen_stack:
        if isinstance(screen, (HintsScreen, WhatIfScreen)):
            screen.show_latest(snapshot, waiting)
        elif isinstance(screen, ProgramLogScreen):
            screen.show_latest(snapshot)


def announce(app: App[None], arrived: Iterable[WhatIf]) -> None:
    """Say that each what-if result arrived, unless the what-if screen, which shows it, is open."""
    for result in arrived:
        if not isinstance(app.screen, WhatIfScreen):
            app.notify(f"what-if {result.name}: {summary(result)} · w shows it", timeout=6)
