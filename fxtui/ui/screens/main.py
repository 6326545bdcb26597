"""The profiler's main view: status, module tree, timing table, detail pane, footer."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Input, Static, Tree

from fxtui.engine.commands import Pause, Reset, Resume
from fxtui.engine.findings import WhatIf
from fxtui.engine.model import PHASES, module_ancestors
from fxtui.engine.snapshot import GraphInfo, NodeInfo, NodeStats, Snapshot, SnapshotSource, State
from fxtui.ui.actions import MAIN, actions, bindings
from fxtui.ui.columns import BY_KEY, COLUMN_KEYS
from fxtui.ui.filtering import (
    DEFAULT_FILTER,
    FilterSpec,
    describe,
    in_scope,
    matches,
    shown_ops,
    visible_modules,
)
from fxtui.ui.messages import SnapshotReady
from fxtui.ui.screens.filter_keys import FilterKeysMixin
from fxtui.ui.screens.hints import HintsScreen, what_if_summary
from fxtui.ui.screens.navigation import NavigationMixin
from fxtui.ui.screens.panels import PanelsMixin
from fxtui.ui.widgets.detail_pane import DetailPane
from fxtui.ui.widgets.footer import Footer
from fxtui.ui.widgets.module_tree import Entry, ModuleTree
from fxtui.ui.widgets.node_table import NodeTable
from fxtui.ui.widgets.status_bar import StatusBar, ViewState

# Actions that mean nothing until a graph has been traced.
_NEED_GRAPH = frozenset(a.name for a in actions(MAIN) if a.needs_graph)


class MainScreen(NavigationMixin, FilterKeysMixin, PanelsMixin, Screen[None]):
    """Live view of one profiling session.

    The navigation keys live in :class:`NavigationMixin`, the filter keys in
    :class:`FilterKeysMixin`, the keys that ask the session for more (explain, hints,
    what-if, threads) in :class:`PanelsMixin`; this class applies snapshots and keeps
    the widgets in step.
    """

    BINDINGS: ClassVar[list[BindingType]] = bindings(MAIN)

    def __init__(self, source: SnapshotSource, on_fatal: Callable[[str], None]) -> None:
        super().__init__()
        self.source = source
        self.on_fatal = on_fatal
        """Called when the session failed before there was anything to show."""
        self.snapshot: Snapshot | None = None
        self.graph: GraphInfo | None = None
        self.spec: FilterSpec = DEFAULT_FILTER
        self.scope = ""
        self.selected: str | None = None
        self.paused = False
        self.applied = 0
        """How many snapshots were applied (tests wait on it)."""
        self._filtered: list[NodeInfo] = []
        self._ancestry: list[tuple[str, list[str]]] = []
        self._view: list[NodeInfo] = []
        self._input_mode: str | None = None
        self._explaining: set[str] = set()
        """Nodes whose aten breakdown was asked for."""
        self.trying_fusion = False
        """True from asking for the Conv-BN what-if until a new result arrives."""
        self.what_if_before: WhatIf | None = None

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        yield Static(id="error-banner")
        with Horizontal(id="body"):
            yield ModuleTree(id="tree")
            with Vertical(id="right"):
                yield NodeTable(id="table")
                yield DetailPane(id="detail")
        yield Input(id="filter-input")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#error-banner").display = False
        self.query_one("#filter-input").display = False
        self.query_one(NodeTable).focus()
        self._show_status()
        self.query_one(DetailPane).show(None, None)

    # -- widgets ------------------------------------------------------------

    @property
    def table(self) -> NodeTable:
        """The timing table."""
        return self.query_one(NodeTable)

    @property
    def module_tree(self) -> ModuleTree:
        """The module tree (``tree`` is taken: DOMNode.tree draws the widget tree for debugging)."""
        return self.query_one(ModuleTree)

    # -- snapshots ----------------------------------------------------------

    @on(SnapshotReady)
    def _on_snapshot(self, message: SnapshotReady) -> None:
        self.apply_snapshot(message.snapshot)

    def apply_snapshot(self, snapshot: Snapshot) -> None:
        """Show ``snapshot``: numbers change in place; cursor, scroll, selection, sort and filters stay."""
        if snapshot.state is State.ERROR and snapshot.graph is None and self.graph is None:
            self.on_fatal(snapshot.message or "loading the model failed")
            return
        if snapshot.graph is None and self.graph is not None:
            # The source failed after tracing: keep the graph and numbers on screen, show the state.
            snapshot = Snapshot(
                self.graph,
                snapshot.state,
                snapshot.seq,
                message=snapshot.message,
                error=snapshot.error,
                runs=self.snapshot.runs if self.snapshot else 0,
                run_median_s=self.snapshot.run_median_s if self.snapshot else None,
                eager_median_s=self.snapshot.eager_median_s if self.snapshot else None,
                nodes=self.snapshot.nodes if self.snapshot else {},
                modules=self.snapshot.modules if self.snapshot else {},
            )
        before_error = self.snapshot.error if self.snapshot is not None else None
        with self.app.batch_update():
            self.snapshot = snapshot
            if snapshot.graph is not None and snapshot.graph is not self.graph:
                self._set_graph(snapshot.graph)
            elif self.graph is not None:
                self.table.set_stats(snapshot.nodes)
            self._show_numbers()
            self._show_error()
            self._show_detail()
            self._show_status()
        self.applied += 1
        if self.trying_fusion and snapshot.what_if is not None and snapshot.what_if is not self.what_if_before:
            self.trying_fusion = False
            self._show_status()
            if not isinstance(self.app.screen, HintsScreen):
                self.notify(f"what-if measured: {what_if_summary(snapshot.what_if)} · H shows it", timeout=6)
        hints_screen = self.app.screen
        if isinstance(hints_screen, HintsScreen):
            if snapshot.hints is not hints_screen.hints:
                hints_screen.show_hints(snapshot.hints)
            if snapshot.what_if is not hints_screen.what_if or self.trying_fusion != hints_screen.measuring:
                hints_screen.show_what_if(snapshot.what_if, self.trying_fusion)
        if snapshot.error != before_error or self.applied == 1:
            self.refresh_bindings()

    def _set_graph(self, graph: GraphInfo) -> None:
        self.graph = graph
        self.table.set_graph(graph)
        self._apply_filter(self.spec)
        self.refresh_bindings()

    def _medians(self) -> Mapping[str, NodeStats]:
        return self.snapshot.nodes if self.snapshot is not None else {}

    def _show_numbers(self) -> None:
        if self.graph is None or self.snapshot is None:
            return
        stats = self.snapshot.nodes
        modules = self.snapshot.modules
        unfiltered = not (self.spec.path or self.spec.types or self.spec.phases)
        if modules and unfiltered and shown_ops(self.spec) >= DEFAULT_FILTER.ops:
            # Only inputs and the output (no time to speak of) are hidden: the engine's inclusive
            # module times are the tree's numbers, and summing ten thousand medians again is waste.
            self.module_tree.update_numbers(
                {p: m.inclusive_s for p, m in modules.items()},
                stats,
                self.snapshot.run_median_s or 0.0,
                backward={p: m.backward_s for p, m in modules.items()} if self.graph.training else None,
            )
            return
        totals: dict[str, float] = {}
        backward: dict[str, float] = {}
        by_name = self.graph.by_name
        for name, ancestors in self._ancestry:
            node_stats = stats.get(name)
            if node_stats is None:
                continue
            median = node_stats.median_s
            grad = by_name[name].phase == "backward"
            for path in ancestors:
                totals[path] = totals.get(path, 0.0) + median
                if grad:
                    backward[path] = backward.get(path, 0.0) + median
        self.module_tree.update_numbers(totals, stats, self.snapshot.run_median_s or 0.0, backward=backward)

    def _show_error(self) -> None:
        banner = self.query_one("#error-banner", Static)
        snapshot = self.snapshot
        error = snapshot.error if snapshot is not None else None
        node = error.node if error is not None else None
        self.table.error_node = node
        self.module_tree.error_node = node
        if error is not None:
            where = f"in node {node}" if node else "in the model"
            if node and self.graph is not None and node in self.graph.by_name:
                where += f" ({self.graph.node(node).target})"
            runs = f" · {error.runs_failed} failed run{'s' if error.runs_failed != 1 else ''}"
            hint = " · e: go to it" if node else ""
            banner.update(Text(f"✖ error {where}: {error.message}{runs}{hint}"))
            banner.display = True
        elif snapshot is not None and snapshot.state is State.ERROR:
            banner.update(Text(f"✖ {snapshot.message or 'the session stopped with an error'}"))
            banner.display = True
        else:
            banner.display = False

    def _show_detail(self) -> None:
        detail = self.query_one(DetailPane)
        if self.graph is None or self.selected is None or self.selected not in self.graph.by_name:
            detail.show(None, None)
            return
        snapshot = self.snapshot
        error = snapshot.error if snapshot is not None else None
        aten = snapshot.aten.get(self.selected) if snapshot is not None else None
        detail.show(
            self.graph.node(self.selected),
            self._medians().get(self.selected),
            error,
            peaks=self.graph.peaks,
            aten=aten,
            explaining=self.selected in self._explaining,
            others=self._medians(),
        )

    def view_state(self) -> ViewState:
        """What the status line's second row describes."""
        table = self.table
        arrow = "↓" if table.sort_descending else "↑"
        return ViewState(
            scope=self.scope,
            shown=len(self._view),
            total=len(self.graph.nodes) if self.graph is not None else 0,
            sort=f"{BY_KEY[table.sort_key].label} {arrow}",
            filters=describe(self.spec),
            paused=self.paused,
            measuring=self.trying_fusion,
        )

    def _show_status(self) -> None:
        self.query_one(StatusBar).show(self.snapshot, self.view_state())

    # -- filters and scope --------------------------------------------------

    def _apply_filter(self, spec: FilterSpec) -> None:
        """Filter the tree and the table by ``spec``; empty branches disappear."""
        self.spec = spec
        graph = self.graph
        if graph is None:
            self._show_status()
            return
        self._filtered = [n for n in graph.nodes if matches(n, spec)]
        self._ancestry = [(n.name, module_ancestors(n.module_path)) for n in self._filtered]
        modules = visible_modules(graph, self._filtered)
        with self.app.batch_update():
            self.module_tree.show(graph, modules, {n.name for n in self._filtered})
            if self.scope not in modules:
                self.scope = next(p for p in reversed(module_ancestors(self.scope)) if p in modules)
            self._set_view()
            self._show_numbers()
            self._show_status()
        self.refresh_bindings()

    def _set_view(self) -> None:
        """Show the filtered nodes at or below the scope in the table."""
        self._view = [n for n in self._filtered if in_scope(n.module_path, self.scope)]
        self.table.set_nodes(self._view, self._medians())
        if self.table.cursor_name != self.selected:
            self.select_node(self.table.cursor_name, origin="table", reveal=False)

    def set_scope(self, path: str, *, reveal: bool = True) -> None:
        """Show the subtree of module ``path`` in the table (the tree's cursor follows when ``reveal``)."""
        if self.graph is None or path not in self.graph.modules:
            return
        self.scope = path
        with self.app.batch_update():
            self._set_view()
            if reveal:
                self.module_tree.reveal(Entry("module", path))
            self._show_status()
        self.refresh_bindings()

    def select_node(self, name: str | None, *, origin: str = "key", reveal: bool = True) -> None:
        """Select node ``name`` in the table, the tree (when ``reveal``) and the detail pane."""
        if name is None:
            self.selected = None
            self._show_detail()
            return
        if name == self.selected and origin != "key":
            return
        self.selected = name
        if origin != "table":
            self.table.move_to(name)
        if origin != "tree" and reveal:
            self.module_tree.reveal(Entry("node", name))
        self._show_detail()

    # -- widget events ------------------------------------------------------

    @on(NodeTable.Highlighted)
    def _table_moved(self, message: NodeTable.Highlighted) -> None:
        self.select_node(message.name, origin="table")

    @on(NodeTable.SortRequested)
    def _header_clicked(self, message: NodeTable.SortRequested) -> None:
        table = self.table
        if message.key == table.sort_key:
            table.sort_by(message.key, not table.sort_descending)
        else:
            table.sort_by(message.key)
        self._show_status()

    @on(Tree.NodeHighlighted)
    def _tree_moved(self, message: Tree.NodeHighlighted[Entry]) -> None:
        entry = message.node.data
        if entry is not None and entry.kind == "node" and entry.key != self.selected:
            if entry.key in {n.name for n in self._view}:
                self.select_node(entry.key, origin="tree")
            else:
                # A node outside the current scope: widen the scope to its module so the table can show it.
                self.set_scope(self.module_tree.display_parent(entry.key), reveal=False)
                self.select_node(entry.key, origin="tree")

    @on(Tree.NodeSelected)
    def _tree_selected(self, message: Tree.NodeSelected[Entry]) -> None:
        entry = message.node.data
        if entry is None:
            return
        if entry.kind == "module":
            self.module_tree.open(message.node)
            self.set_scope(entry.key, reveal=False)
        else:
            self.select_node(entry.key, origin="tree")

    # -- actions ------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide keys that do nothing in the current state."""
        if action in _NEED_GRAPH and self.graph is None:
            return False
        if action == "scope_up":
            return self.scope != ""
        if action == "clear_filters":
            return self._input_mode is not None or self.spec != DEFAULT_FILTER
        if action == "goto_error":
            error = self.snapshot.error if self.snapshot is not None else None
            return error is not None and error.node is not None
        if action == "cycle_phase":
            return self.graph is not None and self.graph.training
        return True

    def action_cycle_phase(self) -> None:
        """In a training step: every phase, then forward, backward or optimizer nodes only."""
        order: list[frozenset[str]] = [frozenset(), *(frozenset({p}) for p in PHASES)]
        current = order.index(self.spec.phases) if self.spec.phases in order else 0
        nxt = order[(current + 1) % len(order)]
        self._apply_filter(FilterSpec(ops=self.spec.ops, path=self.spec.path, types=self.spec.types, phases=nxt))

    def action_toggle_pause(self) -> None:
        """Pause the reruns, or resume them."""
        self.paused = not self.paused
        if self.paused:
            self.source.send(Pause())
        else:
            self.source.send(Resume())
        self._show_status()

    def action_reset(self) -> None:
        """Forget the statistics so far."""
        self.source.send(Reset())
        self.notify("statistics reset", timeout=2)

    def action_sort_next(self) -> None:
        """Sort by the next column."""
        table = self.table
        table.sort_by(COLUMN_KEYS[(COLUMN_KEYS.index(table.sort_key) + 1) % len(COLUMN_KEYS)])
        self._show_status()

    def action_sort_reverse(self) -> None:
        """Reverse the sort order."""
        table = self.table
        table.sort_by(table.sort_key, not table.sort_descending)
        self._show_status()

    @on(Input.Submitted, "#filter-input")
    def _filter_submitted(self, message: Input.Submitted) -> None:
        self.submit_filter(message.value)
