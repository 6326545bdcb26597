"""Module totals from node medians: each module's own time, its subtree's, and per phase.

Torch-free, so the app's demo data rolls up as a session does; a live session adds the
same plan's pairs with ``index_add_`` instead (:mod:`fxtui.engine.rollup`).
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeGuard

import numpy as np

from fxtui.core.column_table import ColumnTable
from fxtui.core.nodes import ModuleStats, NodeInfo, NodeStats, module_ancestors, node_medians


class ModulePlan:
    """Which modules each node's time goes to, worked out once per graph for :func:`module_stats`.

    Module paths, parents and phases never change while a session runs, so they are worked
    out once; each snapshot then adds every node's median to its own module and each
    module's total to its parent's, deepest first (at 10,000 nodes the roll-up went from a
    walk up the tree per node per snapshot, ~20 ms, to two additions per node and module).
    """

    __slots__ = (
        "_levels",
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
        phases = {"forward": 1, "backward": 2}
        self.phase = [phases.get(n.phase, 0) for n in nodes]
        self.counts = self.roll_up([1] * len(nodes))
        self._subtrees: tuple[array[int], array[int]] | None = None
        self._levels: tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]] | None = None

    def holding(self, node_mask: np.ndarray) -> np.ndarray:
        """For each module, whether its subtree holds a node of ``node_mask`` (booleans, graph order).

        A level of the tree at a time, deepest first, each an array operation: at 50,000
        modules a set operation per level took ~10 ms, a walk up the ancestors per node longer.
        """
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
        flat, offsets = self.subtree_nodes()
        i = self.index[path]
        return np.frombuffer(flat, dtype=np.int64)[offsets[i] : offsets[i + 1]]

    def in_graph_order(self, stats: Mapping[str, NodeStats]) -> TypeGuard[ColumnTable[NodeStats]]:
        """True when ``stats`` is a column table with one row per node, in graph order (as a session sends it)."""
        return isinstance(stats, ColumnTable) and (stats.names is self.names or stats.names == self.names)

    def own_totals(self, values: Sequence[Any], only_phase: int = 0) -> list[Any]:
        """Each module's total of one value per node (graph order) over its own nodes, none below it."""
        totals: list[Any] = [0] * len(self.paths)
        if only_phase:
            for module, value, phase in zip(self.own, values, self.phase, strict=True):
                if phase == only_phase:
                    totals[module] += value
        else:
            for module, value in zip(self.own, values, strict=True):
                totals[module] += value
        return totals

    def medians(self, stats: Mapping[str, NodeStats]) -> Sequence[float]:
        """Each node's median (graph order) from ``stats``, 0 for a node without one; a column when it is one."""
        if self.in_graph_order(stats):
            return stats.column("median_s")  # already in graph order
        by_name = node_medians(stats)
        return [by_name.get(name, 0.0) for name in self.names]

    def roll_up(self, values: Sequence[Any], only_phase: int = 0) -> list[Any]:
        """Each module's subtree total of one value per node (graph order); ``only_phase``: that phase's nodes only."""
        totals = self.own_totals(values, only_phase)
        parent = self.parent
        for i in self.deepest_first:
            totals[parent[i]] += totals[i]
        return totals


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
    medians = plan.medians(stats)
    training = any(plan.phase)
    forward = plan.roll_up(medians, 1) if training else None
    backward = plan.roll_up(medians, 2) if training else None
    return module_table(plan, plan.own_totals(medians), plan.roll_up(medians), run_s, forward, backward)


def module_table(
    plan: ModulePlan,
    own: Sequence[float],
    inclusive: Sequence[float],
    run_s: float,
    forward: Sequence[float] | None = None,
    backward: Sequence[float] | None = None,
) -> ColumnTable[ModuleStats]:
    """The module statistics of ``plan``'s modules from their totals (each in ``plan.paths`` order)."""
    size = len(plan.paths)
    # As columns: a 10,000-node graph has thousands of modules, and a record each per snapshot
    # was most of the roll-up's cost.
    columns: dict[str, Sequence[Any]] = {
        "path": plan.paths,
        "inclusive_s": [float(t) for t in inclusive],
        "self_s": [float(t) for t in own],
        "pct": [100.0 * t / run_s for t in inclusive],
        "nodes": plan.counts,
        "forward_s": [float(t) for t in forward] if forward is not None else [0.0] * size,
        "backward_s": [float(t) for t in backward] if backward is not None else [0.0] * size,
    }
    return ColumnTable.from_columns(ModuleStats, plan.paths, columns)
