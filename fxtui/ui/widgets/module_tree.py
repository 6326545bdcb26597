"""The module tree: root → layer1 → layer1.0 → its FX nodes, each with its time and share.

An :class:`~fxtui.ui.widgets.outline_view.OutlineView` of the modules and nodes a filter
lets through: only the lines on screen are drawn, so a branch of 10,000 entries costs
nothing until it is scrolled to. Labels are drawn from the current totals when a line
is drawn, so a refresh changes numbers without touching the structure.

A module's direct ops that each take little time (under :data:`SMALL_SHARE` of the run, decided
once from a graph's first timings so that lines do not come and go) are folded into one line
that opens like a branch (``34 small ops``; :class:`~fxtui.ui.widgets.tree_lines.Outline`):
modules and heavy ops stay in view. Siblings are in graph order, or slowest first
(:attr:`ModuleTree.by_time`, kept for the session).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, ClassVar

from rich.cells import cell_len
from textual.reactive import var

from fxtui.core.column_table import column_map
from fxtui.core.compilation import fused_into, fused_text
from fxtui.core.nodes import NodeStats, module_ancestors
from fxtui.core.snapshot import GraphInfo
from fxtui.ui.widgets.outline_view import OutlineView
from fxtui.ui.widgets.tree_labels import (
    Entry,
    Part,
    bar,
    fit_compiled_label,
    fit_label,
    fit_phase_label,
    op_label,
    short_node_name,
)
from fxtui.ui.widgets.tree_lines import Outline, group_module

#: A direct op of a module that takes less than this share of the run is small: folded with the others.
SMALL_SHARE = 0.005
#: Which ops are small is decided from a graph's first timings, and once more when every node has this
#: many samples (the first few runs are noisy); never again, so that lines do not come and go.
SETTLED_SAMPLES = 10


def small_ops(stats: Mapping[str, NodeStats], run_s: float) -> frozenset[str]:
    """The nodes whose median is under :data:`SMALL_SHARE` of the run."""
    limit = SMALL_SHARE * run_s
    return frozenset(name for name, median in column_map(stats, "median_s").items() if median < limit)


if TYPE_CHECKING:
    from fxtui.ui.generate_view import PhaseShares

__all__ = ["Entry", "ModuleTree", "bar", "op_label", "short_node_name"]


class ModuleTree(OutlineView):
    """Modules with their inclusive time, share of the run and a bar; FX nodes as leaves.

    Tells its owner, through the callbacks it was made with, when the user moves the cursor onto a
    node or presses Enter on one (``on_node``) and on Enter on a module (``on_module``). Called in
    the key's (or click's) own handler rather than posted as messages, so that what follows the
    selection draws in the same frame as the tree's cursor (a message is handled after the key,
    and a repaint that came between made everything else wait for the next frame, ~25 ms a key).
    Moves the tree makes itself (:meth:`reveal`) tell nobody: its owner asked for them.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        *OutlineView.COMPONENT_CLASSES,
        "module-tree--time",
        "module-tree--bar",
        "module-tree--dim",
        "module-tree--leaf-fallback",
        "module-tree--error",
    }

    DEFAULT_CSS = """
    ModuleTree > .module-tree--time { color: $text-muted; }
    ModuleTree > .module-tree--bar { color: $primary; }
    ModuleTree > .module-tree--dim { color: $text-muted; }
    ModuleTree > .module-tree--leaf-fallback { color: $warning; text-style: bold; }
    ModuleTree > .module-tree--error { color: $error; text-style: bold; }
    """

    def __init__(
        self,
        *,
        on_node: Callable[[str], object] = lambda name: None,
        on_module: Callable[[str], object] = lambda path: None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self._auto_expanded: set[str] = set()
        """Branches opened by reveal() rather than by the user."""
        self._outlines: list[Outline] = []
        self.totals: Mapping[str, float] = {}
        self.backward: Mapping[str, float] = {}
        """A training step's inclusive backward time per module (part of ``totals``)."""
        self.phases: PhaseShares | None = None
        """A generation's module shares of the prefill and of a decode step (both phases shown)."""
        self.eager: Mapping[str, float] | None = None
        """A compiled model's eager time per module, shown beside its compiled time."""
        self.stats: Mapping[str, NodeStats] = {}
        self.run_s: float = 0.0
        self.error_node: str | None = None
        self.on_node = on_node
        self.on_module = on_module
        """Called on Enter on a module, once its branch is open."""
        self._revealing = False
        self.small: frozenset[str] = frozenset()
        """Nodes folded into a group line when their module lists enough of them (:func:`small_ops`)."""
        self._small_for: tuple[GraphInfo | None, bool] = (None, False)
        """The graph :attr:`small` was decided for, and whether its samples had settled then."""
        self._medians: Mapping[str, float] = {}
        """Each node's median (a view of the statistics' column)."""

    by_time: var[bool] = var(False, init=False)
    """Siblings slowest first rather than in graph order (the app keeps it for the session): sorted by the
    numbers of the moment the order is laid out (``g``, a filter, a branch opened), not again on every
    refresh, which would move lines under the cursor (and cost 60 ms a refresh under a root of 10,000)."""

    def watch_by_time(self) -> None:
        self.relayout()

    def relayout(self) -> None:
        """Lay the lines out anew (folding, order) for the same filter; open branches and the cursor stay."""
        outline = self.outline
        if outline.graph is not None:
            self.show(outline.graph, outline.modules, outline.nodes)

    def _sort_key(self, entry: Entry) -> float:
        """Slowest first: a module by its inclusive time, a node by its median, a group by its ops' sum."""
        if entry.kind == "module":
            if self.eager is not None:  # a compiled model: the smallest saving first, where compiling helped least
                if self._fused_whole(entry.key):
                    return math.inf  # last: its work is in an ancestor's kernel, its saving not its own to show
                return self.eager.get(entry.key, 0.0) - self.totals.get(entry.key, 0.0)
            return -self.totals.get(entry.key, 0.0)
        if entry.kind == "group":
            return -self._group_seconds(entry.key)
        return -self._medians.get(entry.key, 0.0)

    def _fused_whole(self, path: str) -> bool:
        """A compiled model's module that holds no kernel: Inductor fused its work into an ancestor's kernels."""
        graph = self.outline.graph
        return graph is not None and graph.module_plan.counts[graph.module_plan.index[path]] == 0

    def _group_seconds(self, key: str) -> float:
        medians = self._medians
        return sum(medians.get(m.key, 0.0) for m in self.outline.group_members(key))

    # -- structure ----------------------------------------------------------

    def show(self, graph: GraphInfo, visible_modules: AbstractSet[str], visible_nodes: AbstractSet[str]) -> None:
        """(Re)build the tree for ``graph`` keeping only visible branches; expanded entries stay expanded.

        The outlines of the last few filters are kept: shown again for the same sets (a filter
        cleared), one is reused as it is when the same branches are open.
        """
        cursor = self.cursor_entry
        expanded = set(self.outline.expanded)
        order = self._sort_key if self.by_time else None
        reused = next(
            (
                o
                for o in self._outlines
                if o.graph is graph
                and o.modules is visible_modules
                and o.nodes is visible_nodes
                and o.small is self.small
                and o.order is None  # an order by time is worked out from the numbers of its moment
                and order is None
            ),
            None,
        )
        self.outline = reused or Outline(graph, visible_modules, visible_nodes, small=self.small, order=order)
        self._outlines = [self.outline, *(o for o in self._outlines if o is not self.outline and o.graph is graph)][:3]
        if reused is None or reused.expanded != ({p for p in expanded if p in reused.modules} | {""}):
            self.outline.open_all(expanded)
        self._auto_expanded &= self.outline.expanded
        self.lines_changed()
        if cursor is not None and not self.reveal(cursor):
            self.cursor_line = min(self.cursor_line, self.last_line)

    def folded_node(self, path: str) -> str | None:
        """The node module ``path`` is shown as (see :meth:`Outline.folded_node`)."""
        return self.outline.folded_node(path)

    def display_parent(self, name: str) -> str:
        """The module whose branch lists node ``name``."""
        return self.outline.display_parent(name)

    def children_of(self, path: str) -> list[Entry]:
        """What the tree lists under module ``path`` (folded modules as their node; a group's small ops each)."""
        outline = self.outline
        return [m for e in outline.children(path) for m in (outline.group_members(e.key) if e.kind == "group" else [e])]

    def open(self, path: str) -> None:
        """Expand module ``path`` for the user: it stays open when the cursor moves on."""
        self._auto_expanded.discard(path)
        self.open_branch(path)

    def cursor_moved(self, entry: Entry) -> None:
        """Landing on a node selects it."""
        if entry.kind == "node":
            self._choose(entry.key)

    def _choose(self, name: str) -> None:
        if not self._revealing:
            self.on_node(name)

    def entry_selected(self, entry: Entry) -> None:
        """Enter: a module's branch opens and the table shows it; a group of small ops opens or closes; a node
        is selected. A compiled model's module fused whole into an ancestor's kernel has nothing to list: the
        first kernel holding its work is selected."""
        graph = self.outline.graph
        if entry.kind == "module" and graph is not None and self._fused_whole(entry.key):
            fused = [n for n in graph.modules[entry.key].fused if n in self.outline.nodes]
            if fused:
                self._choose(fused[0])
                return
        if entry.kind == "module":
            self.open(entry.key)
            self.on_module(entry.key)
        elif entry.kind == "group":
            if self.is_expanded(entry.key):
                self.close_branch(entry.key)
            else:
                self.open(entry.key)
        else:
            self._choose(entry.key)

    def reveal(self, entry: Entry) -> bool:
        """Open the branches down to ``entry`` and put the cursor on it; False when it is filtered out.

        Branches opened only to reveal an earlier entry close again, so following the
        table's cursor through a large graph does not leave the whole tree open.
        """
        outline = self.outline
        if outline.graph is None:
            return False
        if entry.kind == "module" and (folded := outline.folded_node(entry.key)) is not None:
            entry = Entry("node", folded)
        if entry.kind == "module":
            chain = module_ancestors(entry.key)[:-1]
        elif entry.kind == "group":
            chain = module_ancestors(group_module(entry.key) or "")
        elif entry.key in outline.nodes:
            chain = module_ancestors(outline.display_parent(entry.key))
            if (group := outline.group_of(entry.key)) is not None:
                chain.append(group)  # a small op: its group opens too
        else:
            return False
        if any(path not in outline.modules for path in chain if group_module(path) is None):
            return False
        for path in chain:
            if not self.is_expanded(path):
                self._auto_expanded.add(path)
                self.open_branch(path)
        for path in sorted(self._auto_expanded - set(chain), key=lambda p: -p.count(".")):
            self.close_branch(path)
        self._auto_expanded &= set(chain)
        line = self.line_of(entry)
        if line is None:
            return False
        self._revealing = True
        try:
            self.move_cursor(line)
        finally:
            self._revealing = False
        return True

    # -- numbers ------------------------------------------------------------

    def update_numbers(
        self,
        totals: Mapping[str, float],
        stats: Mapping[str, NodeStats],
        run_s: float,
        backward: Mapping[str, float] | None = None,
        phases: PhaseShares | None = None,
        eager: Mapping[str, float] | None = None,
    ) -> None:
        """New inclusive module times and node statistics; the lines on screen redraw, structure stays.

        ``backward`` (a training step's) is each module's inclusive backward time, part of its total;
        ``phases`` (a generation's, both phases shown) each module's share of the prefill and of a decode step;
        ``eager`` (a compiled model's) each module's eager time, shown beside its compiled time.
        """
        self.totals = totals
        self.eager = eager
        self.backward = backward or {}
        self.phases = phases
        self.stats = stats
        self._medians = column_map(stats, "median_s")
        self.run_s = run_s
        graph = self.outline.graph
        decided_for, settled = self._small_for
        if graph is not None and run_s > 0 and stats and (decided_for is not graph or not settled):
            now_settled = max(column_map(stats, "count").values(), default=0) >= SETTLED_SAMPLES
            if decided_for is not graph or now_settled:
                self._small_for, self.small = (graph, now_settled), small_ops(stats, run_s)
                self.relayout()
                return
        self.redraw()

    def label_text(self, entry: Entry) -> str:
        """The plain text of an entry's label (what a user reads)."""
        line = self.line_of(entry)
        depth = len(self.outline.lasts[line]) if line is not None else 0
        return "".join(text for text, _ in self.label_parts(entry, depth))

    def label_parts(self, entry: Entry, depth: int) -> list[Part]:
        """The label as (text, component class) pieces, fitted to the tree's width.

        Numbers sit at the right edge so they line up at every depth; on a narrow
        tree the class name and then the bar give way before the time and share do.
        """
        graph = self.outline.graph
        if graph is None:
            return [("model", "")]
        seconds: float | None
        flag: Part | None
        folded, module = False, entry.key
        if entry.kind == "group":
            count = len(self.outline.group_members(entry.key))
            seconds, backward = self._group_seconds(entry.key), 0.0
            name, kind, flag = f"{count} small ops", "", None
        elif entry.kind == "module":
            info = graph.modules[entry.key]
            name = graph.model if entry.key == "" else entry.key.rpartition(".")[2]
            seconds = self.totals.get(entry.key)
            backward = self.backward.get(entry.key, 0.0)
            kind = info.class_name
            flag = (" [leaf]", "module-tree--leaf-fallback") if info.leaf_fallback else None
        else:
            node_info = graph.node(entry.key)
            module = node_info.module_path
            folded = bool(module) and self.outline.folded_node(module) == entry.key
            name = module.rpartition(".")[2] if folded else short_node_name(entry.key, module)
            stats = self.stats.get(entry.key)
            seconds = stats.median_s if stats is not None else None
            backward = (seconds or 0.0) if node_info.phase == "backward" else 0.0
            kind = op_label(node_info.op, node_info.type_name)
            flag = None
            if folded and graph.modules[module].leaf_fallback:
                flag = (" [leaf]", "module-tree--leaf-fallback")
            if entry.key == self.error_node:
                flag = (" ✖", "module-tree--error")
        width = self.line_width or 80
        indent = depth * self.guide_depth + (cell_len(self.ICON_NODE) if entry.kind != "node" else 0)
        if entry.kind == "module" and self.phases is not None:
            return fit_phase_label(name, kind, flag, *self.phases.shares(entry.key), width, indent)
        share = 100.0 * seconds / self.run_s if seconds is not None and self.run_s else None
        if self.eager is not None and (entry.kind == "module" or folded):  # a one-kernel module reads as a module
            fused = None
            if entry.kind == "module" and self._fused_whole(module):
                fused = fused_text(fused_into(graph.modules[module], graph.by_name), most=1)
            return fit_compiled_label(name, kind, flag, self.eager.get(module), seconds, share, width, indent, fused)
        if entry.kind == "node" and graph.generating and stats is not None:
            share = stats.pct  # of its own phase
        backward_share = 100.0 * backward / self.run_s if self.run_s else 0.0
        # Modules of a training step say how much of their time is backward; nodes have a phase column.
        split = entry.kind == "module" and graph.training
        return fit_label(name, kind, flag, seconds, share, width, indent, backward_share if split else None)
