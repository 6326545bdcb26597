"""Every key the app answers to, read from the bindings themselves so the list cannot go stale."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

#: Keys handled by widgets rather than by bindings with a description of their own.
NAVIGATION: tuple[tuple[str, str], ...] = (
    ("↑ ↓ PgUp PgDn Home End", "move in the tree or the table"),
    ("→ ←", "tree: expand / collapse (or go to the parent)"),
    ("Enter", "tree: show that module's subtree in the table"),
    ("Tab / Shift+Tab", "switch between the tree and the table"),
    ("click a header", "sort the table by that column (again: reverse)"),
)

_KEY_NAMES = {
    "slash": "/",
    "space": "Space",
    "backspace": "Backspace",
    "escape": "Esc",
    "question_mark": "?",
    "ctrl+c": "Ctrl+C",
    "ctrl+p": "Ctrl+P",
    "enter": "Enter",
}


def key_label(key: str) -> str:
    """``"slash"`` → ``"/"``; ``"ctrl+c"`` → ``"Ctrl+C"``."""
    return _KEY_NAMES.get(key, key)


def binding_rows(groups: Iterable[tuple[str, Iterable[BindingType]]]) -> list[tuple[str, str, str]]:
    """(group, key, description) for every binding with a description, keys of one action together."""
    rows: list[tuple[str, str, str]] = []
    for group, bindings in groups:
        seen: dict[str, int] = {}
        for binding in bindings:
            if not isinstance(binding, Binding) or not binding.description:
                continue
            keys = ", ".join(key_label(k.strip()) for k in binding.key.split(","))
            if binding.action in seen:
                g, k, d = rows[seen[binding.action]]
                rows[seen[binding.action]] = (g, f"{k}, {keys}", d)
                continue
            seen[binding.action] = len(rows)
            rows.append((group, keys, binding.description))
    return rows


class HelpScreen(ModalScreen[None]):
    """A list of every key; Esc, ? or q closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "dismiss", "Close help"),
    ]

    def __init__(
        self,
        groups: list[tuple[str, Iterable[BindingType]]],
        navigation: tuple[tuple[str, str], ...] = NAVIGATION,
        title: str = "fxtui keys",
    ) -> None:
        super().__init__()
        self.rows = binding_rows(groups)
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
