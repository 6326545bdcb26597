"""How the app's timing table sorts its rows by a column of :mod:`fxtui.core.columns`, and the sort keys.

At 50,000 nodes a sort per snapshot must not make a record per node: a column that reads one
statistic is sorted from the statistics' own column (:class:`~fxtui.core.column_table.ColumnTable`),
gathered and argsorted as arrays; a column of the node's facts is read in one C-level pass.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from fxtui.core.column_table import ColumnTable
from fxtui.core.columns import APP_TIME, BY_KEY, SortValue, no_rates
from fxtui.core.nodes import NodeInfo, NodeStats
from fxtui.ui.selection import Selection


class _View:
    """What sorting a list of nodes needs beyond the values, kept while the same list is sorted again.

    A live session re-sorts the same rows with every snapshot; at 50,000 nodes looking each
    row up in the statistics' columns and putting the rows in graph order first took as long
    as the sort itself.
    """

    def __init__(self, nodes: Sequence[NodeInfo], stats: Mapping[str, NodeStats]) -> None:
        self.nodes, self.stats_names = nodes, stats.names if isinstance(stats, ColumnTable) else None
        self.positions: np.ndarray | None = None
        """Each row's position in the statistics' columns, when every row has one."""
        self.base = np.arange(len(nodes))
        """The rows in graph order: a stable sort of values in this order keeps ties in it."""
        if isinstance(nodes, Selection):  # graph order already, and the graph's indices at hand
            self.names = nodes.names
            if nodes.graph.module_plan.in_graph_order(stats):
                self.positions = nodes.indices
                return
        else:
            self.names = tuple(map(operator.attrgetter("name"), nodes))
            graph_order = np.fromiter(map(operator.attrgetter("index"), nodes), np.int64, len(nodes))
            if np.any(graph_order[1:] < graph_order[:-1]):
                self.base = np.argsort(graph_order, kind="stable")
        if isinstance(stats, ColumnTable):
            positions = np.fromiter(map(stats.index.get, self.names, itertools.repeat(-1)), np.int64, len(nodes))
            if not np.any(positions < 0):
                self.positions = positions

    _kept: ClassVar[list[_View]] = []

    @classmethod
    def of(cls, nodes: Sequence[NodeInfo], stats: Mapping[str, NodeStats]) -> _View:
        names = stats.names if isinstance(stats, ColumnTable) else None
        for view in cls._kept:
            if view.nodes is nodes and view.stats_names is names:
                return view
        view = cls(nodes, stats)
        cls._kept = [view, *cls._kept[:2]]
        return view

    def order(self, values: Sequence[SortValue], descending: bool) -> tuple[str, ...]:
        """The names sorted by ``values`` (one per row), ties in graph order."""
        if isinstance(values, np.ndarray) or (len(values) > 0 and isinstance(values[0], (int, float))):
            numbers = np.asarray(values, dtype=np.float64)[self.base]
            # Negated, an ascending stable sort puts the largest first and keeps ties in graph order.
            ranks = self.base[np.argsort(-numbers if descending else numbers, kind="stable")].tolist()
        else:  # text: Python's sort, which is stable reversed too
            ranks = sorted(self.base.tolist(), key=values.__getitem__, reverse=descending)
        return operator.itemgetter(*ranks)(self.names) if len(ranks) > 1 else tuple(self.names[i] for i in ranks)


def sort_names(
    nodes: Sequence[NodeInfo], stats: Mapping[str, NodeStats], key: str, descending: bool
) -> tuple[str, ...]:
    """Names of ``nodes`` ordered by column ``key``; ties keep graph order.

    A tuple: it holds only strings, so the garbage collector stops walking it after meeting it once
    (a list of 50,000 names made per snapshot was walked by every collection until it aged).
    """
    column = BY_KEY[key]
    view = _View.of(nodes, stats)
    if column.live and view.positions is not None and isinstance(stats, ColumnTable):
        # Read from the statistics' columns, gathered in one array operation: no NodeStats is made for a sort.
        values = column.by_columns(stats.column) if column.by_columns else stats.column(column.stat)
        return view.order(np.asarray(values, dtype=np.float64)[view.positions], descending)
    if column.fact:  # one of the node's own fields: read in one C-level pass
        return view.order(list(map(operator.attrgetter(column.fact), nodes)), descending)
    sort, rates = column.sort, no_rates()
    if not column.live:  # the node's own facts: its statistics are not looked up (nor made, from columns)
        return view.order([sort(n, None, rates) for n in nodes], descending)
    get = stats.get
    return view.order([sort(n, get(n.name), rates) for n in nodes], descending)


def hotspots(nodes: Sequence[NodeInfo], stats: Mapping[str, NodeStats]) -> tuple[str, ...]:
    """Names of ``nodes`` by median, slowest first."""
    return sort_names(nodes, stats, "median", descending=True)


#: A table order: column key, descending.
Sort = tuple[str, bool]


def first_sort(key: str) -> Sort:
    """Sorting by column ``key`` anew: numbers largest first, text in order."""
    return (key, BY_KEY[key].numeric)


def next_sort(sort: Sort, keys: Sequence[str] = APP_TIME) -> Sort:
    """The next column's first order (``s``) among ``keys`` (the columns on screen); the first when off screen."""
    if sort[0] not in keys:
        return first_sort(keys[0])
    return first_sort(keys[(keys.index(sort[0]) + 1) % len(keys)])


def clicked_sort(sort: Sort, key: str) -> Sort:
    """A click on column ``key``'s header: that column, or the other way round when it is the current one."""
    return (key, not sort[1]) if key == sort[0] else first_sort(key)


def sort_label(sort: Sort) -> str:
    """``median ↓``, as the status line says it."""
    return f"{BY_KEY[sort[0]].app_label} {'↓' if sort[1] else '↑'}"
