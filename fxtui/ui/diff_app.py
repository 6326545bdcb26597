"""``fxtui diff before.json after.json`` on a terminal: what changed between two saved runs.

Totals on top (both runs described, the profiled and uninstrumented medians before →
after, settings that differ, what the ``~`` mark means), then three tables on tabs:
nodes by absolute change, modules, and nodes found in one run only (what a fusion
removed or added). Everything comes from
:class:`~fxtui.report.diff.RunDiff`, which needs neither torch nor the model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.widgets import DataTable, Static, TabbedContent, TabPane

from fxtui.core.units import format_seconds, format_signed_pct, format_signed_seconds
from fxtui.report.diff import SPREAD_MARK, Change, RunDiff, spread_legend
from fxtui.ui.actions import DIFF, bindings, help_rows
from fxtui.ui.screens.help import HelpScreen
from fxtui.ui.widgets.key_bar import KeyBar

#: Keys handled by the tables themselves.
DIFF_NAVIGATION: tuple[tuple[str, str], ...] = (
    ("↑ ↓ PgUp PgDn Home End", "move in the table"),
    ("click a header", "sort by that column (again: reverse)"),
)


@dataclass(frozen=True, slots=True)
class SortKey:
    """One way to order changes."""

    key: str
    label: str
    value: Callable[[Change], Any]


def _pct_value(c: Change) -> float:
    return c.delta_pct if c.delta_pct is not None else float("-inf")


SORTS: tuple[SortKey, ...] = (
    SortKey("abs", "|Δ|", lambda c: abs(c.delta_s)),
    SortKey("delta", "Δ", lambda c: c.delta_s),
    SortKey("pct", "Δ%", _pct_value),
    SortKey("before", "before", lambda c: c.before_s),
    SortKey("after", "after", lambda c: c.after_s),
    SortKey("name", "name", lambda c: c.name),
)
SORT_BY_KEY = {s.key: s for s in SORTS}
#: The number columns both the node and the module table end with: (header, column key).
NUMBER_COLUMNS = (("before", "before"), ("after", "after"), ("Δ", "delta"), ("Δ%", "pct"))
#: Which sort a click on a column header asks for.
HEADER_SORT = {"name": "name", "module": "name", "before": "before", "after": "after", "delta": "abs", "pct": "pct"}


def describe_run(meta: dict[str, Any]) -> str:
    """One saved run in a line: model, inputs, threads, runs."""
    inputs = ", ".join(str(i) for i in meta.get("inputs", []))
    threads, runs = meta.get("threads", "?"), meta.get("runs", "?")
    return f"{meta.get('model', '?')}  inputs {inputs}  threads {threads}  runs {runs}"


def change_text(change: Change) -> Text:
    """``12.0 ms → 10.5 ms  Δ −1.50 ms (−12.5%)``, the change in bold."""
    text = Text(f"{format_seconds(change.before_s)} → {format_seconds(change.after_s)}  ")
    text.append(f"Δ {format_signed_seconds(change.delta_s)} ({format_signed_pct(change.delta_pct)})", style="bold")
    return text


def totals_text(diff: RunDiff) -> Text:
    """The four lines above the tables."""
    text = Text()
    for label, meta in (("before", diff.before), ("after", diff.after)):
        text.append(f"{label:<9}", style="bold")
        text.append(describe_run(meta) + "\n")
    for label, change, what in (("run", diff.run, "profiled"), ("uninstr.", diff.eager, "uninstrumented")):
        text.append(f"{label:<9}", style="bold")
        text.append_text(change_text(change))
        text.append(f"  ({what} median)" + ("\n" if label == "run" else ""))
    shown = {"time to first token": "TTFT", "time per output token": "TPOT"}
    for change in (c for c in diff.generation if c.name in shown):  # two generations: what a user waits for
        text.append(f"\n{shown[change.name]:<9}", style="bold")
        text.append_text(change_text(change))
    if diff.tokens_line:
        text.append("\n" + diff.tokens_line)
    if diff.differences:
        text.append("\nsettings differ: ", style="bold")
        text.append("; ".join(diff.differences))
    if diff.within_spread:
        text.append("\n" + spread_legend(diff), style="dim")
    return text


def sorted_changes(changes: Sequence[Change], key: str, descending: bool) -> list[Change]:
    """``changes`` ordered by sort ``key``; ties by name so the order is stable."""
    by_name = sorted(changes, key=lambda c: c.name)
    return sorted(by_name, key=SORT_BY_KEY[key].value, reverse=descending)


class DiffApp(App[None]):
    """Two saved runs compared: totals, then nodes, modules and one-run-only nodes on tabs."""

    CSS_PATH = "app.tcss"
    TITLE = "fxtui diff"
    CSS = """
    #diff-totals { height: auto; background: $panel; padding: 0 1; }
    #diff-sort { height: 1; padding: 0 1; color: $text-muted; }
    TabbedContent { height: 1fr; }
    TabPane { padding: 0; }
    DataTable { height: 1fr; }
    """

    BINDINGS: ClassVar[list[BindingType]] = bindings(DIFF)

    def __init__(self, diff: RunDiff, *, title: str = "fxtui diff") -> None:
        super().__init__()
        self.diff = diff
        self.title = title
        self.sort_key = "abs"
        self.sort_descending = True

    def compose(self) -> ComposeResult:
        yield Static(totals_text(self.diff), id="diff-totals")
        yield Static(id="diff-sort")
        modules = [m for m in self.diff.modules if m.name]
        only = len(self.diff.only_before) + len(self.diff.only_after)
        with TabbedContent(id="diff-tabs", initial="nodes"):
            with TabPane(f"1 Nodes ({len(self.diff.nodes)})", id="nodes"):
                yield DataTable(id="diff-nodes", cursor_type="row", zebra_stripes=True)
            with TabPane(f"2 Modules ({len(modules)})", id="modules"):
                yield DataTable(id="diff-modules", cursor_type="row", zebra_stripes=True)
            with TabPane(f"3 One run only ({only})", id="only"):
                yield DataTable(id="diff-only", cursor_type="row", zebra_stripes=True)
        yield KeyBar()

    def on_mount(self) -> None:
        nodes = self.query_one("#diff-nodes", DataTable)
        for label, key in (("node", "name"), ("module path", "module"), *NUMBER_COLUMNS, (SPREAD_MARK, "spread")):
            nodes.add_column(self._header(label, key), key=key)
        modules = self.query_one("#diff-modules", DataTable)
        for label, key in (("module path", "name"), *NUMBER_COLUMNS):
            modules.add_column(self._header(label, key), key=key)
        only = self.query_one("#diff-only", DataTable)
        only.add_column("node", key="name")
        only.add_column("found in", key="run")
        for name in self.diff.only_before:
            only.add_row(name, "before only", key=f"before:{name}")
        for name in self.diff.only_after:
            only.add_row(name, "after only", key=f"after:{name}")
        if not self.diff.only_before and not self.diff.only_after:
            only.add_row(Text("every node is in both runs", style="italic"), "", key="none")
        self._fill()
        nodes.focus()

    # -- tables -------------------------------------------------------------

    def _fill(self) -> None:
        """(Re)fill the node and module tables in the current order; each keeps its cursor's row."""
        order = SORT_BY_KEY[self.sort_key]
        arrow = "↓" if self.sort_descending else "↑"
        self.query_one("#diff-sort", Static).update(f"sort {order.label} {arrow}  ·  s: next sort  S: reverse")
        rows = sorted_changes(self.diff.nodes, self.sort_key, self.sort_descending)
        self._refill(
            self.query_one("#diff-nodes", DataTable),
            [
                (c.name, (c.name, c.module_path or "(root)", *self._numbers(c), SPREAD_MARK if c.within_spread else ""))
                for c in rows
            ],
        )
        modules = sorted_changes([m for m in self.diff.modules if m.name], self.sort_key, self.sort_descending)
        module_rows = [(m.name, (m.name, *self._numbers(m))) for m in modules]
        self._refill(self.query_one("#diff-modules", DataTable), module_rows)

    @staticmethod
    def _header(label: str, key: str) -> Text:
        # Number columns are right-aligned; so are their headers.
        return Text(label, justify="left" if key in ("name", "module", "spread") else "right")

    @staticmethod
    def _numbers(change: Change) -> tuple[Text, Text, Text, Text]:
        # Slower is what a user hunts for: bold; faster reads plain.
        style = "bold" if change.delta_s > 0 else ""
        return (
            Text(format_seconds(change.before_s), justify="right"),
            Text(format_seconds(change.after_s), justify="right"),
            Text(format_signed_seconds(change.delta_s), style=style, justify="right"),
            Text(format_signed_pct(change.delta_pct), style=style, justify="right"),
        )

    @staticmethod
    def _refill(table: DataTable[Any], rows: list[tuple[str, tuple[Any, ...]]]) -> None:
        current = None
        if table.row_count and table.cursor_row >= 0:
            current = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        table.clear()
        for key, cells in rows:
            table.add_row(*cells, key=key)
        if current is not None:
            table.move_cursor(row=table.get_row_index(current), animate=False)

    # -- actions ------------------------------------------------------------

    def sort_by(self, key: str, descending: bool | None = None) -> None:
        """Order both tables by ``key``; numbers start largest first, names A to Z."""
        self.sort_key = key
        self.sort_descending = (key != "name") if descending is None else descending
        self._fill()

    def action_sort_next(self) -> None:
        """Sort by the next key."""
        keys = [s.key for s in SORTS]
        self.sort_by(keys[(keys.index(self.sort_key) + 1) % len(keys)])

    def action_sort_reverse(self) -> None:
        """Flip the order."""
        self.sort_by(self.sort_key, not self.sort_descending)

    def action_show_tab(self, tab: str) -> None:
        """Switch to the nodes, modules or one-run-only table."""
        self.query_one(TabbedContent).active = tab
        self.query_one(f"#diff-{tab}", DataTable).focus()

    @on(DataTable.HeaderSelected)
    def _header_clicked(self, message: DataTable.HeaderSelected) -> None:
        key = HEADER_SORT.get(str(message.column_key.value))
        if key is None:
            return
        self.sort_by(key, not self.sort_descending if key == self.sort_key else None)

    def action_help(self) -> None:
        """List every key."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(help_rows([DIFF]), DIFF_NAVIGATION, title="fxtui diff keys"))
