"""Every key the app answers to, listed from the action registry so the list cannot go stale."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from fxtui.ui.actions import NAVIGATION


class HelpScreen(ModalScreen[None]):
    """A list of every key; Esc, ? or q closes it.

    ``rows`` are (group, keys, description), as :func:`fxtui.ui.actions.help_rows` gives
    them; ``navigation`` are (keys, description) of keys the widgets handle themselves.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "dismiss", "Close help"),
    ]

    def __init__(
        self,
        rows: Sequence[tuple[str, str, str]],
        navigation: tuple[tuple[str, str], ...] = NAVIGATION,
        title: str = "fxtui keys",
    ) -> None:
        super().__init__()
        self.rows = list(rows)
        self.navigation = navigation
        self.title_text = title

    def compose(self) -> ComposeResult:
        table = Table(title=self.title_text, expand=True, show_edge=False, pad_edge=False)
        table.add_column("key", no_wrap=True, style="bold")
        table.add_column("what it does")
        group = None
        for row_group, key, description in self.rows:
            if row_group != group:
                group = row_group
                table.add_row(Text(row_group, style="italic"), "")
            table.add_row(key, description)
        if self.navigation:
            table.add_row(Text("navigation", style="italic"), "")
        for key, description in self.navigation:
            table.add_row(key, description)
        with VerticalScroll(id="help"):
            yield Static(table, id="help-table")
            yield Static("Esc, ? or q closes this help.", id="help-hint")
