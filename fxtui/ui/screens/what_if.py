"""What-ifs: apply a change to a copy of the model and measure it against the original, runs interleaved.

The list offers every what-if the session knows (those that cannot apply say why);
Enter measures the highlighted one, ``a`` all that apply. The engine measures them
between runs, and each result arrives in a later snapshot: the run median before →
after with each side's spread, the verdict when the spreads do not overlap, how far the
outputs moved, and under the list the changes per node or per module (``m``), largest
first, so what got faster and what got slower is read first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
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

from fxtui.core.findings import WhatIf, WhatIfOption
from fxtui.core.snapshot import Snapshot
from fxtui.core.units import format_seconds
from fxtui.core.what_if_text import change_text, diff_text, memory_line, spread, summary, tokens_line
from fxtui.ui.actions import WHAT_IFS, bindings
from fxtui.ui.widgets.change_table import ChangeTable


def option_prompt(option: WhatIfOption, result: WhatIf | None, waiting: bool, progress: str) -> Text:
    """One line of the list: the name, then the result, the progress, or what it would do."""
    text = Text()
    text.append(f"{option.name:<14}", style="bold")
    if option.reason:
        text.append(f"cannot apply: {option.reason}", style="dim")
    elif waiting:
        text.append(progress.partition(": ")[2] if progress.startswith(f"what-if {option.name}:") else "queued…")
        text.append("  measuring", style="bold reverse")
    elif result is None:
        text.append(option.description, style="dim")
    elif result.error:
        text.append(f"could not measure: {result.error}", style="italic")
    else:
        text.append(summary(result), style="bold" if result.verdict == "faster" else "")
        text.append(f" · rel diff {diff_text(result.max_rel_diff)}")
    return text


def result_text(result: WhatIf | None, option: WhatIfOption | None, waiting: bool = False) -> Text:
    """The highlighted what-if in full: what was done, the run, the outputs, the setup, a note."""
    text = Text()
    if option is None:
        return text
    if result is None or waiting:
        text.append(f"{option.name}: ", style="bold")
        if option.reason:
            text.append(f"cannot apply: {option.reason}")
        elif waiting:
            text.append(f"{option.description} · being measured, the result shows here")
        else:
            text.append(f"{option.description} · Enter measures it")
        return text
    text.append(f"{result.name}: ", style="bold")
    text.append(result.title)
    if result.error:
        text.append(f"\ncould not measure: {result.error}")
        return text
    text.append("\nrun median (p25–p75) ")
    text.append(f"{format_seconds(result.before_s)} ({spread(result.before_p25_s, result.before_p75_s)}) → ")
    text.append(f"{format_seconds(result.after_s)} ({spread(result.after_p25_s, result.after_p75_s)}): ")
    text.append(change_text(result), style="bold")
    text.append(f" · {result.pairs} pairs")
    if result.tokens:
        text.append(f"\n{tokens_line(result)}", style="bold")
    if result.max_abs_diff is None:
        text.append("\noutputs not compared")
    else:
        text.append(f"\noutputs max abs diff {diff_text(result.max_abs_diff)} · max rel diff ")
        text.append(diff_text(result.max_rel_diff))
    if result.setup_s:
        setup = "compiled in" if result.name == "compile" else "setup"
        text.append(f" · {setup} {format_seconds(result.setup_s)}")
    if memory := memory_line(result):
        text.append(f"\n{memory}")
    if result.note:
        text.append(f"\nnote {result.note}", style="italic")
    return text


class WhatIfScreen(ModalScreen[None]):
    """The session's what-ifs and their results; ``on_measure(names)`` asks the session to measure them.

    While it is open the main screen keeps ``options``, ``results``, ``progress`` and
    ``waiting`` up to date from later snapshots; the widgets follow them in watchers.
    """

    BINDINGS: ClassVar[list[BindingType]] = bindings(WHAT_IFS)

    options: var[tuple[WhatIfOption, ...]] = var((), init=False)
    """Every what-if offered, and why one cannot apply."""
    results: var[tuple[WhatIf, ...]] = var((), init=False)
    """The latest result of each what-if measured."""
    progress: var[str] = var("", init=False)
    """What the engine is measuring now (``what-if bf16: pair 3 of 20``)."""
    waiting: var[frozenset[str]] = var(frozenset(), init=False, bindings=True)
    """What-ifs asked for whose result has not arrived yet."""
    highlighted: var[str | None] = var(None, init=False, bindings=True)
    """The what-if the list's cursor is on."""
    kind: var[str] = var("nodes", init=False)
    """The table shows changes per ``nodes`` or per ``modules``."""

    def __init__(self, on_measure: Callable[[tuple[str, ...]], None], *, focus: str | None = None) -> None:
        super().__init__()
        self.on_measure = on_measure
        self.focus_name = focus
        """The what-if to put the cursor on when the screen opens."""
        self.widgets_ready = False
        """True once composed and mounted: the watchers draw from then on."""

    def show_latest(self, snapshot: Snapshot, waiting: frozenset[str]) -> None:
        """Show ``snapshot``'s what-ifs; ``waiting`` are those asked for and not measured yet."""
        if snapshot.what_if_options != self.options:
            self.options = snapshot.what_if_options
        self.results, self.progress, self.waiting = snapshot.what_ifs, snapshot.what_if_progress, waiting

    def compose(self) -> ComposeResult:
        with Vertical(id="what-ifs"):
            yield Label("What-ifs: changes measured on a copy of the model, runs interleaved", id="what-ifs-title")
            yield Label(id="what-ifs-progress")
            yield OptionList(id="what-ifs-list")
            yield Static(id="what-ifs-result")
            yield ChangeTable(id="what-ifs-table")

    def on_mount(self) -> None:
        self.widgets_ready = True  # from here the watchers draw; until now there was nothing to draw on
        self._show_options()
        self._show_progress()
        self.query_one(OptionList).focus()

    # -- state → widgets ------------------------------------------------------------

    def _result(self, name: str | None) -> WhatIf | None:
        return next((r for r in self.results if r.name == name), None)

    def _option(self, name: str | None) -> WhatIfOption | None:
        return next((o for o in self.options if o.name == name), None)

    def watch_options(self) -> None:
        self._show_options()

    def watch_results(self) -> None:
        self._show_prompts()
        self._show_result()

    def watch_waiting(self) -> None:
        self._show_prompts()
        self._show_progress()
        self._show_result()

    def watch_progress(self) -> None:
        self._show_prompts()
        self._show_progress()

    def watch_highlighted(self) -> None:
        self._show_result()

    def watch_kind(self, kind: str) -> None:
        if self.widgets_ready:
            self.query_one(ChangeTable).kind = kind

    def _prompt(self, option: WhatIfOption) -> Text:
        return option_prompt(option, self._result(option.name), option.name in self.waiting, self.progress)

    def _show_options(self) -> None:
        """Rebuild the list (the options change once, when the session has worked them out)."""
        if not self.widgets_ready:
            return
        options = self.query_one(OptionList)
        current = self.highlighted or self.focus_name
        options.clear_options()
        options.add_options([Option(self._prompt(o), id=o.name) for o in self.options])
        names = [o.name for o in self.options]
        if names:
            options.highlighted = names.index(current) if current in names else 0
        if not self.options:
            self.query_one("#what-ifs-result", Static).update("waiting for the session to say which what-ifs apply…")

    def _show_prompts(self) -> None:
        """Redraw each line in place: the cursor stays where it is."""
        if not self.widgets_ready:
            return
        options = self.query_one(OptionList)
        for option in self.options:
            options.replace_option_prompt(option.name, self._prompt(option))

    def _show_progress(self) -> None:
        if not self.widgets_ready:
            return
        label = self.query_one("#what-ifs-progress", Label)
        if self.progress:
            label.update(f"measuring: {self.progress}")
        elif self.waiting:
            label.update(f"queued: {', '.join(sorted(self.waiting))}")
        else:
            label.update("Enter measures · a measures all · m nodes/modules · Esc closes")

    def _show_result(self) -> None:
        if not self.widgets_ready:
            return
        result = self._result(self.highlighted)
        waiting = self.highlighted in self.waiting
        text = result_text(result, self._option(self.highlighted), waiting)
        self.query_one("#what-ifs-result", Static).update(text)
        table = self.query_one(ChangeTable)
        table.result = result
        table.display = not waiting and result is not None and result.measured and bool(result.nodes)

    @on(OptionList.OptionHighlighted, "#what-ifs-list")
    def _moved(self, message: OptionList.OptionHighlighted) -> None:
        self.highlighted = message.option.id

    @on(OptionList.OptionSelected, "#what-ifs-list")
    def _chosen(self, message: OptionList.OptionSelected) -> None:
        self.highlighted = message.option.id
        self.action_measure()

    # -- actions --------------------------------------------------------------------

    def _applicable(self, names: Iterable[str]) -> tuple[str, ...]:
        return tuple(n for n in names if (o := self._option(n)) is not None and not o.reason and n not in self.waiting)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Measuring only what applies and is not being measured; the tables only for a result that has them."""
        if action == "measure":
            return bool(self._applicable([self.highlighted] if self.highlighted else []))
        if action == "measure_all":
            return bool(self._applicable(o.name for o in self.options))
        if action == "toggle_tables":
            result = self._result(self.highlighted)
            return result is not None and bool(result.nodes)
        return True

    def action_measure(self) -> None:
        """Measure the highlighted what-if (anew, when it was measured before)."""
        names = self._applicable([self.highlighted] if self.highlighted else [])
        if names:
            self.on_measure(names)

    def action_measure_all(self) -> None:
        """Measure every what-if that applies, one after the other."""
        names = self._applicable(o.name for o in self.options)
        if names:
            self.on_measure(names)

    def action_toggle_tables(self) -> None:
        """Show the changes per node, or per module."""
        self.kind = "modules" if self.kind == "nodes" else "nodes"
