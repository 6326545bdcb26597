"""Live activation memory across the graph's order, node by node, with the cursor's node marked.

The memory pass gives every node the bytes alive right after it; drawn left to right in
graph order they show where the peak is (and, in a training step, the forward pass
building up what the backward pass then releases). Each column of the plot is a run of
consecutive nodes and shows the largest value among them, so the peak is never averaged away.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.reactive import var
from textual.widget import Widget

from fxtui.core.snapshot import GraphInfo, Snapshot
from fxtui.core.units import format_bytes

_BLOCKS = " ▁▂▃▄▅▆▇█"


def plot_rows(values: Sequence[int], marked: int | None, width: int, height: int) -> tuple[list[str], int | None]:
    """A bar chart of ``values`` in at most ``width`` columns and ``height`` rows (top row first).

    Returns the rows and the column holding index ``marked`` (None when nothing is marked).
    """
    n = len(values)
    if n == 0 or width < 1 or height < 1:
        return [], None
    columns = min(n, width)
    # Column k covers values [k·n/columns, (k+1)·n/columns): each value in exactly one column.
    bounds = [k * n // columns for k in range(columns + 1)]
    tops = [max(values[bounds[k] : bounds[k + 1]]) for k in range(columns)]
    peak = max(tops) or 1
    steps = height * 8
    levels = [round(t / peak * steps) if t > 0 else 0 for t in tops]
    levels = [max(level, 1) if t > 0 else 0 for level, t in zip(levels, tops, strict=True)]
    rows = []
    for row in range(height):
        floor = (height - 1 - row) * 8
        rows.append("".join(_BLOCKS[min(max(level - floor, 0), 8)] for level in levels))
    column = None
    if marked is not None and 0 <= marked < n:
        column = next(k for k in range(columns) if bounds[k] <= marked < bounds[k + 1])
    return rows, column


class MemoryPlot(Widget):
    """Activation bytes alive after each node, in graph order; ``▲`` marks the selected node."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"memory-plot--bars", "memory-plot--mark"}
    DEFAULT_CSS = """
    MemoryPlot { height: 5; padding: 0 1; display: none; }
    MemoryPlot > .memory-plot--bars { color: $accent; }
    MemoryPlot > .memory-plot--mark { color: $warning; text-style: bold; }
    """

    snapshot: var[Snapshot | None] = var(None, always_update=True)
    """The latest snapshot (bound to the main screen's); its graph carries the bytes."""
    selected: var[str | None] = var(None)
    """The node to mark (bound to the main screen's selection)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._graph: GraphInfo | None = None
        self.rows: list[str] = []
        """The plot's rows as drawn last (top first), for tests."""
        self.marked_column: int | None = None

    def watch_snapshot(self, snapshot: Snapshot | None) -> None:
        graph = snapshot.graph if snapshot is not None else None
        if graph is not self._graph:
            self._graph = graph
            self.refresh()

    def watch_selected(self) -> None:
        self.refresh()

    def render(self) -> Text:
        graph = self._graph
        if graph is None or graph.memory is None:
            self.rows, self.marked_column = [], None
            return Text("memory: not measured", style="dim")
        memory = graph.memory
        values = [n.live_bytes or 0 for n in graph.nodes]
        chosen = graph.by_name.get(self.selected) if self.selected is not None else None
        marked = chosen.index if chosen is not None else None
        width = max(self.size.width - 2, 1)
        height = max(self.size.height - 2, 1)
        self.rows, self.marked_column = plot_rows(values, marked, width, height)
        # One line each, cut rather than wrapped: a wrapped title would push the marker off the widget.
        out = Text(no_wrap=True, overflow="ellipsis")
        if chosen is not None:
            out.append(f"{format_bytes(chosen.live_bytes)} live after {chosen.name}", style="bold")
            out.append(" · ")
        out.append(f"peak {format_bytes(memory.peak_live_bytes)} after {memory.peak_node}\n")
        bars = self.get_component_rich_style("memory-plot--bars")
        for row in self.rows:
            out.append(row + "\n", style=bars)
        if self.marked_column is not None:
            out.append(" " * self.marked_column + "▲", style=self.get_component_rich_style("memory-plot--mark"))
        return out
