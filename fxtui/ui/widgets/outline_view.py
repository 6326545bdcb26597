"""A tree drawn from an :class:`~fxtui.ui.widgets.tree_lines.Outline`, only the lines on screen, as Textual draws Trees.

Textual's ``Tree`` keeps an object per entry and walks every open entry, measuring each
label, whenever anything opens, closes, takes the focus or changes size: with 10,000
entries under one branch (an ``nn.Sequential`` of 10,000 layers) about a second each
time. Here the lines are plain data, a branch that opens or closes splices its lines in
or out, and a line is drawn when it is on screen and has changed. It keeps the Tree's
look (component classes, CSS, guides, icons, hover and cursor) and keys; a subclass
says what a line reads (:meth:`OutlineView.label_parts`) and what choosing one means.
"""

from __future__ import annotations

from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.reactive import var
from textual.scroll_view import ScrollView
from textual.strip import Strip

from fxtui.ui.widgets.tree_labels import TIME_FROM, Entry, Part
from fxtui.ui.widgets.tree_lines import Outline

#: Guide characters (space, vertical, end, cross) as Textual's Tree draws them, by the guides' style.
_GUIDES = {"default": ("  ", "│ ", "└─", "├─"), "bold": ("  ", "┃ ", "┗━", "┣━"), "double": ("  ", "║ ", "╚═", "╠═")}
_STYLES = ("tree--label", "tree--highlight", "tree--highlight-line", "tree--guides", "tree--guides-hover")
#: The focused pane's cursor line starts with this in a gutter of GUTTER cells (blank elsewhere): which pane
#: the keys go to shows in the text, not only in colour (the timing table has the same gutter).
FOCUS_MARK, GUTTER = "▌", 1


class OutlineView(ScrollView, can_focus=True):
    """The lines of an :class:`Outline` with a cursor, guides and ▶/▼ icons; labels from :meth:`label_parts`."""

    ICON_NODE = "▶ "
    ICON_NODE_EXPANDED = "▼ "

    COMPONENT_CLASSES: ClassVar[set[str]] = {*_STYLES, "tree--cursor", "tree--guides-selected", "tree--focus-mark"}

    # Textual's Tree styles, so the tree reads as before.
    DEFAULT_CSS = """
    OutlineView {
        background: $surface;
        color: $foreground;
        & > .tree--guides { color: $surface-lighten-2; }
        & > .tree--guides-hover { color: $surface-lighten-2; }
        & > .tree--guides-selected { color: $block-cursor-blurred-background; }
        & > .tree--cursor {
            text-style: $block-cursor-blurred-text-style;
            background: $block-cursor-blurred-background;
        }
        & > .tree--highlight-line { background: $block-hover-background; }
        & > .tree--focus-mark { color: $block-cursor-background; }
        &:focus {
            background-tint: $foreground 5%;
            & > .tree--cursor {
                color: $block-cursor-foreground;
                background: $block-cursor-background;
                text-style: $block-cursor-text-style;
            }
            & > .tree--guides { color: $surface-lighten-3; }
            & > .tree--guides-hover { color: $surface-lighten-3; }
            & > .tree--guides-selected { color: $block-cursor-background; }
        }
        &:light {
            & > .tree--guides { color: $surface-darken-1; }
            & > .tree--guides-hover { color: $block-cursor-background; }
            & > .tree--guides-selected { color: $block-cursor-background; }
        }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "First line", show=False),
        Binding("end", "edge(1)", "Last line", show=False),
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("right", "expand_cursor", "Expand", show=False),
        Binding("left", "collapse_cursor", "Collapse", show=False),
        Binding("shift+left", "cursor_parent", "Cursor to parent", show=False),
    ]

    guide_depth: var[int] = var(3)
    """Cells a level indents (two on a narrow tree)."""
    hover_line: var[int] = var(-1)
    """The line under the mouse (-1: none)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.outline = Outline()
        self.cursor_line = 0
        """The cursor's line (it starts on the root, as Textual's Tree's does)."""
        self._drawn: dict[tuple[object, ...], Strip] = {}
        """Lines drawn since the labels, the structure or the styles last changed, by what they show."""
        self._styles: dict[str, Style] | None = None
        self._painting: tuple[tuple[int, int, int], tuple[int, int, int]] | None = None

    # -- what a subclass says -------------------------------------------------

    def label_parts(self, entry: Entry, depth: int) -> list[Part]:
        """The label of ``entry``, on a line ``depth`` levels below the root, as (text, component class) pieces."""
        return [(entry.key, "")]

    def cursor_moved(self, entry: Entry) -> None:
        """The cursor landed on ``entry`` (another line than before)."""

    def entry_selected(self, entry: Entry) -> None:
        """Enter, or a click, on ``entry``."""

    # -- lines ----------------------------------------------------------------

    @property
    def last_line(self) -> int:
        """The number of the last line."""
        return len(self.outline.entries) - 1

    def entry_at(self, line: int) -> Entry | None:
        """What line ``line`` shows."""
        entries = self.outline.entries
        return entries[line] if 0 <= line < len(entries) else None

    @property
    def cursor_entry(self) -> Entry | None:
        """What the cursor is on."""
        return self.entry_at(self.cursor_line)

    def line_of(self, entry: Entry) -> int | None:
        """The line showing ``entry`` (None when its branch is closed or the filter hides it)."""
        return self.outline.line_of(entry)

    def is_expanded(self, path: str) -> bool:
        """True when module ``path``'s branch is open."""
        return self.outline.is_expanded(path)

    @property
    def line_width(self) -> int:
        """Cells a line's guides, icon and label take: the width but for the focus gutter."""
        return max(self.scrollable_content_region.width - GUTTER, 0)

    def lines_changed(self) -> None:
        """The outline's lines changed: size the scroll area and draw them again."""
        self.virtual_size = Size(self.line_width, len(self.outline.entries))
        self.redraw()

    def redraw(self) -> None:
        """Draw every line again (the labels, the structure or the styles changed)."""
        self._drawn.clear()
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._drawn.clear()
        self._styles = None

    def open_branch(self, path: str) -> None:
        """Open module ``path``'s branch (the cursor stays on its line)."""
        at, added = self.outline.expand(path)
        if added and self.cursor_line > at:
            self.cursor_line += added
        self.lines_changed()

    def close_branch(self, path: str) -> None:
        """Close module ``path``'s branch; a cursor inside it lands on the branch."""
        at, removed = self.outline.collapse(path)
        if removed and self.cursor_line > at:
            self.cursor_line = at if self.cursor_line <= at + removed else self.cursor_line - removed
        self.lines_changed()

    def on_resize(self, event: events.Resize) -> None:
        """On a narrow tree the guides take two cells a level instead of three, leaving room for names."""
        self.guide_depth = 2 if event.size.width < TIME_FROM else 3
        self.lines_changed()

    def watch_guide_depth(self) -> None:
        self.redraw()

    def watch_hover_line(self) -> None:
        self.refresh()

    # -- cursor and keys ------------------------------------------------------

    def move_cursor(self, line: int) -> None:
        """Put the cursor on ``line`` (clamped) and scroll it into view."""
        line = max(0, min(self.last_line, line))
        before, self.cursor_line = self.cursor_line, line
        top = round(self.scroll_y)
        self.scroll_to_region(Region(0, line, 1, 1), animate=False, force=True, origin_visible=False, x_axis=False)
        if round(self.scroll_y) != top or self._open_branch(before) or self._open_branch(line):
            self.refresh()  # scrolled, or the guides under an open branch change style with the cursor
        else:
            for y in (before, line):
                self.refresh(Region(0, y - top, self.size.width, 1))
        entry = self.entry_at(line)
        if line != before and entry is not None:
            self.cursor_moved(entry)

    def _open_branch(self, line: int) -> bool:
        entry = self.entry_at(line)
        return entry is not None and entry.kind != "node" and self.is_expanded(entry.key)

    def action_cursor_up(self) -> None:
        """Move the cursor up a line."""
        self.move_cursor(self.last_line if self.cursor_line < 0 else self.cursor_line - 1)

    def action_cursor_down(self) -> None:
        """Move the cursor down a line."""
        self.move_cursor(self.cursor_line + 1)

    def action_page(self, direction: int) -> None:
        """Move the cursor a screenful."""
        page = self.scrollable_content_region.height - 1
        self.move_cursor(max(self.cursor_line, 0) + direction * page)

    def action_edge(self, end: int) -> None:
        """Move the cursor to the first (0) or last (1) line."""
        self.move_cursor(self.last_line if end else 0)

    def action_cursor_parent(self) -> None:
        """Move the cursor to the branch that lists it."""
        parent = self.outline.parent_line(self.cursor_line) if self.cursor_line > 0 else None
        if parent is not None:
            self.move_cursor(parent)

    def action_select_cursor(self) -> None:
        """Choose the line under the cursor."""
        entry = self.cursor_entry
        if entry is not None:
            self.entry_selected(entry)

    def action_expand_cursor(self) -> None:
        """Open the module (or group) under the cursor."""
        entry = self.cursor_entry
        if entry is not None and entry.kind != "node":
            self.open_branch(entry.key)

    def action_collapse_cursor(self) -> None:
        """Close the module under the cursor, or go to its parent."""
        entry = self.cursor_entry
        if entry is not None and entry.kind != "node" and entry.key and self.is_expanded(entry.key):
            self.close_branch(entry.key)
        else:
            self.action_cursor_parent()

    def on_click(self, event: events.Click) -> None:
        """A click on ▶/▼ opens or closes that branch (a cursor inside moves onto it); on a line, selects it."""
        line = self._line_under(event)
        if line is None or (entry := self.entry_at(line)) is None:
            return
        if entry.kind != "node" and self._on_icon(line, event):
            if self.is_expanded(entry.key) and entry.key:
                self.close_branch(entry.key)
            else:
                self.open_branch(entry.key)
            return
        self.move_cursor(line)
        self.entry_selected(entry)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        line = self._line_under(event)
        self.hover_line = -1 if line is None else line

    def _line_under(self, event: events.MouseEvent) -> int | None:
        """The line under the mouse, if it is on one."""
        # Worked out from the position rather than carried in each line's style: a style per line
        # (Textual's Tree puts the line number in its meta) made every line's styles new objects to
        # combine, a third of the time a line took to draw.
        offset = event.get_content_offset(self)
        if offset is None:
            return None
        line = offset.y + round(self.scroll_y)
        return line if 0 <= line <= self.last_line else None

    def _gutter(self, line_no: int, styles: dict[str, Style]) -> Segment:
        if self.has_focus and line_no == self.cursor_line:
            return Segment(FOCUS_MARK, styles["base"] + styles["tree--focus-mark"])
        return Segment(" " * GUTTER, styles["base"])

    def _on_icon(self, line: int, event: events.MouseEvent) -> bool:
        """True when the mouse is on the ▶/▼ of ``line`` (it follows a guide per level)."""
        offset = event.get_content_offset(self)
        start = GUTTER + len(self.outline.lasts[line]) * self.guide_depth
        return offset is not None and start <= offset.x + round(self.scroll_x) < start + cell_len(self.ICON_NODE)

    def on_leave(self, _: events.Leave) -> None:
        self.hover_line = -1

    # -- drawing --------------------------------------------------------------

    def _paint_styles(self) -> dict[str, Style]:
        # Textual's Tree takes these parts of the styles, partial or whole; rich_style walks every
        # ancestor's CSS, and per line it was most of a repaint's cost.
        styles = {name: self.get_component_rich_style(name, partial=True) for name in self.COMPONENT_CLASSES}
        styles["highlight-line"] = self.get_component_rich_style("tree--highlight-line")
        styles["cursor"] = self.get_component_rich_style("tree--cursor")
        styles["base"] = self.rich_style
        return styles

    def render_lines(self, crop: Region) -> list[Strip]:
        """Draw the lines in ``crop``, working out the styles and the cursor's and mouse's branches once."""
        if self._styles is None:  # until the styles change (the focus, the theme)
            self._styles = self._paint_styles()
        bottom = round(self.scroll_y) + crop.bottom
        self._painting = (self._branch(self.hover_line, bottom), self._branch(self.cursor_line, bottom))
        try:
            return super().render_lines(crop)
        finally:
            self._painting = None

    def _branch(self, line: int, stop: int) -> tuple[int, int, int]:
        """First and last line of the branch on ``line`` (looked for as far as ``stop``), and its depth."""
        if not 0 <= line <= self.last_line:
            return (-1, -2, -1)
        return line, self.outline.subtree_end(line, stop), len(self.outline.lasts[line])

    def render_line(self, y: int) -> Strip:
        """One line of the tree, drawn as Textual's Tree draws it: guides, then the label with its icon."""
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width - GUTTER
        line_no = y + scroll_y
        styles = self._styles = self._styles or self._paint_styles()
        if line_no > self.last_line:
            return Strip.blank(width + GUTTER, styles["base"])
        entry, lasts = self.outline.entries[line_no], self.outline.lasts[line_no]
        hover, cursor = self._painting or (
            self._branch(self.hover_line, line_no),
            self._branch(self.cursor_line, line_no),
        )
        hovered = hover[0] <= line_no <= hover[1]
        selected = self.has_focus and cursor[0] <= line_no <= cursor[1]
        # A line is drawn again only when what it shows changed: a key that moves the cursor redraws two,
        # and a tree scrolled by a line draws one (a line's strip does not depend on where it is).
        key: tuple[object, ...] = (entry, lasts, width, self.has_focus, line_no == self.cursor_line)
        key += (line_no == self.hover_line, hovered and hover[2], selected and cursor[2])
        strip = self._drawn.get(key)
        if strip is None:
            if len(self._drawn) > 8 * max(self.size.height, 1):
                self._drawn.clear()
            strip = self._drawn[key] = self._draw(line_no, entry, lasts, hover, cursor, hovered, selected, styles)
        return Strip([self._gutter(line_no, styles), *strip.crop(scroll_x, scroll_x + width)])

    def _draw(
        self,
        line_no: int,
        entry: Entry,
        lasts: tuple[bool, ...],
        hover: tuple[int, int, int],
        cursor: tuple[int, int, int],
        hovered: bool,
        selected: bool,
        styles: dict[str, Style],
    ) -> Strip:
        line_style = styles["highlight-line"] if hovered else styles["base"]
        # Segments made directly, styled as Textual's Tree styles the Text it renders (line style, then the
        # piece's, then the label's): rendering a Text took most of the time of drawing a line.
        segments = []
        for level, last in enumerate(lasts, start=1):
            # A guide below the cursor's line takes the selected style, below the mouse's the hover style.
            style = styles["tree--guides"]
            if selected and cursor[2] < level:
                style += styles["tree--guides-selected"]
            elif hovered and hover[2] < level:
                style += styles["tree--guides-hover"]
            space, vertical, end, cross = self._guides(style)
            guide = (space if last else vertical) if level < len(lasts) else (end if last else cross)
            segments.append(Segment(guide, line_style + style))
        label_style = styles["tree--label"]
        if self.hover_line == line_no:
            label_style += styles["tree--highlight"]
        if self.cursor_line == line_no:
            label_style += styles["cursor"]
        if entry.kind != "node":
            icon = self.ICON_NODE_EXPANDED if self.is_expanded(entry.key) else self.ICON_NODE
            segments.append(Segment(icon, line_style))
        plain = line_style + label_style
        unstyled = ""  # pieces without a style of their own run together, as in a rendered Text
        for piece, component in self.label_parts(entry, len(lasts)):
            if not component:
                unstyled += piece
                continue
            if unstyled:
                segments.append(Segment(unstyled, plain))
                unstyled = ""
            if piece:
                segments.append(Segment(piece, line_style + styles[component] + label_style))
        if unstyled:
            segments.append(Segment(unstyled, plain))
        return Strip(segments).extend_cell_length(self.size.width - GUTTER, line_style)

    def _guides(self, style: Style) -> tuple[str, ...]:
        chars = _GUIDES["bold" if style.bold else "double" if style.underline2 else "default"]
        pad = max(0, self.guide_depth - 2)
        return tuple(f"{c[0]}{c[1] * pad} " for c in chars)
