"""Suggestions from the engine's rules, largest estimated saving first; Enter jumps to the node.

A hint the engine can measure names its what-if (``fold-bn``, ``channels-last``,
``threads=N``, ``compile``): ``w`` on it measures the change on a copy of the model
against the original and opens the what-ifs to show it. Once measured, the hint shows
the measured change instead of its estimate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.reactive import var
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from fxtui.core.findings import Hint, WhatIf
from fxtui.core.snapshot import Snapshot
from fxtui.core.units import format_pct, format_seconds
from fxtui.core.what_if_text import summary
from fxtui.ui.actions import HINTS, bindings


def measured_for(hint: Hint, what_ifs: tuple[WhatIf, ...]) -> WhatIf | None:
    """The measured what-if of ``hint``, if it has one and it was measured."""
    return next((w for w in what_ifs if hint.what_if and w.name == hint.what_if and w.measured), None)


def hint_prompt(hint: Hint, measured: WhatIf | None = None) -> Text:
    """One hint as the list shows it: what to do, the saving (measured when it was), the evidence."""
    text = Text()
    text.append(hint.title, style="bold")
    text.append(f"  [{hint.rule}]")
    if hint.what_if and measured is None:
        text.append(f"  w: measure it ({hint.what_if})", style="bold reverse")
    text.append(f"\n{hint.evidence}\n")
    if measured is not None:
        text.append(f"measured (what-if {measured.name}): {summary(measured)}", style="bold")
    elif hint.saving_s is not None:
        text.append(f"saves about {format_seconds(hint.saving_s)} ({format_pct(hint.saving_pct)} of the run)")
    else:
        text.append("saving: try it and measure")
    if hint.nodes:
        text.append(f"\nnodes: {', '.join(hint.nodes[:6])}{' …' if len(hint.nodes) > 6 else ''}")
    return text


def what_ifs_line(what_ifs: tuple[WhatIf, ...], waiting: frozenset[str]) -> Text:
    """Under the list: the what-ifs measured so far and those being measured, with where to see them."""
    text = Text()
    measured = [w for w in what_ifs if w.measured]
    if not measured and not waiting:
        return text
    text.append("what-ifs: ", style="bold")
    parts = [f"{w.name} {summary(w).split(', ')[-1]}" for w in measured]
    parts += [f"{name} measuring…" for name in sorted(waiting)]
    text.append(" · ".join(parts))
    text.append("  (w on the main screen lists them)")
    return text


class HintsScreen(ModalScreen[str | None]):
    """The current hints; dismisses with the first node of the chosen hint, or None.

    ``on_measure(name)`` asks the session to measure what-if ``name``. While the screen is
    open the main screen keeps ``hints``, ``what_ifs`` and ``waiting`` up to date from later
    snapshots; the list and the line under it follow them in watchers.
    """

    BINDINGS: ClassVar[list[BindingType]] = bindings(HINTS)

    hints: var[tuple[Hint, ...] | None] = var(None, init=False, bindings=True)
    """The hints shown (None: still being worked out)."""
    what_ifs: var[tuple[WhatIf, ...]] = var((), init=False)
    """The what-ifs measured so far."""
    waiting: var[frozenset[str]] = var(frozenset(), init=False)
    """What-ifs asked for whose result has not arrived yet."""

    def __init__(
        self,
        hints: tuple[Hint, ...] | None,
        what_ifs: tuple[WhatIf, ...] = (),
        on_measure: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__()
        # Set without watchers: there is nothing to draw on until the screen is mounted.
        self.set_reactive(HintsScreen.hints, hints)
        self.set_reactive(HintsScreen.what_ifs, what_ifs)
        self.on_measure = on_measure

    def show_latest(self, snapshot: Snapshot, waiting: frozenset[str]) -> None:
        """Show ``snapshot``'s hints and what-ifs; ``waiting`` are the what-ifs being measured."""
        self.hints, self.what_ifs, self.waiting = snapshot.hints, snapshot.what_ifs, waiting

    def compose(self) -> ComposeResult:
        with Vertical(id="hints"):
            yield Label("Hints  (enter goes to the node · w measures it · esc closes)", id="hints-title")
            yield Label(id="hints-note")
            yield OptionList(id="hints-list")
            yield Static(id="hints-what-if")

    def on_mount(self) -> None:
        self._show_hints()
        self._show_what_ifs()
        self.query_one(OptionList).focus()

    def watch_hints(self) -> None:
        self._show_hints()

    def watch_what_ifs(self, old: tuple[WhatIf, ...], new: tuple[WhatIf, ...]) -> None:
        if {w.name for w in old if w.measured} != {w.name for w in new if w.measured}:
            self._show_hints()  # a hint's saving changes from estimated to measured
        self._show_what_ifs()

    def watch_waiting(self) -> None:
        self._show_what_ifs()

    def _show_hints(self) -> None:
        if not self.query("#hints-list"):  # not composed yet: on_mount draws what is current by then
            return
        hints = self.hints
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
        options.add_options(
            [Option(hint_prompt(h, measured_for(h, self.what_ifs)), id=str(i)) for i, h in enumerate(hints or ())]
        )
        if hints:
            options.highlighted = min(highlighted or 0, len(hints) - 1)

    def _show_what_ifs(self) -> None:
        if not self.query("#hints-what-if"):
            return
        panel = self.query_one("#hints-what-if", Static)
        text = what_ifs_line(self.what_ifs, self.waiting)
        panel.update(text)
        panel.display = bool(text)

    @property
    def highlighted_hint(self) -> Hint | None:
        """The hint the list's cursor is on."""
        hints = self.hints or ()
        index = self.query_one(OptionList).highlighted if self.query("#hints-list") else None
        return hints[index] if index is not None and index < len(hints) else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``w`` only on a hint whose change the session can measure."""
        if action == "measure_hint":
            hint = self.highlighted_hint
            return self.on_measure is not None and hint is not None and bool(hint.what_if)
        return True

    def action_measure_hint(self) -> None:
        """Measure the highlighted hint's change; the what-ifs open and show it."""
        hint = self.highlighted_hint
        if hint is not None and hint.what_if and self.on_measure is not None:
            self.on_measure(hint.what_if)

    @on(OptionList.OptionHighlighted)
    def _moved(self) -> None:
        self.refresh_bindings()  # w applies to some hints only

    @on(OptionList.OptionSelected)
    def _chosen(self, message: OptionList.OptionSelected) -> None:
        hints = self.hints or ()
        index = int(message.option.id or 0)
        nodes = hints[index].nodes if index < len(hints) else ()
        self.dismiss(nodes[0] if nodes else None)
