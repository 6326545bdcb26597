"""The modal screens that show what the session analysed: hints, what-ifs, threads.

The main screen asks the session (hints, what-ifs) and opens these screens over itself; they
follow every new snapshot while open, even under another modal, so they show the answers as
they arrive. Functions of the main screen's public state: the screen keeps the state, this
module what the modals need of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import App

from fxtui.core.commands import Explain, RequestHints
from fxtui.core.snapshot import Snapshot
from fxtui.core.what_if_text import summary
from fxtui.ui.screens.hints import HintsScreen
from fxtui.ui.screens.program_log import ProgramLogScreen
from fxtui.ui.screens.threads import ThreadsScreen
from fxtui.ui.screens.what_if import WhatIfScreen

if TYPE_CHECKING:
    from fxtui.ui.screens.main import MainScreen


def explain(main: MainScreen) -> None:
    """Ask for the aten operators inside the selected node; the detail pane shows them when they arrive."""
    if main.selected is not None:
        main.explaining = main.explaining | {main.selected}
        main.source.send(Explain(main.selected))


def open_hints(main: MainScreen) -> None:
    """Ask for suggestions and list them; Enter on one selects its node, ``w`` measures its what-if."""
    main.source.send(RequestHints())
    screen = HintsScreen(None, on_measure=lambda name: measure_hint(main, name))
    if main.snapshot is not None:
        screen.show_latest(main.snapshot, main.waiting)
    main.app.push_screen(screen, main.show_node)


def open_what_ifs(main: MainScreen, focus: str | None = None) -> None:
    """List the what-ifs and their results; Enter measures one."""
    if isinstance(main.app.screen, WhatIfScreen):
        return
    screen = WhatIfScreen(lambda names: main.what_ifs.measure(main.snapshot, names), focus=focus)
    if main.snapshot is not None:
        screen.show_latest(main.snapshot, main.waiting)
    main.app.push_screen(screen)


def measure_hint(main: MainScreen, name: str) -> None:
    """From the hints: measure what-if ``name`` unless it was, and open the what-ifs on it."""
    if not main.what_ifs.measured(main.snapshot, name):
        main.what_ifs.measure(main.snapshot, (name,))
    open_what_ifs(main, focus=name)


def open_log(main: MainScreen) -> None:
    """The program's own output (``fxtui run``): its latest lines, following it as it prints."""
    if main.snapshot is not None and not isinstance(main.app.screen, ProgramLogScreen):
        main.app.push_screen(ProgramLogScreen(main.snapshot))


def open_threads(main: MainScreen) -> None:
    """Threads, cores, build flags and library versions, warnings first."""
    if main.snapshot is not None and main.graph is not None and not isinstance(main.app.screen, ThreadsScreen):
        main.app.push_screen(ThreadsScreen.for_snapshot(main.snapshot))


def follow(app: App[None], snapshot: Snapshot | None, waiting: frozenset[str]) -> None:
    """Show the latest snapshot in every open hints or what-if screen (under another one too: it shows again)."""
    if snapshot is None:
        return
    for screen in app.screen_stack:
        if isinstance(screen, (HintsScreen, WhatIfScreen)):
            screen.show_latest(snapshot, waiting)
        elif isinstance(screen, ProgramLogScreen):
            screen.show_latest(snapshot)


def collect(main: MainScreen, snapshot: Snapshot) -> None:
    """Stop waiting for the what-ifs whose new result arrived; say so when their screen is not open."""
    for result in main.what_ifs.collect(snapshot):
        if not isinstance(main.app.screen, WhatIfScreen):
            main.notify(f"what-if {result.name}: {summary(result)} · w shows it", timeout=6)
