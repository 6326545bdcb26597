"""The profiled program's own output (``fxtui run``), while the app owns the terminal.

The program prints to a log file beside its socket; every snapshot carries the file's latest
lines, and this panel follows them: what the program printed stays readable without leaving
the app. The file's path is given here and when the app closes.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from fxtui.core.snapshot import Snapshot


def log_text(snapshot: Snapshot) -> Text:
    """The program's state, its log's path, then its latest lines (the newest last)."""
    program = snapshot.program
    text = Text()
    if program is None:
        return text
    text.append(f"{' '.join(program.command)}", style="bold")
    text.append(f"  {program.status_text()}\n")
    if program.log:
        text.append(f"output: {program.log}\n", style="dim")
    text.append("\n")
    if program.log_tail:
        text.append("\n".join(program.log_tail))
    else:
        text.append("the program has printed nothing yet", style="italic")
    return text


class ProgramLogScreen(ModalScreen[None]):
    """The program's latest output lines; Esc, l or q closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,l,q", "dismiss", "Close")]

    def __init__(self, snapshot: Snapshot) -> None:
        super().__init__()
        self.snapshot = snapshot

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="program-log"):
            yield Static(log_text(self.snapshot), id="program-log-text")
        yield Static("Esc, l or q closes this panel; the program goes on.", id="program-log-hint")

    def on_mount(self) -> None:
        self.query_one("#program-log", VerticalScroll).scroll_end(animate=False)

    def show_latest(self, snapshot: Snapshot) -> None:
        """Follow the program: its newest lines, scrolled to the end unless the user scrolled up."""
        program, before = snapshot.program, self.snapshot.program
        self.snapshot = snapshot
        if program is None or (before is not None and program.log_tail == before.log_tail and program == before):
            return
        view = self.query_one("#program-log", VerticalScroll)
        at_end = view.scroll_y >= view.max_scroll_y - 1
        self.query_one("#program-log-text", Static).update(log_text(snapshot))
        if at_end:
            view.scroll_end(animate=False)
