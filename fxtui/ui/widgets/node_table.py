"""The timing table: one row per FX node, rendered only where it is on screen.

A ``DataTable`` keeps a styled cell object per cell; refreshing ten thousand rows of
changing medians means tens of thousands of ``update_cell`` calls a few times a
second. This table keeps only the row order (names) and reads the current
statistics when a line is drawn, so a refresh costs one sort plus the rows in view.
The cursor and the selection are keyed by node name, so they survive re-sorting,
filtering and refreshes; the scroll position is left where the user put it. While the table has
the focus its cursor row starts with a mark in a gutter of its own, as the module tree's does
(:data:`~fxtui.ui.widgets.outline_view.FOCUS_MARK`): which pane the keys go to shows in the text.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from fxtui.core.columns import BY_KEY, Column, app_columns
from fxtui.core.nodes import NodeInfo, NodeStats
from fxtui.core.snapshot import GraphInfo
from fxtui.ui.table_sort import sort_names
from fxtui.ui.widgets.outline_view import FOCUS_MARK, GUTTER


class NodeTable(ScrollView, can_focus=True):
    """Per-node timings under the selected module, sorted by any column."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "node-table--header",
        "node-table--sorted",
        "node-table--cursor",
        "node-table--noisy",
        "node-table--error",
        "node-table--focus-mark",
    }

    DEFAULT_CSS = """
    NodeTable {
        background: $surface;
        scrollbar-gutter: stable;
    }
    NodeTable > .node-table--header { background: $panel; color: $foreground; text-style: bold; }
    NodeTable > .node-table--sorted { background: $panel; color: $accent; text-style: bold; }
    NodeTable > .node-table--cursor { background: $block-cursor-blurred-background; }
    NodeTable:focus > .node-table--cursor { background: $block-cursor-background; color: $block-cursor-foreground; }
    NodeTable > .node-table--noisy { color: $warning; }
    NodeTable > .node-table--error { color: $error; text-style: bold; }
    NodeTable > .node-table--focus-mark { color: $block-cursor-background; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "First row", show=False),
        Binding("end", "edge(1)", "Last row", show=False),
    ]

    def __init__(
        self,
        *,
        on_highlight: Callable[[str], object] = lambda name: None,
        on_sort: Callable[[str], object] = lambda key: None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.columns: tuple[Column, ...] = app_columns(training=False)
        self._widths: dict[str, int] = {c.key: c.width for c in BY_KEY.values() if c.width}
        self.column_set = "time"
        """Which columns the table shows: ``time`` or ``memory`` (:func:`fxtui.core.columns.app_columns`)."""
        self._graph: GraphInfo | None = None
        self._shown: Sequence[NodeInfo] = ()
        self._stats: Mapping[str, NodeStats] = {}
        self._keys: tuple[str, ...] = ()
        self._shown_names: AbstractSet[str] = frozenset()
        self._cursor_row: int | None = None
        """The cursor's row, found when first asked for after a re-sort."""
        self.sort_key = "median"
        self.sort_descending = True
        self.cursor_name: str | None = None
        self.error_node: str | None = None
        self.on_highlight = on_highlight
        """Called in the key's own handler when the user moves the cursor onto a node (its owner selects
        it there): a message would be handled after the table's key, and a repaint that came between
        (the table's own) made everything else wait for the next frame, ~25 ms a key."""
        self.on_sort = on_sort
        """Called when the user clicks the header of a column, with its key."""
        self._line_styles: dict[str, Style] | None = None

    # -- data ---------------------------------------------------------------

    @property
    def row_names(self) -> Sequence[str]:
        """Node names in display order."""
        return self._keys

    def shows(self, name: str) -> bool:
        """True when node ``name`` is one of the table's rows."""
        return name in self._shown_names

    @property
    def cursor_row(self) -> int:
        """Index of the cursor's row, or -1 when the table is empty."""
        if self._cursor_row is None:
            # Looked up when asked (a key, a scroll) rather than indexing 50,000 rows on every re-sort.
            name = self.cursor_name
            self._cursor_row = self._keys.index(name) if name is not None and name in self._shown_names else -1
        return self._cursor_row

    def cell_text(self, name: str, column: str) -> str:
        """What the table shows for node ``name`` in column ``column``."""
        info = self._graph.node(name) if self._graph else None
        if info is None:
            raise KeyError(name)
        return BY_KEY[column].text(info, self._stats.get(name))

    def set_graph(self, graph: GraphInfo) -> None:
        """Size the descriptive columns to fit ``graph``'s names (within limits)."""
        self._graph = graph
        self.columns = app_columns(graph.training, self.column_set, bool(graph.ranks), graph.generating)
        for key, limit in (("node", 34), ("target", 28), ("module", 26), ("shape", 20)):
            column = BY_KEY[key]
            longest = max((len(column.text(n, None)) for n in graph.nodes), default=0)
            self._widths[key] = max(len(column.app_label), min(limit, longest))

    def show_columns(self, column_set: str) -> None:
        """Switch to the ``time`` or ``memory`` columns; rows, sort and cursor stay."""
        self.column_set = column_set
        graph = self._graph
        self.columns = app_columns(
            graph.training if graph else False,
            column_set,
            bool(graph and graph.ranks),
            graph.generating if graph else False,
        )
        self._resort()
        self.refresh()

    def set_nodes(
        self, nodes: Sequence[NodeInfo], stats: Mapping[str, NodeStats], names: AbstractSet[str] | None = None
    ) -> None:
        """Show ``nodes`` with ``stats``, re-sorted; the cursor stays on its node when it is still shown.

        ``names``, the names of ``nodes`` when the caller has them, saves making the set again.
        """
        self._shown = nodes
        self._shown_names = names if names is not None else frozenset(map(operator.attrgetter("name"), nodes))
        self._stats = stats
        self._resort()

    def set_stats(self, stats: Mapping[str, NodeStats]) -> None:
        """New statistics for the same nodes (re-sorted when the order depends on them)."""
        self._stats = stats
        if BY_KEY[self.sort_key].live:
            self._resort()
        else:
            self.refresh()

    def sort_by(self, key: str, descending: bool | None = None) -> None:
        """Sort by column ``key``; numbers start largest first, text in order."""
        self.sort_key = key
        self.sort_descending = BY_KEY[key].numeric if descending is None else descending
        self._resort()

    def _resort(self) -> None:
        keys = sort_names(self._shown, self._stats, self.sort_key, self.sort_descending)
        self._keys = keys
        self._cursor_row = None
        if self.cursor_name not in self._shown_names:
            self.cursor_name = keys[0] if keys else None
        width = sum(self._widths[c.key] for c in self.columns) + len(self.columns)
        self.virtual_size = Size(width + GUTTER, len(keys) + 1)
        self.refresh()

    # -- cursor -------------------------------------------------------------

    def move_to(self, name: str | None, *, scroll: bool = True) -> None:
        """Put the cursor on node ``name`` (if shown) and scroll it into view."""
        if name is None or name not in self._shown_names:
            return
        before, self.cursor_name, self._cursor_row = self.cursor_row, name, None
        top = round(self.scroll_y)
        if scroll:
            self._scroll_to_cursor()
        if round(self.scroll_y) != top:
            self.refresh()
        else:  # only the two rows the cursor left and reached change
            for row in (before, self.cursor_row):
                self.refresh(Region(0, row - top + 1, self.size.width, 1))

    def _visible_rows(self) -> int:
        # The content region excludes the horizontal scrollbar; the header takes one line of it.
        return max(1, self.scrollable_content_region.height - 1)

    def _scroll_to_cursor(self) -> None:
        row = self.cursor_row
        if row < 0:
            return
        top = round(self.scroll_y)
        if row < top:
            self.scroll_to(y=row, animate=False)
        elif row >= top + self._visible_rows():
            self.scroll_to(y=row - self._visible_rows() + 1, animate=False)

    def _user_move(self, row: int) -> None:
        if not self._keys:
            return
        row = max(0, min(len(self._keys) - 1, row))
        name = self._keys[row]
        changed = name != self.cursor_name
        self.move_to(name)
        if changed:
            self.on_highlight(name)

    def action_cursor(self, delta: int) -> None:
        """Move the cursor ``delta`` rows."""
        self._user_move(self.cursor_row + delta)

    def action_page(self, direction: int) -> None:
        """Move the cursor a screenful."""
        self._user_move(self.cursor_row + direction * self._visible_rows())

    def action_edge(self, end: int) -> None:
        """Move the cursor to the first (0) or last (1) row."""
        self._user_move(len(self._keys) - 1 if end else 0)

    def on_click(self, event: events.Click) -> None:
        """A click on the header sorts by that column; on a row, selects it."""
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:
            x = offset.x - GUTTER + round(self.scroll_x)
            for column in self.columns:
                width = self._widths[column.key] + 1
                if x < width:
                    self.on_sort(column.key)
                    return
                x -= width
            return
        self._user_move(round(self.scroll_y) + offset.y - 1)

    # -- drawing ------------------------------------------------------------

    def render_lines(self, crop: Region) -> list[Strip]:
        """Draw the lines in ``crop``, working out the styles once rather than per line."""
        # rich_style walks every ancestor's CSS; per line it was the largest cost of a repaint.
        self._line_styles = {
            "base": self.rich_style,
            **{name: self.get_component_rich_style(name) for name in self.COMPONENT_CLASSES},
        }
        try:
            return super().render_lines(crop)
        finally:
            self._line_styles = None

    def _style(self, name: str) -> Style:
        styles = self._line_styles
        if styles is not None:
            return styles[name]
        return self.rich_style if name == "base" else self.get_component_rich_style(name)

    def render_line(self, y: int) -> Strip:
        """Line 0 is the header (it does not scroll vertically); the others are rows."""
        width = self.size.width - GUTTER
        scroll_x = round(self.scroll_x)
        base = self._style("base")
        gutter = Segment(" " * GUTTER, base)
        if y == 0:
            strip = self._header(base)
            gutter = Segment(" " * GUTTER, base + self._style("node-table--header"))
        else:
            row = round(self.scroll_y) + y - 1
            if row >= len(self._keys) or self._graph is None:
                return Strip.blank(width + GUTTER, base)
            name = self._keys[row]
            strip = self._row(name, base)
            if name == self.cursor_name and self.has_focus:
                gutter = Segment(FOCUS_MARK, base + self._style("node-table--focus-mark"))
        return Strip([gutter, *strip.crop_extend(scroll_x, scroll_x + width, base)])

    def _header(self, base: Style) -> Strip:
        header = base + self._style("node-table--header")
        sorted_style = base + self._style("node-table--sorted")
        segments = []
        for column in self.columns:
            label = column.app_label
            style = header
            if column.key == self.sort_key:
                label = f"{label}{'↓' if self.sort_descending else '↑'}"
                style = sorted_style
            segments.append(Segment(self._fit(label, column) + " ", style))
        return Strip(segments)

    def _row(self, name: str, base: Style) -> Strip:
        assert self._graph is not None
        info = self._graph.node(name)
        stats = self._stats.get(name)
        style = base
        if name == self.cursor_name:
            style = base + self._style("node-table--cursor")
        segments = []
        for column in self.columns:
            text = column.text(info, stats)
            cell_style = style
            if column.key == "noisy" and text.strip():
                cell_style = style + self._style("node-table--noisy")
            if column.key == "node" and name == self.error_node:
                cell_style = style + self._style("node-table--error")
            segments.append(Segment(self._fit(text, column) + " ", cell_style))
        return Strip(segments)

    def _fit(self, text: str, column: Column) -> str:
        width = self._widths[column.key]
        if len(text) > width:
            text = text[: width - 1] + "…"
        return text.rjust(width) if column.numeric else text.ljust(width)
