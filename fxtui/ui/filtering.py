"""Which nodes and modules the app shows: pure functions over a :class:`GraphInfo`.

The filter itself (:class:`FilterSpec`, :func:`matches`) is the engine's, so the
headless report's ``--path 'layer1*'`` and the app's ``/ layer1*`` select the same
nodes. What lives here is what only a view needs: the app's default, a compact
description for the status line, which branches of the module tree still hold a
visible node, and the times the tree shows under a filter.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from fxtui.engine.columnar import column_map
from fxtui.engine.filters import FilterSpec, matches
from fxtui.engine.model import PHASES, module_ancestors
from fxtui.engine.snapshot import OPCODES, GraphInfo, NodeInfo, Snapshot

__all__ = [
    "DEFAULT_FILTER",
    "Ancestors",
    "FilterSpec",
    "Shown",
    "describe",
    "in_scope",
    "matches",
    "next_phase",
    "shown_nodes",
    "shown_ops",
    "tree_totals",
    "visible_modules",
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


def in_scope(module_path: str, scope: str) -> bool:
    """True when a node in ``module_path`` lies at or below module ``scope``."""
    return scope == "" or module_path == scope or module_path.startswith(scope + ".")


class Ancestors:
    """Every module path of a graph with its ancestors (:func:`module_ancestors`), worked out once per graph.

    Each filter change walks every node's ancestors; at 50,000 nodes splitting and joining
    the paths again each time took about a tenth of a second.
    """

    _last: Ancestors | None = None

    def __init__(self, graph: GraphInfo) -> None:
        self.graph = graph
        self.of: dict[str, list[str]] = {path: module_ancestors(path) for path in graph.modules}

    @classmethod
    def of_graph(cls, graph: GraphInfo) -> dict[str, list[str]]:
        """The ancestors of every module path of ``graph`` (the last graph's are kept)."""
        last = cls._last
        if last is None or last.graph is not graph:
            last = cls._last = cls(graph)
        return last.of


@dataclass(frozen=True)
class Shown:
    """What a filter lets through of a graph."""

    nodes: tuple[NodeInfo, ...]
    """The nodes, graph order."""
    names: frozenset[str]
    modules: frozenset[str]
    """Module paths holding at least one of the nodes in their subtree (the branches the tree keeps)."""

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
            nodes = tuple(shown_nodes(graph, spec))
            names = frozenset(map(operator.attrgetter("name"), nodes))
            shown = cls(nodes, names, frozenset(visible_modules(graph, nodes)))
            if len(kept) >= 4:
                del kept[next(iter(kept))]
        kept[spec] = kept.pop(spec, shown)  # the most recent last
        return shown


def shown_nodes(graph: GraphInfo, spec: FilterSpec) -> list[NodeInfo]:
    """The nodes of ``graph`` that ``spec`` lets through, in graph order."""
    if not (spec.path or spec.types or spec.phases):
        # Op types only (the default): the test of matches(), inline, as it runs once per node.
        ops = spec.ops
        return [n for n in graph.nodes if n.op in ops] if ops else list(graph.nodes)
    return [n for n in graph.nodes if matches(n, spec)]


def visible_modules(graph: GraphInfo, nodes: Iterable[NodeInfo]) -> set[str]:
    """Module paths holding at least one of ``nodes`` in their subtree (the branches the tree keeps)."""
    # Level by level up from the nodes' own modules: a set operation per level, not a walk per node.
    seen = frontier = set(map(operator.attrgetter("module_path"), nodes))
    while frontier:
        frontier = {path.rpartition(".")[0] for path in frontier if path} - seen
        seen = seen | frontier
    return seen & graph.modules.keys() | {""}


def tree_totals(
    snapshot: Snapshot, spec: FilterSpec, nodes: Sequence[NodeInfo]
) -> tuple[Mapping[str, float], Mapping[str, float]]:
    """The module tree's times under ``spec``: each module's share of what the filter lets through.

    Returns the inclusive times and, for a training step, the backward part of them (else empty).
    ``nodes`` are the nodes the filter lets through.
    """
    graph = snapshot.graph
    training = graph is not None and graph.training
    unfiltered = not (spec.path or spec.types or spec.phases)
    if snapshot.modules and unfiltered and shown_ops(spec) >= DEFAULT_FILTER.ops:
        # Only inputs and the output (no time to speak of) are hidden: the engine's inclusive
        # module times are the tree's numbers, and summing ten thousand medians again is waste.
        modules = snapshot.modules
        return column_map(modules, "inclusive_s"), (column_map(modules, "backward_s") if training else {})
    if graph is None:
        return {}, {}
    medians = column_map(snapshot.nodes, "median_s")
    ancestors = Ancestors.of_graph(graph)
    totals: dict[str, float] = {}
    backward: dict[str, float] = {}
    for node in nodes:
        median = medians.get(node.name)
        if median is None:
            continue
        grad = training and node.phase == "backward"
        for path in ancestors[node.module_path]:
            totals[path] = totals.get(path, 0.0) + median
            if grad:
                backward[path] = backward.get(path, 0.0) + median
    return totals, backward


def next_phase(spec: FilterSpec) -> FilterSpec:
    """``spec`` showing the next phase of a training step: all, forward, backward, optimizer, all again."""
    order: list[frozenset[str]] = [frozenset(), *(frozenset({p}) for p in PHASES)]
    current = order.index(spec.phases) if spec.phases in order else 0
    return replace(spec, phases=order[(current + 1) % len(order)])
