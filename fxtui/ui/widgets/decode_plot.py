"""A ``generate()`` call's decode steps against the context length, with the cursor's node's part marked.

One column per context length (or a run of them), left to right as the sequence grows: its height
the uninstrumented decode step there, so a cost that grows with the context (attention over a
longer cache) shows as a rising profile. The selected node's own time at each position (from the
profiled calls; a prefill node's decode twin) fills the foot of each column in the mark's colour,
so how its share moves along the sequence is seen at a glance.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.reactive import var
from textual.widget import Widget

from fxtui.core.generation import GenerationSummary
from fxtui.core.snapshot import Snapshot
from fxtui.core.units import format_seconds

_BLOCKS = " ▁▂▃▄▅▆▇█"


def decode_rows(
    steps: Sequence[float], marked: Sequence[float], width: int, height: int
) -> list[list[tuple[str, bool]]]:
    """The plot's rows, top first: per column its block character and whether the marked node's part fills it.

    ``steps`` are the decode steps' times per position bin, ``marked`` the node's (empty: none); bins are
    averaged into at most ``width`` columns, heights scaled to the tallest column.
    """
    n = len(steps)
    if n == 0 or width < 1 or height < 1:
        return []
    columns = min(n, width)
    bounds = [k * n // columns for k in range(columns + 1)]

    def mean(values: Sequence[float], k: int) -> float:
        chunk = values[bounds[k] : bounds[k + 1]]
        return sum(chunk) / len(chunk) if chunk else 0.0

    tops = [mean(steps, k) for k in range(columns)]
    parts = [min(mean(marked, k), tops[k]) for k in range(columns)] if len(marked) == n else [0.0] * columns
    peak = max(tops) or 1.0
    cells = height * 8
    levels = [max(round(t / peak * cells), 1) if t > 0 else 0 for t in tops]
    marks = [round(p / peak * cells) for p in parts]
    rows = []
    for row in range(height):
        floor = (height - 1 - row) * 8
        rows.append(
            [(_BLOCKS[min(max(level - floor, 0), 8)], mark > floor) for level, mark in zip(levels, marks, strict=True)]
        )
    return rows


def decode_twin(name: str | None, generation: GenerationSummary) -> str | None:
    """The decode node to mark for the selection: itself, or a prefill node's twin in the decode steps."""
    if name is None:
        return None
    if name in generation.node_positions:
        return name
    twin = name.removesuffix(" (prefill)") + " (decode)"
    return twin if twin in generation.node_positions else None


class DecodePlot(Widget):
    """Decode step time per context length; the selected node's part at the foot of each column."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"decode-plot--bars", "decode-plot--mark"}
    DEFAULT_CSS = """
    DecodePlot { height: 6; padding: 0 1; display: none; }
    DecodePlot > .decode-plot--bars { color: $accent; }
    DecodePlot > .decode-plot--mark { color: $warning; }
    """

    snapshot: var[Snapshot | None] = var(None, always_update=True)
    """The latest snapshot (bound to the main screen's); its generation carries the positions."""
    selected: var[str | None] = var(None)
    """The node whose part is marked (bound to the main screen's selection)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._generation: GenerationSummary | None = None
        self.rows: list[str] = []
        """The plot's rows as drawn last (top first), for tests."""
        self.marked: list[int] = []
        """For each column, how many of its rows carry the selected node's mark (for tests)."""

    def watch_snapshot(self, snapshot: Snapshot | None) -> None:
        generation = snapshot.generation if snapshot is not None else None
        self.display = generation is not None and bool(generation.position_s)
        if generation is not self._generation:
            self._generation = generation
            self.refresh()

    def watch_selected(self) -> None:
        self.refresh()

    def render(self) -> Text:
        g = self._generation
        out = Text(no_wrap=True, overflow="ellipsis")
        if g is None or not g.position_s:
            self.rows, self.marked = [], []
            out.append("decode steps: none yet", style="dim")
            return out
        twin = decode_twin(self.selected, g)
        marked = g.node_positions.get(twin, ()) if twin is not None else ()
        first, last = g.position_s[0], g.position_s[-1]
        out.append(
            f"decode step {format_seconds(first)} at {g.positions[0]} tokens → {format_seconds(last)} at "
            f"{g.positions[-1]} · TTFT {format_seconds(g.ttft_s)} · TPOT {format_seconds(g.tpot_s)}"
        )
        if twin is not None and marked:
            out.append(" · ")
            out.append("▇", style=self.get_component_rich_style("decode-plot--mark"))
            out.append(f" {twin}: {format_seconds(marked[0])} → {format_seconds(marked[-1])}")
        out.append("\n")
        rows = decode_rows(g.position_s, marked, max(self.size.width - 2, 1), max(self.size.height - 1, 1))
        self.rows = ["".join(c for c, _ in row) for row in rows]
        self.marked = [sum(m for _, m in col) for col in zip(*rows, strict=True)] if rows else []
        bars = self.get_component_rich_style("decode-plot--bars")
        mark = self.get_component_rich_style("decode-plot--mark")
        for i, row in enumerate(rows):
            for char, in_mark in row:
                out.append(char, style=mark if in_mark else bars)
            if i < len(rows) - 1:
                out.append("\n")
        return out
