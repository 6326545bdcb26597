"""A node's recent samples as bars, oldest left, coloured from dim (fastest) to bright (slowest).

The detail pane draws one whenever the selection moves. Textual's ``Sparkline`` renders a
rich renderable with a segment and a newly blended style per bar: ~3.4 ms a key at any
graph size, more than the table's whole repaint. Here a bar's height picks its colour
from one of as many shades as there are bar heights (worked out once per theme), a run
of bars of one height and shade is one segment, and the lines are redrawn only when the
samples or the width change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widget import Widget

#: One eighth of a line per step.
BARS = "▁▂▃▄▅▆▇█"


def bar_levels(samples: Sequence[float], width: int, height: int) -> list[int]:
    """Each column's bar height in eighths of a line, from 0 (the smallest sample) to ``8 * height - 1``.

    Fewer samples than columns are stretched (each sample takes its share of the columns); more
    are grouped, each column showing the largest of its group.
    """
    count = len(samples)
    if count == 0 or width <= 0:
        return []
    low, high = min(samples), max(samples)
    top = 8 * height - 1
    if count == 1 or high == low:
        return [top if count == 1 else 0] * width
    scale = top / (high - low)
    levels = []
    for column in range(width):
        first, end = column * count // width, (column + 1) * count // width
        value = max(samples[first:end]) if end > first else samples[first]
        levels.append(int((value - low) * scale))
    return levels


class Sparkline(Widget):
    """Bars of ``samples`` across the widget's width and height (:meth:`show` them)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"sparkline--min-color", "sparkline--max-color"}

    DEFAULT_CSS = """
    Sparkline { height: 1; }
    Sparkline > .sparkline--max-color { color: $primary; }
    Sparkline > .sparkline--min-color { color: $primary 30%; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.samples: tuple[float, ...] = ()
        self._levels: tuple[tuple[int, int], list[int]] | None = None
        """(width, height) and each column's bar height, for the samples shown."""
        self._shades: list[Style] | None = None

    def show(self, samples: Sequence[float]) -> None:
        """Draw ``samples`` (oldest first); the same samples again draw nothing."""
        samples = tuple(samples)
        if samples != self.samples:
            self.samples, self._levels = samples, None
            self.refresh()

    def notify_style_update(self) -> None:
        """The theme or the styles changed: the shades are worked out again."""
        super().notify_style_update()
        self._shades = None

    def _shade_styles(self, top: int) -> list[Style]:
        if self._shades is None or len(self._shades) != top + 1:
            _, background = self.background_colors
            low = background + self.get_component_styles("sparkline--min-color").color
            high = background + self.get_component_styles("sparkline--max-color").color
            self._shades = [
                Style(color=low.blend(high, level / top if top else 1.0).rich_color) for level in range(top + 1)
            ]
        return self._shades

    def render_line(self, y: int) -> Strip:
        """Line ``y`` (0 at the top) of the bars."""
        width, height = self.size
        base = self.rich_style
        if self._levels is None or self._levels[0] != (width, height):
            self._levels = ((width, height), bar_levels(self.samples, width, height))
        levels = self._levels[1]
        if not levels:
            return Strip.blank(width, base)
        shades = self._shade_styles(8 * height - 1)
        floor = (height - 1 - y) * 8  # the eighths below this line
        segments: list[Segment] = []
        run_start = 0
        for column in range(1, width + 1):
            if column < width and levels[column] == levels[run_start]:
                continue
            level = levels[run_start]
            if level < floor:
                segments.append(Segment(" " * (column - run_start), base))
            else:
                char = "█" if level >= floor + 8 else BARS[level - floor]
                segments.append(Segment(char * (column - run_start), base + shades[level]))
            run_start = column
        return Strip(segments, width)
