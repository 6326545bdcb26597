"""Module totals from node values: each module's own total, its subtree's, and per phase — the one roll-up.

A :class:`ModulePlan` is worked out once per graph: every module's nodes and those below it.
A roll-up is then one weighted ``bincount`` over the (node, enclosing module) pairs, for a
session's snapshots (node medians), a report's FLOPs, the app's demo data and the what-ifs'
per-module changes alike. At 10,000 nodes it takes well under a millisecond; the walk up the
tree per node it replaced took ~20 ms, the deepest-first additions in Python 10–15 ms.
The app's tree under a filter sums only the few modules it shows, from the same subtrees
(:class:`fxtui.ui.view_filter.FilteredTotals`).
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

from fxtui.core.column_table import ColumnTable, float_column
from fxtui.core.nodes import ModuleStats, NodeInfo, NodeStats, module_ancestors, node_medians

if TYPE_CHECKING:
    import numpy as np

#: Phases a module's time is split by (two pairs: a training step's, a generation's), as the plan codes them.
PHASE_CODES = {"forward": 1, "backward": 2, "prefill": 3, "decode": 4}


class ModulePlan:
    """Which modules each node's time goes to, worked out once per graph for :func:`module_stats`.

    Module paths, parents and phases never change while a session runs, so they are worked
    out once; each snapshot then adds every node's median to its own module and each
    module's total to its parent's, deepest first (at 10,000 nodes the roll-up went from a
    walk up the tree per node per snapshot, ~20 ms, to two additions per node and module).
    """

    __slots__ = (
        "_levels",
        "_pairs",
        "_subtrees",
        "counts",
        "deepest_first",
        "depth",
        "index",
        "names",
        "own",
        "parent",
        "paths",
        "phase",
    )

    def __init__(self, nodes: Sequence[NodeInfo], modules: Iterable[str]) -> None:
        self.paths = list(dict.fromkeys(modules))
        self.index = index = {p: i for i, p in enumerate(self.paths)}
        self.names = tuple(n.name for n in nodes)
        self.own = [index[n.module_path] for n in nodes]
        # Each module's nearest ancestor on the tree (-1 for the root), and the order to add totals up in.
        self.parent = [_nearest(module_ancestors(p)[:-1], index) for p in self.paths]
        self.depth = [p.count(".") + 1 if p else 0 for p in self.paths]
        children = [i for i in range(len(self.paths)) if self.parent[i] >= 0]
        self.deepest_first = sorted(children, key=self.depth.__getitem__, reverse=True)
        self.phase = [PHASE_CODES.get(n.phase, 0) for n in nodes]
        self._subtrees: tuple[array[int], array[int]] | None = None
        self._pairs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        counts = [0] * len(self.paths)
        for module in self.own:
            counts[module] += 1
        for i in self.deepest_first:  # each module's count added to its parent's, children first
            counts[self.parent[i]] += counts[i]
        self.counts = counts
        """Nodes in each module's subtree."""
        self._levels: tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]] | None = None

    def holding(self, node_mask: np.ndarray) -> np.ndarray:
        """For each module, whether its subtree holds a node of ``node_mask`` (booleans, graph order).

        A level of the tree at a time, deepest first, each an array operation: at 50,000
        modules a set operation per level took ~10 ms, a walk up the ancestors per node longer.
        """
        import numpy as np

        if self._levels is None:
            parent, depth = np.array(self.parent, dtype=np.int64), np.array(self.depth, dtype=np.int64)
            levels = [
                (children, parent[children])
                for d in range(int(depth.max(initial=0)), 0, -1)
                if len(children := np.flatnonzero((depth == d) & (parent >= 0)))
            ]
            self._levels = (np.array(self.own, dtype=np.int64), levels)
        own, levels = self._levels
        held = np.zeros(len(self.paths), dtype=bool)
        held[own[node_mask]] = True
        for children, parents in levels:
            held[parents[held[children]]] = True
        return held

    def subtree_nodes(self) -> tuple[array[int], array[int]]:
        """Each module's nodes and those of every module below it, for summing a few modules at a time.

        One array of node indices (graph order within each module), the modules one after
        another in :attr:`paths` order, and the offsets where each begins (and the last ends).
        Worked out on first use and kept.
        """
        if self._subtrees is None:
            offsets = array("q", itertools.accumulate(self.counts, initial=0))
            flat = array("q", bytes(8 * offsets[-1]))
            cursor, parent = list(offsets[:-1]), self.parent
            for node, module in enumerate(self.own):
                while module >= 0:  # the node's module, then each module enclosing it
                    flat[cursor[module]] = node
                    cursor[module] += 1
                    module = parent[module]
            self._subtrees = (flat, offsets)
        return self._subtrees

    def subtree(self, path: str) -> np.ndarray:
        """The nodes of module ``path`` and of every module below it (graph indices, ascending)."""
        import numpy as np

        flat, offsets = self.subtree_nodes()
        i = self.index[path]
        return np.frombuffer(flat, dtype=np.int64)[offsets[i] : offsets[i + 1]]

    def in_graph_order(self, stats: Mapping[str, NodeStats]) -> TypeGuard[ColumnTable[NodeStats]]:
        """True when ``stats`` is a column table with one row per node, in graph order (as a session sends it)."""
        return isinstance(stats, ColumnTable) and (stats.names is self.names or stats.names == self.names)

    def own_totals(self, values: Sequence[float] | np.ndarray) -> np.ndarray:
        """Each module's total of one value per node (graph order) over its own nodes, none below it."""
        import numpy as np

        own, _, _, _ = self._pair_arrays()
        return np.bincount(own, weights=np.asarray(values, dtype=np.float64), minlength=len(self.paths))

    def medians(self, stats: Mapping[str, NodeStats]) -> Sequence[float]:
        """Each node's median (graph order) from ``stats``, 0 for a node without one; a column when it is one."""
        if self.in_graph_order(stats):
            return stats.column("median_s")  # already in graph order
        by_name = node_medians(stats)
        return [by_name.get(name, 0.0) for name in self.names]

    def roll_up(self, values: Sequence[float] | np.ndarray, only_phase: int = 0) -> np.ndarray:
        """Each module's subtree total of one value per node (graph order); ``only_phase``: that phase's nodes only."""
        import numpy as np

        _, pair_node, pair_module, phase = self._pair_arrays()
        weights = np.asarray(values, dtype=np.float64)[pair_node]
        if only_phase:
            weights = np.where(phase[pair_node] == only_phase, weights, 0.0)
        return np.bincount(pair_module, weights=weights, minlength=len(self.paths))

    @property
    def generating(self) -> bool:
        """The nodes are a ``generate()`` call's: prefill and decode (:func:`totals` pairs those)."""
        return bool((self._pair_arrays()[3] >= PHASE_CODES["prefill"]).any())

    def totals(
        self, values: Sequence[float] | np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
        """Each module's own and inclusive total, and its two phases' totals: forward and backward in a
        training step, prefill and decode in a ``generate()`` call (None for neither)."""
        import numpy as np

        values = np.asarray(values, dtype=np.float64)
        phase = self._pair_arrays()[3]
        first = PHASE_CODES["prefill"] if self.generating else PHASE_CODES["forward"]
        if not phase.any():
            return self.own_totals(values), self.roll_up(values), None, None
        return (
            self.own_totals(values),
            self.roll_up(values),
            self.roll_up(values, first),
            self.roll_up(values, first + 1),
        )

    def _pair_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Each node's own module; every (node, module holding it) pair; each node's phase code."""
        import numpy as np

        if self._pairs is None:
            flat, _ = self.subtree_nodes()
            pair_module = np.repeat(np.arange(len(self.paths)), np.asarray(self.counts, dtype=np.int64))
            own = np.array(self.own, dtype=np.int64)
            self._pairs = (own, np.frombuffer(flat, dtype=np.int64), pair_module, np.array(self.phase, dtype=np.int8))
        return self._pairs


def _nearest(ancestors: list[str], index: Mapping[str, int]) -> int:
    """The index of the last of ``ancestors`` that is in ``index``; -1 when none is."""
    return next((index[a] for a in reversed(ancestors) if a in index), -1)


def module_stats(
    nodes: Sequence[NodeInfo],
    modules: Iterable[str],
    stats: Mapping[str, NodeStats],
    run_s: float,
    plan: ModulePlan | None = None,
) -> Mapping[str, ModuleStats]:
    """Inclusive and self time of every module path in ``modules``, from the node medians in ``stats``.

    ``plan`` (made from the same ``nodes`` and ``modules``) saves working out the tree.
    """
    plan = plan or ModulePlan(nodes, modules)
    return module_table(plan, *plan.totals(plan.medians(stats)), run_s=run_s)


def module_table(
    plan: ModulePlan,
    own: np.ndarray,
    inclusive: np.ndarray,
    forward: np.ndarray | None = None,
    backward: np.ndarray | None = None,
    *,
    run_s: float,
) -> ColumnTable[ModuleStats]:
    """The module statistics of ``plan``'s modules from their totals (each in ``plan.paths`` order).

    ``forward`` and ``backward`` are the two phases' totals :meth:`ModulePlan.totals` gives: a generation's
    prefill and decode go to ``prefill_s`` and ``decode_s``.
    """
    import numpy as np

    zeros = np.zeros(len(plan.paths))
    prefill = decode = None
    if plan.generating:
        prefill, decode, forward, backward = forward, backward, None, None
    # As columns: a 10,000-node graph has thousands of modules, and a record each per snapshot
    # was most of the roll-up's cost.
    columns: dict[str, Sequence[Any]] = {
        "path": plan.paths,
        "inclusive_s": float_column(inclusive),
        "self_s": float_column(own),
        "pct": float_column(100.0 * np.asarray(inclusive) / run_s),
        "nodes": plan.counts,
        "forward_s": float_column(forward if forward is not None else zeros),
        "backward_s": float_column(backward if backward is not None else zeros),
        "prefill_s": float_column(prefill if prefill is not None else zeros),
        "decode_s": float_column(decode if decode is not None else zeros),
    }
    return ColumnTable.from_columns(ModuleStats, plan.paths, columns)
