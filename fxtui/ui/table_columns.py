"""The timing table's columns: header, width, how a cell reads, and how the column sorts."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from fxtui.core.column_table import ColumnTable
from fxtui.core.nodes import NOISY_IQR_RATIO, UNSTEADY_MIN_S, UNSTEADY_RATIO, NodeInfo, NodeStats
from fxtui.core.units import format_bytes, format_pct, format_seconds
from fxtui.ui.selection import Selection

SortValue = float | str


@dataclass(frozen=True, slots=True)
class Column:
    """One column of the timing table."""

    key: str
    label: str
    width: int
    numeric: bool
    """Right-aligned, and sorted largest first when first chosen."""
    cell: Callable[[NodeInfo, NodeStats | None], str]
    sort: Callable[[NodeInfo, NodeStats | None], SortValue]
    by_columns: Callable[[Callable[[str], Sequence[float]]], Sequence[SortValue] | np.ndarray] | None = None
    """The sort values of every node from the statistics' columns (given a field, its column), no NodeStats made."""
    live: bool = False
    """The order depends on the statistics, so it changes with every snapshot."""
    field: str | None = None
    """The node's own field the column sorts by (read for every node in one pass), when ``sort`` reads just that."""


def _stat(attr: str) -> Callable[[NodeInfo, NodeStats | None], float]:
    return lambda _info, stats: -1.0 if stats is None else float(getattr(stats, attr))


def _time_cell(attr: str) -> Callable[[NodeInfo, NodeStats | None], str]:
    return lambda _info, stats: "–" if stats is None or stats.count == 0 else format_seconds(getattr(stats, attr))


def _caution(stats: NodeStats | None) -> bool:
    """The ``~`` mark: the median is noisy (wide IQR) or unsteady (far above the fastest run)."""
    return stats is not None and stats.count > 0 and (stats.noisy or stats.unsteady)


def _field(name: str) -> Callable[[Callable[[str], Sequence[float]]], Sequence[float]]:
    return lambda column: column(name)


def _caution_by_columns(column: Callable[[str], Sequence[float]]) -> np.ndarray:
    """:func:`_caution` of every node from the columns: NodeStats.noisy and .unsteady, one array operation each."""
    count, median, iqr, fastest = (
        np.asarray(column(f), dtype=np.float64) for f in ("count", "median_s", "iqr_s", "min_s")
    )
    noisy = (median > 0) & (iqr > NOISY_IQR_RATIO * median)
    unsteady = (fastest > 0) & (median >= UNSTEADY_RATIO * fastest) & (median - fastest >= UNSTEADY_MIN_S)
    return ((count > 0) & (noisy | unsteady)).astype(np.float64)


# Numbers come right after the node name so they stay on screen in an 80-column terminal;
# the descriptive columns follow and scroll into view on narrow screens.
COLUMNS: tuple[Column, ...] = (
    Column("node", "node", 22, False, lambda i, _s: i.name, lambda i, _s: i.name, field="name"),
    Column("median", "median", 9, True, _time_cell("median_s"), _stat("median_s"), _field("median_s"), True),
    Column("p90", "p90", 9, True, _time_cell("p90_s"), _stat("p90_s"), _field("p90_s"), True),
    Column(
        "pct",
        "% run",
        6,
        True,
        lambda _i, s: "–" if s is None else format_pct(s.pct),
        _stat("pct"),
        _field("pct"),
        True,
    ),
    Column(
        "calls",
        "calls",
        6,
        True,
        lambda _i, s: "–" if s is None else str(s.count),
        _stat("count"),
        _field("count"),
        True,
    ),
    Column(
        "noisy",
        "~",
        1,
        False,
        lambda _i, s: "~" if _caution(s) else " ",
        lambda _i, s: 1.0 if _caution(s) else 0.0,
        _caution_by_columns,
        live=True,
    ),
    Column("phase", "phase", 9, False, lambda i, _s: i.phase, lambda i, _s: i.phase, field="phase"),
    Column("op", "op", 13, False, lambda i, _s: i.op, lambda i, _s: i.op, field="op"),
    Column("target", "target", 20, False, lambda i, _s: i.target, lambda i, _s: i.target, field="target"),
    Column(
        "module",
        "module",
        18,
        False,
        lambda i, _s: i.module_path or "(root)",
        lambda i, _s: i.module_path,
        field="module_path",
    ),
    Column("shape", "output shape", 16, False, lambda i, _s: i.shape, lambda i, _s: i.shape, field="shape"),
)

COLUMN_KEYS: tuple[str, ...] = tuple(c.key for c in COLUMNS)


def _bytes(attr: str) -> Column:
    label = {"output_bytes": "output", "alloc_bytes": "allocated", "live_bytes": "live after", "saved_bytes": "saved"}
    return Column(
        attr.removesuffix("_bytes"),
        label[attr],
        10,
        True,
        lambda i, _s: format_bytes(getattr(i, attr)),
        lambda i, _s: float(v) if (v := getattr(i, attr)) is not None else -1.0,
    )


#: The memory figures of the memory pass, each node's bytes (``m`` switches the table to them).
MEMORY_COLUMNS: tuple[Column, ...] = tuple(
    _bytes(a) for a in ("output_bytes", "alloc_bytes", "live_bytes", "saved_bytes")
)
#: Columns that mean something only for a training step.
TRAINING_ONLY = frozenset({"phase", "saved"})
#: The column sets the table switches between.
COLUMN_SETS = ("time", "memory")


def columns_for(training: bool, column_set: str = "time") -> tuple[Column, ...]:
    """The table's columns: a training step's rows also show their phase; the memory set leads with bytes."""
    if column_set == "memory":
        first, rest = COLUMNS[:1], tuple(c for c in COLUMNS[1:] if c.key not in ("p90", "calls"))
        chosen = first + MEMORY_COLUMNS + rest
    else:
        chosen = COLUMNS
    return chosen if training else tuple(c for c in chosen if c.key not in TRAINING_ONLY)


BY_KEY: Mapping[str, Column] = {c.key: c for c in (*COLUMNS, *MEMORY_COLUMNS)}


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
    if column.by_columns is not None and view.positions is not None and isinstance(stats, ColumnTable):
        # Read from the statistics' columns, gathered in one array operation: no NodeStats is made for a sort.
        return view.order(np.asarray(column.by_columns(stats.column))[view.positions], descending)
    values: Sequence[SortValue]
    if column.field is not None:  # one of the node's own fields: read in one C-level pass
        values = list(map(operator.attrgetter(column.field), nodes))
    elif not column.live:  # the node's own facts: its statistics are not looked up (nor made, from columns)
        sort = column.sort
        values = [sort(n, None) for n in nodes]
    else:
        get, sort = stats.get, column.sort
        values = [sort(n, get(n.name)) for n in nodes]
    return view.order(values, descending)


def hotspots(nodes: Sequence[NodeInfo], stats: Mapping[str, NodeStats]) -> tuple[str, ...]:
    """Names of ``nodes`` by median, slowest first."""
    return sort_names(nodes, stats, "median", descending=True)


#: A table order: column key, descending.
Sort = tuple[str, bool]


def first_sort(key: str) -> Sort:
    """Sorting by column ``key`` anew: numbers largest first, text in order."""
    return (key, BY_KEY[key].numeric)


def next_sort(sort: Sort, keys: Sequence[str] = COLUMN_KEYS) -> Sort:
    """The next column's first order (``s``) among ``keys`` (the columns on screen); the first when off screen."""
    if sort[0] not in keys:
        return first_sort(keys[0])
    return first_sort(keys[(keys.index(sort[0]) + 1) % len(keys)])


def clicked_sort(sort: Sort, key: str) -> Sort:
    """A click on column ``key``'s header: that column, or the other way round when it is the current one."""
    return (key, not sort[1]) if key == sort[0] else first_sort(key)


def sort_label(sort: Sort) -> str:
    """``median ↓``, as the status line says it."""
    return f"{BY_KEY[sort[0]].label} {'↓' if sort[1] else '↑'}"
