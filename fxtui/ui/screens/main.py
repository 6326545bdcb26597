"""The profiler's main view: status, module tree, timing table, detail pane, key bar.

The screen's state is reactives (``snapshot``, filter ``spec``, ``scope``, ``sort``,
``selected``, ``paused``, ``waiting``, ``explaining``) and the widgets follow them: the
status line, the error banner and the detail pane are data-bound to the screen, and the
watchers here update the tree and the table. Actions change the state or ask the session
for more; :mod:`fxtui.ui.navigation` decides from the numbers where the keys go.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.reactive import var
from textual.screen import Screen

from fxtui.core.filters import FilterSpec
from fxtui.core.nodes import NodeInfo, NodeStats, module_ancestors
from fxtui.core.snapshot import GraphInfo, Snapshot, State
from fxtui.ui import gc_pauses, generate_view, view_filter
from fxtui.ui.actions import MAIN, actions, bindings
from fxtui.ui.messages import SnapshotReady
from fxtui.ui.navigation import Hotspots, filter_showing, hottest
from fxtui.ui.pacing import KeysFirst
from fxtui.ui.screens import analyses
from fxtui.ui.screens.op_filter import OpFilterScreen
from fxtui.ui.table_sort import Sort, clicked_sort, next_sort, sort_label
from fxtui.ui.view_filter import DEFAULT_FILTER
from fxtui.ui.what_if_requests import WhatIfRequests
from fxtui.ui.widgets.decode_plot import DecodePlot
from fxtui.ui.widgets.detail_pane import DetailPane
from fxtui.ui.widgets.error_banner import ErrorBanner
from fxtui.ui.widgets.filter_input import FilterInput, FilterKind
from fxtui.ui.widgets.key_bar import KeyBar
from fxtui.ui.widgets.memory_plot import MemoryPlot
from fxtui.ui.widgets.module_tree import Entry, ModuleTree
from fxtui.ui.widgets.node_table import NodeTable
from fxtui.ui.widgets.status_bar import StatusBar, ViewState, toggled_pause
from fxtui.ui.widgets.step_plot import StepPlot
from fxtui.wire.snapshot_source import SnapshotSource
from fxtui.wire.viewer_commands import Explain, RequestHints, Reset

#: Actions that mean nothing until a graph has been traced.
_NEED_GRAPH = frozenset(a.name for a in actions(MAIN) if a.needs_graph)
#: When each key that does not always apply does (the action registry says).
_APPLIES = {a.name: a.applies for a in actions(MAIN) if a.applies is not None}


class MainScreen(Screen[None]):
    """Live view of one profiling session."""

    BINDINGS: ClassVar[list[BindingType]] = bindings(MAIN)

    table: NodeTable
    """The timing table."""
    module_tree: ModuleTree
    """The module tree (``tree`` is taken: DOMNode.tree draws the widget tree for debugging)."""
    filter_input: FilterInput
    """The prompt for a path or type filter."""

    # Each snapshot is a new object; comparing two (every node's statistics) would be waste.
    snapshot: var[Snapshot | None] = var(None, init=False, always_update=True)
    """The latest snapshot; once a graph was traced, every later one carries it (see :meth:`apply_snapshot`)."""
    spec: var[FilterSpec] = var(DEFAULT_FILTER, init=False, bindings=True)
    """What the tree and the table show (op types, module path, target types)."""
    scope: var[str] = var("", init=False, bindings=True)
    """The module whose subtree the table lists (``""``: the whole model)."""
    sort: var[Sort] = var(("median", True), init=False)
    """The table's sort: column key, descending."""
    selected: var[str | None] = var(None, init=False)
    """The node the table, the tree and the detail pane are on."""
    paused: var[bool] = var(False, init=False)
    """The reruns are paused (as asked; the session confirms in a later snapshot)."""
    waiting: var[frozenset[str]] = var(frozenset(), init=False)
    """What-ifs asked for whose result has not arrived yet."""
    explaining: var[frozenset[str]] = var(frozenset(), init=False)
    """Nodes whose aten breakdown was asked for."""
    view: var[Sequence[NodeInfo]] = var((), init=False, always_update=True)
    """The nodes the table lists: those the filter lets through, at or below the scope, graph order."""
    column_set: var[str] = var("time", init=False)
    """The table's columns: ``time`` or ``memory`` (with the live-memory plot under the table)."""
    view_state: var[ViewState] = var(ViewState())
    """What the status line's second row says (computed from the state above)."""

    def __init__(self, source: SnapshotSource, on_fatal: Callable[[str], None]) -> None:
        super().__init__()
        self.source = source
        self.on_fatal = on_fatal
        """Called when the session failed before there was anything to show."""
        self.applied = 0
        """How many snapshots were applied (tests wait on it)."""
        self.keys_first = KeysFirst(self, self.apply_snapshot, on_pause=gc_pauses.collect_if_due)
        """Holds new numbers back while keys come (the app tells it about input)."""
        self.what_ifs = WhatIfRequests(source.send, changed=functools.partial(setattr, self, "waiting"))
        """The what-ifs asked for and not answered yet (:attr:`waiting` mirrors them)."""
        self._shown = view_filter.Shown((), frozenset(), frozenset({""}))
        self._hotspots = Hotspots()

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status").data_bind(snapshot=MainScreen.snapshot, view=MainScreen.view_state)
        yield ErrorBanner(id="error-banner").data_bind(MainScreen.snapshot)
        with Horizontal(id="body"):
            yield (tree := ModuleTree(id="tree", on_node=self._tree_node, on_module=self._tree_module))
            with Vertical(id="right"):
                yield (table := NodeTable(id="table", on_highlight=self._table_moved, on_sort=self._header_clicked))
                yield MemoryPlot(id="memory-plot").data_bind(MainScreen.snapshot, MainScreen.selected)
                yield StepPlot(id="step-plot").data_bind(MainScreen.snapshot)
                yield DecodePlot(id="decode-plot").data_bind(MainScreen.snapshot, MainScreen.selected)
                yield DetailPane(id="detail").data_bind(MainScreen.snapshot, MainScreen.selected, MainScreen.explaining)
        yield (prompt := FilterInput(id="filter-input", on_filter=self._filter_typed))
        yield KeyBar()
        self.table, self.module_tree, self.filter_input = table, tree, prompt

    def on_mount(self) -> None:
        self.table.focus()
        gc_pauses.defer_full_passes()

    def on_unmount(self) -> None:
        gc_pauses.restore()

    # -- widgets and derived state -------------------------------------------

    @property
    def graph(self) -> GraphInfo | None:
        """The traced graph, once there is one."""
        return self.snapshot.graph if self.snapshot is not None else None

    @property
    def error_node(self) -> str | None:
        """The node the model raised in, when it did."""
        error = self.snapshot.error if self.snapshot is not None else None
        return error.node if error is not None else None

    def _medians(self) -> Mapping[str, NodeStats]:
        return self.snapshot.nodes if self.snapshot is not None else {}

    def compute_view_state(self) -> ViewState:
        graph = self.graph
        return ViewState(
            scope=self.scope,
            shown=len(self.view),
            total=len(graph.nodes) if graph is not None else 0,
            sort=sort_label(self.sort),
            filters=view_filter.describe(self.spec),
            paused=self.paused,
            measuring=self.what_ifs.progress(self.snapshot),
        )

    # -- snapshots ----------------------------------------------------------

    def on_snapshot_ready(self, message: SnapshotReady) -> None:
        shown, snapshot = self.snapshot, message.snapshot
        urgent = shown is None or snapshot.state != shown.state or snapshot.graph is not shown.graph
        self.keys_first.offer(snapshot, urgent=urgent)

    def apply_snapshot(self, snapshot: Snapshot) -> None:
        """Show ``snapshot``: numbers change in place; cursor, scroll, selection, sort and filters stay."""
        graph = self.graph
        if snapshot.state is State.ERROR and snapshot.graph is None and graph is None:
            self.on_fatal(snapshot.message or "loading the model failed")
            return
        if graph is not None:
            snapshot = snapshot.shown_after(self.snapshot)  # a source that failed after tracing keeps its figures
        with self.app.batch_update():
            self.snapshot = snapshot
        self.applied += 1

    def watch_snapshot(self, old: Snapshot | None, snapshot: Snapshot | None) -> None:
        if snapshot is None:
            return
        new_graph = snapshot.graph is not None and (old is None or old.graph is not snapshot.graph)
        if snapshot.graph is not None:
            error_node = snapshot.error.node if snapshot.error is not None else None
            self.table.error_node = self.module_tree.error_node = error_node
            if new_graph:
                self.table.set_graph(snapshot.graph)
                self._refilter()
                view_filter.prepare(snapshot.graph)
                gc_pauses.exempt_what_lives()  # the graph, and what the view keeps of it
            else:
                self.table.set_stats(snapshot.nodes)
                self._show_numbers()
        if self.waiting:
            analyses.announce(self.app, self.what_ifs.collect(snapshot))
        analyses.follow(self.app, self.snapshot, self.waiting)
        if new_graph or old is None or old.error != snapshot.error:
            self.refresh_bindings()

    def _show_numbers(self) -> None:
        if (snapshot := self.snapshot) is not None and snapshot.graph is not None:
            self.module_tree.update_numbers(**generate_view.tree_numbers(snapshot, self._shown))

    # -- state → widgets ----------------------------------------------------

    def watch_spec(self) -> None:
        self._refilter()

    def watch_scope(self) -> None:
        self._show_view()

    def watch_sort(self, sort: Sort) -> None:
        self.table.sort_by(*sort)

    def watch_waiting(self) -> None:
        analyses.follow(self.app, self.snapshot, self.waiting)

    def watch_view(self, view: Sequence[NodeInfo]) -> None:
        table = self.table
        table.set_nodes(view, self._medians(), self._shown.names if view is self._shown.nodes else None)
        if table.cursor_name != self.selected:
            self.select_node(table.cursor_name, origin="table", reveal=False)

    def _refilter(self) -> None:
        """Filter the tree and the table by :attr:`spec`; empty branches disappear, the scope moves up if emptied."""
        graph = self.graph
        if graph is None:
            return
        spec = self.spec
        shown = self._shown = view_filter.Shown.of(graph, spec)
        modules = shown.modules
        with self.app.batch_update():
            self.module_tree.show(graph, modules, shown.names)
            scope = next(p for p in reversed(module_ancestors(self.scope)) if p in modules)
            if scope != self.scope:
                self.scope = scope  # its watcher shows the view
            else:
                self._show_view()
            self._show_numbers()

    def _show_view(self) -> None:
        # The whole model's view is the filter's own nodes: the table keeps what it sorted them with.
        self.view = self._shown.within(self.scope)

    def set_scope(self, path: str, *, reveal: bool = True) -> None:
        """Show the subtree of module ``path`` in the table (the tree's cursor follows when ``reveal``)."""
        if self.graph is None or path not in self.graph.modules:
            return
        with self.app.batch_update():
            self.scope = path
            if reveal:
                self.module_tree.reveal(Entry("module", path))

    def select_node(self, name: str | None, *, origin: str = "key", reveal: bool = True) -> None:
        """Select node ``name`` in the table, the tree (when ``reveal``) and the detail pane."""
        if name is not None and name == self.selected and origin != "key":
            return
        self.selected = name
        if name is not None and origin != "table":
            self.table.move_to(name)
        if name is not None and origin != "tree" and reveal:
            self.module_tree.reveal(Entry("node", name))

    def show_node(self, name: str | None) -> None:
        """Select node ``name``, widening the filter and the scope if they hide it (None: nothing to show)."""
        if self.graph is None or name is None or name not in self.graph.by_name:
            return
        node = self.graph.node(name)
        self.spec = filter_showing(node, self.spec)
        if not view_filter.in_scope(node.module_path, self.scope):
            self.set_scope("", reveal=False)
        self.select_node(name)
        self.table.focus()

    def _table_moved(self, name: str) -> None:
        self.select_node(name, origin="table")

    def _header_clicked(self, key: str) -> None:
        self.sort = clicked_sort(self.sort, key)

    def _tree_node(self, name: str) -> None:
        if name == self.selected:
            return
        if not self.table.shows(name):
            # A node outside the current scope: widen the scope to its module so the table can show it.
            self.set_scope(self.module_tree.display_parent(name), reveal=False)
        self.select_node(name, origin="tree")

    def _tree_module(self, path: str) -> None:
        self.set_scope(path, reveal=False)

    def _filter_typed(self, spec: FilterSpec) -> None:
        self.table.focus()
        self.spec = spec

    # -- actions ------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide keys that do nothing in the current state."""
        if action in _NEED_GRAPH and self.graph is None:
            return False
        applies = _APPLIES.get(action)
        return applies is None or applies(self)

    def action_toggle_memory(self) -> None:
        """Switch the table between the timing and the memory columns; the memory set shows the plot."""
        self.column_set = "time" if self.column_set == "memory" else "memory"

    def watch_column_set(self, column_set: str) -> None:
        self.table.show_columns(column_set)
        self.query_one(MemoryPlot).display = column_set == "memory"

    def action_cycle_phase(self) -> None:
        """In a training step: every phase, then forward, backward or optimizer nodes only."""
        self.spec = view_filter.next_phase(self.spec, view_filter.phases_of(self.graph))

    def action_toggle_pause(self) -> None:
        """Pause the reruns, or resume them (also after the session stopped by itself: the model kept raising)."""
        self.paused, command = toggled_pause(self.paused, self.snapshot)
        self.source.send(command)

    def action_reset(self) -> None:
        """Forget the statistics so far."""
        self.source.send(Reset())
        self.notify("statistics reset", timeout=2)

    def action_scope_up(self) -> None:
        """Show the parent module's subtree."""
        if self.scope:
            self.set_scope(self.scope.rpartition(".")[0])

    def action_hottest(self) -> None:
        """Go to the hottest child of the current module; repeated, it walks the hottest path down to a node."""
        if self.graph is None:
            return
        tree = self.module_tree
        best = hottest(tree.children_of(self.scope), tree.totals, self._medians())
        if best is None:
            self.app.bell()
        elif best.kind == "module":
            self.set_scope(best.key)
        else:
            self.select_node(best.key)

    def action_hotspot(self, step: int) -> None:
        """Select the next (1) or previous (-1) node by median in the current view."""
        name = self._hotspots.step(self.view, self._medians(), self.selected, step)
        if name is not None:
            self.select_node(name)

    def action_filter(self, kind: FilterKind) -> None:
        """Open the prompt for a module-path (``path``) or target-type (``type``) filter."""
        self.filter_input.open(kind, self.spec)

    def action_filter_ops(self) -> None:
        """Choose which op types are shown."""

        def chosen(ops: frozenset[str] | None) -> None:
            if ops is not None:
                self.spec = view_filter.with_ops(self.spec, ops)

        self.app.push_screen(OpFilterScreen(view_filter.shown_ops(self.spec)), chosen)

    def action_clear_filters(self) -> None:
        """Esc: clear the filter being typed, or else the path and type filters, or else the op types."""
        if self.filter_input.is_open:
            self.filter_input.cancel()
        else:
            self.spec = view_filter.cleared(self.spec)

    def action_sort_next(self) -> None:
        """Sort by the next column."""
        self.sort = next_sort(self.sort, [c.key for c in self.table.columns])

    def action_sort_reverse(self) -> None:
        """Reverse the sort order."""
        self.sort = (self.sort[0], not self.sort[1])

    def action_goto_error(self) -> None:
        """Select the node that raised."""
        self.show_node(self.error_node)

    def action_toggle_detail(self) -> None:
        """Show or hide the detail pane."""
        detail = self.query_one(DetailPane)
        detail.display = not detail.display

    def action_explain(self) -> None:
        """Ask the source for the aten operators inside the selected node; the detail pane shows them."""
        if self.selected is not None:
            self.explaining = self.explaining | {self.selected}
            self.source.send(Explain(self.selected))

    def action_hints(self) -> None:
        """Ask for suggestions and list them; Enter on one selects its node, ``w`` measures its what-if."""
        self.source.send(RequestHints())
        analyses.open_hints(
            self.app, self.snapshot, self.waiting, on_select=self.show_node, on_measure=self._measure_hint
        )

    def _measure_hint(self, name: str) -> None:
        """From the hints: measure what-if ``name`` unless it was, and open the what-ifs on it."""
        if not self.what_ifs.measured(self.snapshot, name):
            self.what_ifs.measure(self.snapshot, (name,))
        self.action_what_ifs(focus=name)

    def action_what_ifs(self, focus: str | None = None) -> None:
        """List the what-ifs and their results; Enter measures one."""
        analyses.open_what_ifs(
            self.app,
            self.snapshot,
            self.waiting,
            measure=lambda names: self.what_ifs.measure(self.snapshot, names),
            focus=focus,
        )

    def action_program_log(self) -> None:
        """The program's own output (``fxtui run``), following it as it prints."""
        analyses.open_log(self.app, self.snapshot)

    def action_threads(self) -> None:
        """Show threads, cores, build flags and library versions, warnings first."""
        analyses.open_threads(self.app, self.snapshot)
