"""Some of a graph's nodes, in graph order, held as an array of their indices.

A filter at 50,000 nodes picks tens of thousands of them, and the table sorts what it
picked with every snapshot. As a tuple of nodes, the table first had to find each
node's place in the graph and in the statistics' columns again (a lookup per node,
~16 ms at 50,000); as indices, both are the array itself. The indices are not walked
by the garbage collector either, which a tuple of 50,000 nodes was on every young
collection until it aged.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np

from fxtui.core.nodes import NodeInfo
from fxtui.core.snapshot import GraphInfo


class Selection(Sequence[NodeInfo]):
    """The nodes of ``graph`` at ``indices`` (ascending: graph order)."""

    __slots__ = ("_names", "graph", "indices")

    def __init__(self, graph: GraphInfo, indices: np.ndarray) -> None:
        self.graph = graph
        self.indices = indices
        """Graph indices of the nodes, ascending."""
        self._names: tuple[str, ...] | None = None

    @classmethod
    def of_mask(cls, graph: GraphInfo, mask: np.ndarray) -> Selection:
        """The nodes whose entry in ``mask`` (one boolean per node of ``graph``) is true."""
        return cls(graph, np.flatnonzero(mask))

    @property
    def names(self) -> tuple[str, ...]:
        """The nodes' names, in order (made when first asked for)."""
        if self._names is None:
            all_names, indices = self.graph.module_plan.names, self.indices.tolist()
            self._names = (
                operator.itemgetter(*indices)(all_names) if len(indices) > 1 else tuple(all_names[i] for i in indices)
            )
        return self._names

    def __len__(self) -> int:
        return len(self.indices)

    @overload
    def __getitem__(self, index: int) -> NodeInfo: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[NodeInfo]: ...

    def __getitem__(self, index: int | slice) -> NodeInfo | Sequence[NodeInfo]:
        if isinstance(index, slice):
            return Selection(self.graph, self.indices[index]) if (index.step or 1) > 0 else list(self)[index]
        return self.graph.nodes[int(self.indices[index])]

    def __iter__(self) -> Iterator[NodeInfo]:
        return map(self.graph.nodes.__getitem__, self.indices.tolist())

    def __repr__(self) -> str:
        return f"Selection({len(self)} of {len(self.graph.nodes)} nodes)"
