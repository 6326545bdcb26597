"""Suggestions from the engine's rules, largest estimated saving first; Enter jumps to the node."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from fxtui.engine.findings import Hint
from fxtui.engine.units import format_pct, format_seconds


def hint_prompt(hint: Hint) -> Text:
    """One hint as the list shows it: what to do, the saving, the evidence."""
    if hint.saving_s is not None:
        saving = f"saves about {format_seconds(hint.saving_s)} ({format_pct(hint.saving_pct)} of the run)"
    else:
        saving = "saving: try it and measure"
    text = Text()
    text.append(hint.title, style="bold")
    text.append(f"  [{hint.rule}]\n")
    text.append(f"{hint.evidence}\n{saving}")
    if hint.nodes:
        text.append(f"\nnodes: {', '.join(hint.nodes[:6])}{' …' if len(hint.nodes) > 6 else ''}")
    return text


class HintsScreen(ModalScreen[str | None]):
    """The current hints; dismisses with the first node of the chosen hint, or None."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,H", "dismiss", "Close hints")]

    def __init__(self, hints: tuple[Hint, ...] | None) -> None:
        super().__init__()
        self.hints = hints

    def compose(self) -> ComposeResult:
        with Vertical(id="hints"):
            yield Label("Hints  (enter goes to the node · esc closes)", id="hints-title")
            yield Label(id="hints-note")
            yield OptionList(id="hints-list")

    def on_mount(self) -> None:
        self.show_hints(self.hints)
        self.query_one(OptionList).focus()

    def show_hints(self, hints: tuple[Hint, ...] | None) -> None:
        """Show ``hints`` (None: still being worked out)."""
        self.hints = hints
        note = self.query_one("#hints-note", Label)
        options = self.query_one(OptionList)
        if hints is None:
            note.update("asking the engine for hints from the statistics so far…")
        elif not hints:
            note.update("no rule found anything worth changing")
        else:
            note.update(f"{len(hints)} hint{'s' if len(hints) != 1 else ''}, largest saving first")
        highlighted = options.highlighted
        options.clear_options()
        options.add_options([Option(hint_prompt(h), id=str(i)) for i, h in enumerate(hints or ())])
        if hints:
            options.highlighted = min(highlighted or 0, len(hints) - 1)

    @on(OptionList.OptionSelected)
    def _chosen(self, message: OptionList.OptionSelected) -> None:
        hints = self.hints or ()
        index = int(message.option.id or 0)
        nodes = hints[index].nodes if index < len(hints) else ()
        self.dismiss(nodes[0] if nodes else None)
