"""Where the navigation keys go, decided from the numbers: pure functions, no widgets.

The main screen asks these and then shows the answer: ``h`` walks to the hottest
child, ``n``/``N`` step through the hotspots, and a node chosen elsewhere (a hint, the
error) is shown by widening the filter until it lets the node through.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fxtui.core.column_table import column_map
from fxtui.core.filters import FilterSpec, matches
from fxtui.core.nodes import NodeInfo, NodeStats
from fxtui.ui.table_sort import hotspots
from fxtui.ui.view_filter import shown_ops, with_ops
from fxtui.ui.widgets.tree_labels import Entry


def hottest(entries: Sequence[Entry], totals: Mapping[str, float], stats: Mapping[str, NodeStats]) -> Entry | None:
    """The slowest of ``entries``: a module by its inclusive total, a node by its median (the first on a tie)."""
    best: Entry | None = None
    best_s = 0.0
    medians = column_map(stats, "median_s")  # from the column: a branch may list 50,000 nodes
    for entry in entries:
        seconds = (totals if entry.kind == "module" else medians).get(entry.key, 0.0)
        if best is None or seconds > best_s:
            best, best_s = entry, seconds
    return best


class Hotspots:
    """The current view's nodes by median (``n``/``N``), sorted once per view and snapshot, not once per key."""

    def __init__(self) -> None:
        self._for: tuple[object, object] = ((), {})
        self._order: tuple[str, ...] = ()

    def step(
        self, view: Sequence[NodeInfo], stats: Mapping[str, NodeStats], selected: str | None, step: int
    ) -> str | None:
        """The node ``step`` places from ``selected`` in ``view`` by median (slowest first), wrapping around."""
        if self._for[0] is not view or self._for[1] is not stats:
            self._for, self._order = (view, stats), hotspots(view, stats)
        return step_hotspot(self._order, selected, step)


def step_hotspot(order: Sequence[str], selected: str | None, step: int) -> str | None:
    """The node ``step`` places from ``selected`` in ``order`` (slowest first), wrapping around.

    From a node outside ``order``, a step forward starts at the slowest and a step back at the fastest.
    """
    if not order:
        return None
    if selected in order:
        return order[(order.index(selected) + step) % len(order)]
    return order[0 if step > 0 else -1]


def filter_showing(node: NodeInfo, spec: FilterSpec) -> FilterSpec:
    """``spec`` widened just enough to show ``node``: its op type, then no path, type or phase filter."""
    if not matches(node, spec):
        spec = with_ops(spec, shown_ops(spec) | {node.op})
    if not matches(node, spec):
        spec = FilterSpec(ops=spec.ops)
    return spec
