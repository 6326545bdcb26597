"""A small modal to choose which FX op types the tree and table show."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, SelectionList

from fxtui.core.snapshot import OPCODES


class OpFilterScreen(ModalScreen[frozenset[str] | None]):
    """Tick the op types to show; Enter applies, Esc cancels. Dismisses with the chosen set or None."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        # The list itself toggles on Enter; here Enter means "done", as in the other filter prompts.
        Binding("enter", "apply", "Apply", priority=True),
        Binding("a", "all", "All ops"),
    ]

    def __init__(self, shown: frozenset[str]) -> None:
        super().__init__()
        self.shown = shown

    def compose(self) -> ComposeResult:
        with Vertical(id="op-filter"):
            yield Label("Op types to show", id="op-filter-title")
            yield Label("space toggles · a all · enter applies · esc cancels", id="op-filter-hint")
            yield SelectionList[str](*[(op, op, op in self.shown) for op in OPCODES], id="op-list")

    def on_mount(self) -> None:
        self.query_one(SelectionList).focus()

    @property
    def selection(self) -> frozenset[str]:
        """The op types ticked now."""
        return frozenset(self.query_one(SelectionList).selected)

    def action_apply(self) -> None:
        """Apply the ticked op types."""
        self.dismiss(self.selection)

    def action_cancel(self) -> None:
        """Leave the filter as it was."""
        self.dismiss(None)

    def action_all(self) -> None:
        """Tick every op type."""
        self.query_one(SelectionList).select_all()
