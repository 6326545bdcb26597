"""Suggestions from the engine's rules, largest estimated saving first; Enter jumps to the node.

A hint the engine can try for real (folding Conv-BN pairs) offers ``f``: the session
rewrites the graph, times the original and the rewritten graph interleaved, and the
result (before → after, the saving, how far the outputs moved) appears under the list.
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

from fxtui.engine.findings import Hint, WhatIf
from fxtui.engine.snapshot import Snapshot
from fxtui.engine.units import format_pct, format_seconds
from fxtui.ui.actions import HINTS, bindings

#: Rules whose suggestion the session can apply and measure (the ``TryFusion`` command).
TRYABLE_RULES = frozenset({"conv-bn-fold"})


def hint_prompt(hint: Hint) -> Text:
    """One hint as the list shows it: what to do, the saving, the evidence."""
    if hint.saving_s is not None:
        saving = f"saves about {format_seconds(hint.saving_s)} ({format_pct(hint.saving_pct)} of the run)"
    else:
        saving = "saving: try it and measure"
    text = Text()
    text.append(hint.title, style="bold")
    text.append(f"  [{hint.rule}]")
    if hint.rule in TRYABLE_RULES:
        text.append("  f: try it", style="bold reverse")
    text.append(f"\n{hint.evidence}\n{saving}")
    if hint.nodes:
        text.append(f"\nnodes: {', '.join(hint.nodes[:6])}{' …' if len(hint.nodes) > 6 else ''}")
    return text


def what_if_summary(what_if: WhatIf) -> str:
    """``9.98 ms → 9.07 ms, 9.1% faster``."""
    direction = "faster" if what_if.saving_pct >= 0 else "slower"
    return (
        f"{format_seconds(what_if.before_s)} → {format_seconds(what_if.after_s)}, "
        f"{abs(what_if.saving_pct):.1f}% {direction}"
    )


def what_if_text(what_if: WhatIf | None, measuring: bool) -> Text:
    """The measured what-if: before → after, the saving and the output difference (or that it is running)."""
    text = Text()
    if what_if is None:
        if measuring:
            text.append("what-if: ", style="bold")
            text.append("measuring… (folding the pairs, then timing both graphs interleaved)")
        return text
    faster = what_if.saving_pct >= 0
    text.append("what-if: ", style="bold")
    text.append(f"{what_if.title} ({len(what_if.changed)} changed)\n")
    text.append(f"uninstrumented median {format_seconds(what_if.before_s)} → {format_seconds(what_if.after_s)}  ")
    saving = f"{abs(what_if.saving_pct):.1f}% {'faster' if faster else 'slower'}"
    text.append(saving, style="bold" if faster else "bold reverse")
    text.append(f"  · outputs differ by at most {what_if.max_abs_diff:.1e}")
    return text


class HintsScreen(ModalScreen[str | None]):
    """The current hints; dismisses with the first node of the chosen hint, or None.

    ``on_try`` asks the session to apply and measure the tryable hint. While the screen
    is open the main screen keeps ``hints``, ``what_if`` and ``measuring`` up to date
    from later snapshots; the list and the what-if panel follow them in watchers.
    """

    BINDINGS: ClassVar[list[BindingType]] = bindings(HINTS)

    hints: var[tuple[Hint, ...] | None] = var(None, init=False, bindings=True)
    """The hints shown (None: still being worked out)."""
    what_if: var[WhatIf | None] = var(None, init=False)
    """The latest measured what-if."""
    measuring: var[bool] = var(False, init=False, bindings=True)
    """True from ``f`` until a new what-if arrives."""

    def __init__(
        self,
        hints: tuple[Hint, ...] | None,
        what_if: WhatIf | None = None,
        on_try: Callable[[], None] | None = None,
        *,
        measuring: bool = False,
    ) -> None:
        super().__init__()
        # Set without watchers: there is nothing to draw on until the screen is mounted.
        self.set_reactive(HintsScreen.hints, hints)
        self.set_reactive(HintsScreen.what_if, what_if)
        self.set_reactive(HintsScreen.measuring, measuring)
        self.on_try = on_try

    def show_latest(self, snapshot: Snapshot, measuring: bool) -> None:
        """Show ``snapshot``'s hints and what-if; ``measuring`` says a new what-if is being timed."""
        self.hints, self.what_if, self.measuring = snapshot.hints, snapshot.what_if, measuring

    def compose(self) -> ComposeResult:
        with Vertical(id="hints"):
            yield Label("Hints  (enter goes to the node · f tries a fold · esc closes)", id="hints-title")
            yield Label(id="hints-note")
            yield OptionList(id="hints-list")
            yield Static(id="hints-what-if")

    def on_mount(self) -> None:
        self._show_hints()
        self._show_what_if()
        self.query_one(OptionList).focus()

    def watch_hints(self) -> None:
        self._show_hints()

    def watch_what_if(self) -> None:
        self._show_what_if()

    def watch_measuring(self) -> None:
        self._show_what_if()

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
        options.add_options([Option(hint_prompt(h), id=str(i)) for i, h in enumerate(hints or ())])
        if hints:
            options.highlighted = min(highlighted or 0, len(hints) - 1)

    def _show_what_if(self) -> None:
        if not self.query("#hints-what-if"):
            return
        panel = self.query_one("#hints-what-if", Static)
        text = what_if_text(None if self.measuring else self.what_if, self.measuring)
        panel.update(text)
        panel.display = bool(text)

    @property
    def tryable(self) -> bool:
        """True when some hint can be applied and measured."""
        return self.on_try is not None and any(h.rule in TRYABLE_RULES for h in self.hints or ())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``f`` only when a hint can be tried and no measurement is running."""
        if action == "try_it":
            return self.tryable and not self.measuring
        return True

    def action_try_it(self) -> None:
        """Ask the session to fold the pairs and time both graphs; the result shows when it arrives."""
        if not self.tryable or self.measuring or self.on_try is None:
            return
        self.on_try()
        self.measuring = True

    @on(OptionList.OptionSelected)
    def _chosen(self, message: OptionList.OptionSelected) -> None:
        hints = self.hints or ()
        index = int(message.option.id or 0)
        nodes = hints[index].nodes if index < len(hints) else ()
        self.dismiss(nodes[0] if nodes else None)
