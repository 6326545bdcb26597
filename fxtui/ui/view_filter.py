"""Which nodes and modules the app shows: pure functions over a :class:`GraphInfo`.

The filter itself (:class:`FilterSpec`, :func:`matches`) is the engine's, so the
headless report's ``--path 'layer1*'`` and the app's ``/ layer1*`` select the same
nodes. What lives here is what only a view needs: the app's default, a compact
description for the status line, which branches of the module tree still hold a
visible node, and the times the tree shows under a filter.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from fxtui.core.column_table import column_map
from fxtui.core.filters import FilterSpec, NodeColumns, matches
from fxtui.core.nodes import PHASES, NodeInfo, module_ancestors
from fxtui.core.rollup import ModulePlan
from fxtui.core.snapshot import OPCODES, GraphInfo, Snapshot
from fxtui.ui.selection import Selection

__all__ = [
    "DEFAULT_FILTER",
    "FilterSpec",
    "FilteredTotals",
    "Shown",
    "describe",
    "in_scope",
    "matches",
    "next_phase",
    "prepare",
    "shown_ops",
    "tree_totals",
    "with_ops",
]

#: Inputs and the output take no time worth reading; the app hides them until asked.
DEFAULT_FILTER = FilterSpec(ops=frozenset(OPCODES) - {"placeholder", "output"})


def with_ops(spec: FilterSpec, shown: frozenset[str]) -> FilterSpec:
    """``spec`` showing exactly the opcodes in ``shown``."""
    shown = shown & frozenset(OPCODES)
    # An empty set means "every opcode" to FilterSpec; hiding all of them needs a set that matches none.
    ops = frozenset() if shown == frozenset(OPCODES) else shown or frozenset({"none"})
    return replace(spec, ops=ops)


def shown_ops(spec: FilterSpec) -> frozenset[str]:
    """The opcodes ``spec`` lets through."""
    return frozenset(OPCODES) if not spec.ops else spec.ops & frozenset(OPCODES)


def describe(spec: FilterSpec) -> str:
    """A short text for the status line: ``path=layer1* type=Conv2d -placeholder -output``, or ``none``.

    What the user typed comes first, so a narrow status line cuts the defaults, not the filter.
    """
    parts = []
    if spec.path:
        parts.append(f"path={spec.path}")
    if spec.types:
        parts.append("type=" + ",".join(sorted(spec.types)))
    if spec.phases:
        parts.append("phase=" + ",".join(sorted(spec.phases)))
    parts += ["-" + op for op in OPCODES if op not in shown_ops(spec)]
    return " ".join(parts) or "none"


def cleared(spec: FilterSpec) -> FilterSpec:
    """Esc on the view: the path, type and phase filters go first; with none of them, the op types reset."""
    narrowed = spec.path or spec.types or spec.phases
    return FilterSpec(ops=spec.ops) if narrowed else DEFAULT_FILTER


def in_scope(module_path: str, scope: str) -> bool:
    """True when a node in ``module_path`` lies at or below module ``scope``."""
    return scope == "" or module_path == scope or module_path.startswith(scope + ".")


@dataclass(frozen=True)
class Shown:
    """What a filter lets through of a graph."""

    nodes: Sequence[NodeInfo]
    """The nodes, graph order (a :class:`Selection` of the graph's, but for the empty view before one)."""
    names: frozenset[str]
    modules: frozenset[str]
    """Module paths holding at least one of the nodes in their subtree (the branches the tree keeps), and a
    compiled model's modules that hold none but whose work a kernel among the nodes computes."""
    spec: FilterSpec = DEFAULT_FILTER
    mask: bytes = b""
    """For each node of the graph (graph order), 1 when ``spec`` lets it through."""

    _kept: ClassVar[tuple[GraphInfo | None, dict[FilterSpec, Shown]]] = (None, {})

    @classmethod
    def of(cls, graph: GraphInfo, spec: FilterSpec) -> Shown:
        """What ``spec`` lets through of ``graph``; the last few filters' answers are kept.

        Clearing a filter goes back to one just used: at 50,000 nodes working it out again
        took a tenth of a second, and the same objects let the tree and the table reuse
        what they built from them.
        """
        kept_graph, kept = cls._kept
        if kept_graph is not graph:
            kept = {}
            cls._kept = (graph, kept)
        shown = kept.get(spec)
        if shown is None:
            selected = NodeColumns.of(graph.nodes).mask(spec)
            nodes = Selection.of_mask(graph, selected)
            names = frozenset(nodes.names)
            plan = graph.module_plan
            modules = frozenset(itertools.compress(plan.paths, plan.holding(selected).tobytes())) | {""}
            if 0 in plan.counts:  # a compiled model's modules fused whole into an ancestor's kernels
                modules |= _fused_whole(graph, spec, names)
            shown = cls(nodes, names, modules, spec, selected.tobytes())
            if len(kept) >= 4:
                del kept[next(iter(kept))]
        kept[spec] = kept.pop(spec, shown)  # the most recent last
        return shown

    def within(self, scope: str) -> Sequence[NodeInfo]:
        """The nodes at or below module ``scope`` (see :func:`in_scope`), graph order."""
        nodes = self.nodes
        if not scope:
            return nodes
        if not isinstance(nodes, Selection):  # the empty view before a graph, or a caller's own tuple
            return tuple(n for n in nodes if in_scope(n.module_path, scope))
        # The module's nodes and those below it (the module plan's, graph order) that the filter keeps.
        subtree = nodes.graph.module_plan.subtree(scope)
        return Selection(nodes.graph, subtree[np.frombuffer(self.mask, dtype=bool)[subtree]])


def _fused_whole(graph: GraphInfo, spec: FilterSpec, shown: AbstractSet[str]) -> set[str]:
    """Modules holding no node (a compiled model's, fused whole into kernels charged to an ancestor) to list,
    with their ancestors: each where a kernel holding its work is shown; one no kernel computes, unfiltered."""
    plan, modules = graph.module_plan, graph.modules
    narrowed = bool(spec.path or spec.types or spec.phases)
    out: set[str] = set()
    for path, count in zip(plan.paths, plan.counts, strict=True):
        fused = modules[path].fused
        if count == 0 and (any(n in shown for n in fused) if fused else not narrowed):
            out.update(module_ancestors(path))
    return out


def prepare(graph: GraphInfo) -> None:
    """Work out now what every filter of ``graph`` reuses: its filter columns and its modules' subtrees.

    At 50,000 nodes that is ~50 ms, better paid while the graph first shows than by the first filter.
    """
    NodeColumns.of(graph.nodes)
    graph.module_plan.subtree_nodes()
    graph.module_plan.holding(np.zeros(len(graph.nodes), dtype=bool))  # works out the plan's tree levels


def tree_totals(snapshot: Snapshot, shown: Shown) -> tuple[Mapping[str, float], Mapping[str, float]]:
    """The module tree's times under a filter: each module's share of what ``shown`` lets through.

    Returns the inclusive times and, for a training step, the backward part of them (else empty).
    """
    graph, spec = snapshot.graph, shown.spec
    training = graph is not None and graph.training
    unfiltered = not (spec.path or spec.types or spec.phases)
    if snapshot.modules and unfiltered and shown_ops(spec) >= DEFAULT_FILTER.ops:
        # Only inputs and the output (no time to speak of) are hidden: the engine's inclusive
        # module times are the tree's numbers, and summing ten thousand medians again is waste.
        modules = snapshot.modules
        return column_map(modules, "inclusive_s"), (column_map(modules, "backward_s") if training else {})
    if graph is None or not snapshot.nodes or len(shown.mask) != len(graph.nodes):
        return {}, {}
    plan = graph.module_plan
    medians = plan.medians(snapshot.nodes)
    totals = FilteredTotals(plan, medians, shown.mask)
    if not training:
        return totals, {}
    backward = bytes(map(operator.and_, shown.mask, map((2).__eq__, plan.phase)))  # phase 2: backward
    return totals, FilteredTotals(plan, medians, backward)


class FilteredTotals(Mapping[str, float]):
    """Each module's total of the node medians a filter lets through, summed when asked for and kept.

    The tree asks for the modules on its lines, a few dozen: summing every module of a
    50,000-node graph (the module plan's roll-up) took ~20 ms per filter and per snapshot.
    """

    def __init__(self, plan: ModulePlan, medians: Sequence[float], mask: bytes) -> None:
        self._plan, self._medians, self._mask = plan, medians, mask
        self._sums: dict[str, float] = {}

    def __getitem__(self, path: str) -> float:
        total = self._sums.get(path)
        if total is None:
            subtree = self._plan.subtree(path)
            medians, mask = self._medians, self._mask
            if len(subtree) == len(medians):  # every node (the root): no gathering
                total = sum(itertools.compress(medians, mask))
            else:
                nodes = subtree.tolist()
                total = sum(itertools.compress(map(medians.__getitem__, nodes), map(mask.__getitem__, nodes)))
            total = self._sums[path] = float(total)
        return total

    def __iter__(self) -> Iterator[str]:
        return iter(self._plan.paths)

    def __len__(self) -> int:
        return len(self._plan.paths)


def phases_of(graph: GraphInfo | None) -> tuple[str, ...]:
    """The phases ``graph``'s nodes carry, in :data:`~fxtui.core.nodes.PHASES` order (none for inference)."""
    if graph is None:
        return ()
    present = {n.phase for n in graph.nodes}
    return tuple(p for p in PHASES if p in present)


def next_phase(spec: FilterSpec, phases: tuple[str, ...] = PHASES) -> FilterSpec:
    """``spec`` showing the next of ``phases``: all, then each phase alone (forward, backward …), all again."""
    order: list[frozenset[str]] = [frozenset(), *(frozenset({p}) for p in phases)]
    current = order.index(spec.phases) if spec.phases in order else 0
    return replace(spec, phases=order[(current + 1) % len(order)])
