"""The main screen's moves through the model: up a module, down the hottest path, hotspot to hotspot.

A mixin of :class:`~fxtui.ui.screens.main.MainScreen`, kept apart because these
keys decide *where* to go from the numbers, while the screen decides how to show it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from fxtui.engine.snapshot import GraphInfo, NodeInfo, NodeStats, Snapshot
from fxtui.ui.columns import hotspots
from fxtui.ui.filtering import FilterSpec, in_scope, matches, shown_ops, with_ops
from fxtui.ui.screens.mixin_base import ScreenMixin
from fxtui.ui.widgets.module_tree import Entry

if TYPE_CHECKING:
    from fxtui.ui.widgets.module_tree import ModuleTree
    from fxtui.ui.widgets.node_table import NodeTable


class NavigationMixin(ScreenMixin):
    """``Backspace``, ``h``, ``n``/``N``, ``e`` and :meth:`show_node` for the main screen."""

    if TYPE_CHECKING:  # provided by MainScreen
        graph: GraphInfo | None
        snapshot: Snapshot | None
        spec: FilterSpec
        scope: str
        selected: str | None
        _view: list[NodeInfo]

        @property
        def table(self) -> NodeTable: ...
        @property
        def module_tree(self) -> ModuleTree: ...
        def _medians(self) -> Mapping[str, NodeStats]: ...
        def set_scope(self, path: str, *, reveal: bool = True) -> None: ...
        def select_node(self, name: str | None, *, origin: str = "key", reveal: bool = True) -> None: ...
        def _apply_filter(self, spec: FilterSpec) -> None: ...

    def action_scope_up(self) -> None:
        """Show the parent module's subtree."""
        if self.scope:
            self.set_scope(self.scope.rpartition(".")[0])

    def action_hottest(self) -> None:
        """Go to the hottest child of the current module; repeated, it walks the hottest path down to a node."""
        graph = self.graph
        if graph is None:
            return
        stats = self._medians()
        totals = self.module_tree.totals
        candidates: list[tuple[float, Entry]] = [
            (
                totals.get(entry.key, 0.0)
                if entry.kind == "module"
                else (stats[entry.key].median_s if entry.key in stats else 0.0),
                entry,
            )
            for entry in self.module_tree.children_of(self.scope)
        ]
        if not candidates:
            self.app.bell()
            return
        _, best = max(candidates, key=lambda c: c[0])
        if best.kind == "module":
            self.set_scope(best.key)
        else:
            self.select_node(best.key)

    def action_hotspot(self, step: int) -> None:
        """Select the next (1) or previous (-1) node by median in the current view."""
        order = hotspots(self._view, self._medians())
        if not order:
            return
        if self.selected in order:
            index = (order.index(self.selected) + step) % len(order)
        else:
            index = 0 if step > 0 else len(order) - 1
        self.select_node(order[index])

    def action_goto_error(self) -> None:
        """Select the node that raised."""
        error = self.snapshot.error if self.snapshot is not None else None
        if error is not None and error.node is not None:
            self.show_node(error.node)

    def show_node(self, name: str) -> None:
        """Select node ``name``, widening the op filter and the scope if they hide it."""
        if self.graph is None or name not in self.graph.by_name:
            return
        node = self.graph.node(name)
        if not matches(node, self.spec):
            self._apply_filter(with_ops(self.spec, shown_ops(self.spec) | {node.op}))
        if not matches(node, self.spec):  # the path or type filter hides it: drop those
            self._apply_filter(FilterSpec(ops=self.spec.ops))
        if not in_scope(node.module_path, self.scope):
            self.set_scope("", reveal=False)
        self.select_node(name)
        self.table.focus()
