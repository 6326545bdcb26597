"""Label/value pairs in two columns, a long value wrapping under itself: the detail pane's fields."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widget import Widget

#: Spaces between the label column and the values.
GAP = 1


class FieldList(Widget):
    """Label/value pairs, labels bold in a column as wide as the longest, values wrapped beside them.

    A rich ``Table`` did this before, and a cursor key that selects another node paid for it
    twice (measuring its height, then rendering it: ~8 ms a key). Here the lines are laid out
    once per change of the pairs or of the width, and each paint copies them.
    """

    DEFAULT_CSS = """
    FieldList { height: auto; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.pairs: tuple[tuple[str, str], ...] = ()
        self._laid_out: tuple[int, list[tuple[str, str]]] | None = None
        self._base: Style | None = None

    def show(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Show ``pairs``; the screen is laid out again only when the number of lines changes."""
        pairs = tuple(pairs)
        if pairs == self.pairs:
            return
        before = len(self._wrapped(self.size.width)) if self.size.width else -1
        self.pairs = pairs
        self._laid_out = None
        self.refresh(layout=not self.size.width or len(self._wrapped(self.size.width)) != before)

    def _wrapped(self, width: int) -> list[tuple[str, str]]:
        """The (label, value) text of each line at ``width`` cells: a wrapped value's later lines have no label."""
        if self._laid_out is not None and self._laid_out[0] == width:
            return self._laid_out[1]
        label_width = max((cell_len(label) for label, _ in self.pairs), default=0)
        value_width = max(8, width - label_width - GAP)
        lines: list[tuple[str, str]] = []
        for label, value in self.pairs:
            wrapped = Text(value).wrap(self.app.console, value_width) if value else [Text()]
            for i, part in enumerate(wrapped):
                lines.append((label.ljust(label_width) if i == 0 else " " * label_width, part.plain.rstrip()))
        self._laid_out = (width, lines)
        return lines

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """One line per label, more where a value wraps."""
        return len(self._wrapped(width))

    def render_lines(self, crop: Region) -> list[Strip]:
        """The lines in ``crop``, the widget's style worked out once for all of them."""
        self._base = self.rich_style  # blends the colours of every ancestor: ~0.3 ms each time
        try:
            return super().render_lines(crop)
        finally:
            self._base = None

    def render_line(self, y: int) -> Strip:
        """Line ``y``: the label in bold, the gap, the value."""
        width = self.size.width
        lines = self._wrapped(width)
        base = self._base or self.rich_style
        if y >= len(lines):
            return Strip.blank(width, base)
        label, value = lines[y]
        # The gap goes with the label: a value's segment starts with its text (SVG viewers drop leading spaces).
        segments = [Segment(label + " " * GAP, base + Style(bold=True)), Segment(value, base)]
        return Strip(segments).adjust_cell_length(width, base)
