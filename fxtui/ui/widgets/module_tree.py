"""The module tree: root → layer1 → layer1.0 → its FX nodes, each with its time and share.

It looks and answers the keys like Textual's ``Tree``, but keeps its lines as plain
data (:class:`~fxtui.ui.widgets.tree_lines.Outline`) and draws only those on screen:
a branch of 10,000 entries costs nothing until it is scrolled to. Labels are drawn
from the current totals when a line is rendered, so a refresh changes numbers
without touching the structure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import var
from textual.scroll_view import ScrollView
from textual.strip import Strip

from fxtui.engine.model import module_ancestors
from fxtui.engine.snapshot import GraphInfo, NodeStats
from fxtui.ui.widgets.tree_labels import TIME_FROM, Entry, bar, fit_label, op_label, short_node_name
from fxtui.ui.widgets.tree_lines import Outline

__all__ = ["Entry", "ModuleTree", "bar", "op_label", "short_node_name"]

#: Marks the expand icon: a click on text with this meta toggles the branch.
TOGGLE_STYLE = Style.from_meta({"toggle": True})
#: Guide characters (space, vertical, end, cross) as Textual's Tree draws them, by the guides' style.
_GUIDES = {"default": ("  ", "│ ", "└─", "├─"), "bold": ("  ", "┃ ", "┗━", "┣━"), "double": ("  ", "║ ", "╚═", "╠═")}
_STYLES = ("tree--label", "tree--highlight", "tree--highlight-line", "tree--guides", "tree--guides-hover")


class ModuleTree(ScrollView, can_focus=True):
    """Modules with their inclusive time, share of the run and a bar; FX nodes as leaves.

    Posts :class:`NodeChosen` when the cursor lands on a node and :class:`ModuleChosen` on Enter on a module.
    """

    ICON_NODE = "▶ "
    ICON_NODE_EXPANDED = "▼ "

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        *_STYLES,
        "tree--cursor",
        "tree--guides-selected",
        "module-tree--time",
        "module-tree--bar",
        "module-tree--dim",
        "module-tree--leaf-fallback",
        "module-tree--error",
    }

    # Textual's Tree styles, so the tree reads as before; then the labels' own.
    DEFAULT_CSS = """
    ModuleTree {
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
    ModuleTree > .module-tree--time { color: $text-muted; }
    ModuleTree > .module-tree--bar { color: $primary; }
    ModuleTree > .module-tree--dim { color: $text-muted; }
    ModuleTree > .module-tree--leaf-fallback { color: $warning; text-style: bold; }
    ModuleTree > .module-tree--error { color: $error; text-style: bold; }
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
        # Space pauses the session everywhere.
        Binding("space", "screen.toggle_pause", "Pause/resume", show=False),
    ]

    @dataclass
    class NodeChosen(Message):
        """The cursor moved onto the FX node ``name``, or Enter was pressed on it."""

        name: str

    @dataclass
    class ModuleChosen(Message):
        """Enter on module ``path``: its branch is open now."""

        path: str

    guide_depth: var[int] = var(3)
    """Cells a level indents (two on a narrow tree)."""
    hover_line: var[int] = var(-1)
    """The line under the mouse (-1: none)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.outline = Outline()
        self.cursor_line = 0
        """The cursor's line (it starts on the root, as Textual's Tree's does)."""
        self._auto_expanded: set[str] = set()
        """Branches opened by reveal() rather than by the user."""
        self.totals: Mapping[str, float] = {}
        self.backward: Mapping[str, float] = {}
        """A training step's inclusive backward time per module (part of ``totals``)."""
        self.stats: Mapping[str, NodeStats] = {}
        self.run_s: float = 0.0
        self.error_node: str | None = None
        self._drawn: dict[tuple[object, ...], Strip] = {}
        """Lines drawn since the numbers, the structure or the styles last changed, by what they show."""
        self._styles: dict[str, Style] | None = None
        self._painting: tuple[tuple[int, int, int], tuple[int, int, int]] | None = None

    # -- structure ----------------------------------------------------------

    def show(self, graph: GraphInfo, visible_modules: set[str], visible_nodes: set[str]) -> None:
        """(Re)build the tree for ``graph`` keeping only visible branches; expanded entries stay expanded."""
        cursor = self.cursor_entry
        expanded = self.outline.expanded
        self.outline = Outline(graph, visible_modules, visible_nodes)
        self.outline.open_all(expanded)
        self._auto_expanded &= self.outline.expanded
        self._lines_changed()
        if cursor is not None and not self.reveal(cursor):
            self.cursor_line = min(self.cursor_line, self.last_line)

    def folded_node(self, path: str) -> str | None:
        """The node module ``path`` is shown as (see :meth:`Outline.folded_node`)."""
        return self.outline.folded_node(path)

    def display_parent(self, name: str) -> str:
        """The module whose branch lists node ``name``."""
        return self.outline.display_parent(name)

    def children_of(self, path: str) -> list[Entry]:
        """What the tree lists under module ``path``, in graph order (folded modules as their node)."""
        return self.outline.children(path)

    @property
    def last_line(self) -> int:
        """The number of the last line."""
        return len(self.outline.lines) - 1

    def entry_at(self, line: int) -> Entry | None:
        """What line ``line`` shows."""
        return self.outline.lines[line][0] if 0 <= line < len(self.outline.lines) else None

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

    def _lines_changed(self) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width, len(self.outline.lines))
        self.redraw()

    def redraw(self) -> None:
        """Draw every line again (the numbers, the structure or the styles changed)."""
        self._drawn.clear()
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._drawn.clear()
        self._styles = None

    def _expand(self, path: str) -> None:
        at, added = self.outline.expand(path)
        if added and self.cursor_line > at:
            self.cursor_line += added
        self._lines_changed()

    def _collapse(self, path: str) -> None:
        at, removed = self.outline.collapse(path)
        if removed and self.cursor_line > at:
            # A cursor inside the closed branch lands on the branch.
            self.cursor_line = at if self.cursor_line <= at + removed else self.cursor_line - removed
        self._lines_changed()

    def open(self, path: str) -> None:
        """Expand module ``path`` for the user: it stays open when the cursor moves on."""
        self._auto_expanded.discard(path)
        self._expand(path)

    def on_resize(self, event: events.Resize) -> None:
        """On a narrow tree the guides take two cells a level instead of three, leaving room for names."""
        self.guide_depth = 2 if event.size.width < TIME_FROM else 3
        self._lines_changed()

    def watch_guide_depth(self) -> None:
        self.redraw()

    def watch_hover_line(self) -> None:
        self.refresh()

    # -- cursor -------------------------------------------------------------

    def move_cursor(self, line: int) -> None:
        """Put the cursor on ``line`` (clamped) and scroll it into view; landing on another node posts NodeChosen."""
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
        if line != before and entry is not None and entry.kind == "node":
            self.post_message(self.NodeChosen(entry.key))

    def _open_branch(self, line: int) -> bool:
        entry = self.entry_at(line)
        return entry is not None and entry.kind == "module" and self.is_expanded(entry.key)

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
        """Enter: a module's branch opens and the table shows it; a node is selected."""
        entry = self.cursor_entry
        if entry is not None and entry.kind == "module":
            self.open(entry.key)
            self.post_message(self.ModuleChosen(entry.key))
        elif entry is not None:
            self.post_message(self.NodeChosen(entry.key))

    def action_expand_cursor(self) -> None:
        """Open the module under the cursor."""
        entry = self.cursor_entry
        if entry is not None and entry.kind == "module":
            self.open(entry.key)

    def action_collapse_cursor(self) -> None:
        """Close the module under the cursor, or go to its parent."""
        entry = self.cursor_entry
        if entry is not None and entry.kind == "module" and entry.key and self.is_expanded(entry.key):
            self._collapse(entry.key)
        else:
            self.action_cursor_parent()

    def on_click(self, event: events.Click) -> None:
        """A click on ▶/▼ opens or closes that branch (a cursor inside moves onto it); on a line, selects it."""
        meta = event.style.meta
        line = meta.get("line")
        if not isinstance(line, int) or (entry := self.entry_at(line)) is None:
            return
        if meta.get("toggle") and entry.kind == "module":
            if self.is_expanded(entry.key) and entry.key:
                self._collapse(entry.key)
            else:
                self.open(entry.key)
            return
        self.move_cursor(line)
        self.action_select_cursor()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        line = event.style.meta.get("line") if event.style.meta else None
        self.hover_line = line if isinstance(line, int) else -1

    def on_leave(self, _: events.Leave) -> None:
        self.hover_line = -1

    def reveal(self, entry: Entry) -> bool:
        """Open the branches down to ``entry`` and put the cursor on it; False when it is filtered out.

        Branches opened only to reveal an earlier entry close again, so following the
        table's cursor through a large graph does not leave the whole tree open.
        """
        outline = self.outline
        if outline.graph is None:
            return False
        if entry.kind == "module" and (folded := outline.folded_node(entry.key)) is not None:
            entry = Entry("node", folded)
        if entry.kind == "module":
            chain = module_ancestors(entry.key)[:-1]
        elif entry.key in outline.nodes:
            chain = module_ancestors(outline.display_parent(entry.key))
        else:
            return False
        if any(path not in outline.modules for path in chain):
            return False
        for path in chain:
            if not self.is_expanded(path):
                self._auto_expanded.add(path)
                self._expand(path)
        for path in sorted(self._auto_expanded - set(chain), key=lambda p: -p.count(".")):
            self._collapse(path)
        self._auto_expanded &= set(chain)
        line = self.line_of(entry)
        if line is None:
            return False
        self.move_cursor(line)
        return True

    # -- numbers ------------------------------------------------------------

    def update_numbers(
        self,
        totals: Mapping[str, float],
        stats: Mapping[str, NodeStats],
        run_s: float,
        backward: Mapping[str, float] | None = None,
    ) -> None:
        """New inclusive module times and node statistics; the lines on screen redraw, structure stays.

        ``backward`` (a training step's) is each module's inclusive backward time, part of its total.
        """
        self.totals = totals
        self.backward = backward or {}
        self.stats = stats
        self.run_s = run_s
        self.redraw()

    def label_text(self, entry: Entry) -> str:
        """The plain text of an entry's label (what a user reads)."""
        line = self.line_of(entry)
        depth = len(self.outline.lines[line][1]) if line is not None else 0
        return "".join(text for text, _ in self._parts(entry, depth))

    def _parts(self, entry: Entry, depth: int) -> list[tuple[str, str]]:
        """The label as (text, component class) pieces, fitted to the tree's width.

        Numbers sit at the right edge so they line up at every depth; on a narrow
        tree the class name and then the bar give way before the time and share do.
        """
        graph = self.outline.graph
        if graph is None:
            return [("model", "")]
        if entry.kind == "module":
            info = graph.modules[entry.key]
            name = graph.model if entry.key == "" else entry.key.rpartition(".")[2]
            seconds = self.totals.get(entry.key)
            backward = self.backward.get(entry.key, 0.0)
            kind = info.class_name
            flag = (" [leaf]", "module-tree--leaf-fallback") if info.leaf_fallback else None
        else:
            node_info = graph.node(entry.key)
            module = node_info.module_path
            folded = bool(module) and self.outline.folded_node(module) == entry.key
            name = module.rpartition(".")[2] if folded else short_node_name(entry.key, module)
            stats = self.stats.get(entry.key)
            seconds = stats.median_s if stats is not None else None
            backward = (seconds or 0.0) if node_info.phase == "backward" else 0.0
            kind = op_label(node_info.op, node_info.type_name)
            flag = None
            if folded and graph.modules[module].leaf_fallback:
                flag = (" [leaf]", "module-tree--leaf-fallback")
            if entry.key == self.error_node:
                flag = (" ✖", "module-tree--error")
        share = 100.0 * seconds / self.run_s if seconds is not None and self.run_s else None
        backward_share = 100.0 * backward / self.run_s if self.run_s else 0.0
        # Modules of a training step say how much of their time is backward; nodes have a phase column.
        split = entry.kind == "module" and graph.training
        width = self.scrollable_content_region.width or 80
        indent = depth * self.guide_depth + (cell_len(self.ICON_NODE) if entry.kind == "module" else 0)
        return fit_label(name, kind, flag, seconds, share, width, indent, backward_share if split else None)

    # -- drawing ------------------------------------------------------------

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
        return line, self.outline.subtree_end(line, stop), len(self.outline.lines[line][1])

    def render_line(self, y: int) -> Strip:
        """One line of the tree, drawn as Textual's Tree draws it: guides, then the label with its icon."""
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        line_no = y + scroll_y
        styles = self._styles = self._styles or self._paint_styles()
        if line_no > self.last_line:
            return Strip.blank(width, styles["base"])
        entry, lasts = self.outline.lines[line_no]
        hover, cursor = self._painting or (
            self._branch(self.hover_line, line_no),
            self._branch(self.cursor_line, line_no),
        )
        hovered = hover[0] <= line_no <= hover[1]
        selected = self.has_focus and cursor[0] <= line_no <= cursor[1]
        # A line is drawn again only when what it shows changed: a key that moves the cursor redraws two.
        key: tuple[object, ...] = (line_no, entry, width, self.has_focus, line_no == self.cursor_line)
        key += (line_no == self.hover_line, hovered and hover[2], selected and cursor[2])
        strip = self._drawn.get(key)
        if strip is None:
            if len(self._drawn) > 8 * max(self.size.height, 1):
                self._drawn.clear()
            strip = self._drawn[key] = self._draw(line_no, entry, lasts, hover, cursor, hovered, selected, styles)
        return strip.crop(scroll_x, scroll_x + width)

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
        line_style = (styles["highlight-line"] if hovered else styles["base"]) + Style(meta={"line": line_no})
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
        if entry.kind == "module":
            # The icon carries the toggle marker, so a click on ▶/▼ opens or closes the branch.
            icon = self.ICON_NODE_EXPANDED if self.is_expanded(entry.key) else self.ICON_NODE
            segments.append(Segment(icon, line_style + TOGGLE_STYLE))
        plain = line_style + label_style
        unstyled = ""  # pieces without a style of their own run together, as in a rendered Text
        for piece, component in self._parts(entry, len(lasts)):
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
        return Strip(segments).extend_cell_length(self.size.width, line_style)

    def _guides(self, style: Style) -> tuple[str, ...]:
        chars = _GUIDES["bold" if style.bold else "double" if style.underline2 else "default"]
        pad = max(0, self.guide_depth - 2)
        return tuple(f"{c[0]}{c[1] * pad} " for c in chars)
