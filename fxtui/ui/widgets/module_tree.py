"""The module tree: root → layer1 → layer1.0 → its FX nodes, each with its time and share.

Branches are populated only when first expanded, so a graph of ten thousand nodes
costs only the rows a user has opened. Labels are drawn from the current totals
when a line is rendered, so a refresh changes numbers without touching tree nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events, on
from textual.binding import Binding, BindingType
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from fxtui.engine.model import module_ancestors
from fxtui.engine.snapshot import GraphInfo, NodeStats
from fxtui.ui.textual_compat import CompatTree
from fxtui.ui.widgets.tree_labels import TIME_FROM, Entry, bar, fit_label, op_label, short_node_name

__all__ = ["Entry", "ModuleTree", "bar", "op_label", "short_node_name"]

#: Marks the expand icon: Tree toggles the branch when a click lands on text with this meta.
TOGGLE_STYLE = Style.from_meta({"toggle": True})


class ModuleTree(CompatTree[Entry]):
    """Modules with their inclusive time, share of the run and a bar; FX nodes as leaves.

    Posts :class:`NodeChosen` when the cursor lands on a node and :class:`ModuleChosen` on Enter on a module.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "module-tree--time",
        "module-tree--bar",
        "module-tree--dim",
        "module-tree--leaf-fallback",
        "module-tree--error",
    }

    DEFAULT_CSS = """
    ModuleTree > .module-tree--time { color: $text-muted; }
    ModuleTree > .module-tree--bar { color: $primary; }
    ModuleTree > .module-tree--dim { color: $text-muted; }
    ModuleTree > .module-tree--leaf-fallback { color: $warning; text-style: bold; }
    ModuleTree > .module-tree--error { color: $error; text-style: bold; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        # Space pauses the session everywhere; the tree's own toggle moves to the arrow keys.
        Binding("space", "screen.toggle_pause", "Pause/resume", show=False),
        Binding("right", "expand_cursor", "Expand", show=False),
        Binding("left", "collapse_cursor", "Collapse", show=False),
    ]

    @dataclass
    class NodeChosen(Message):
        """The cursor moved onto the FX node ``name``, or Enter was pressed on it."""

        name: str

    @dataclass
    class ModuleChosen(Message):
        """Enter on module ``path``: its branch is open now."""

        path: str

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("model", data=Entry("module", ""), id=id)
        self.auto_expand = False
        self.guide_depth = 3
        self._graph: GraphInfo | None = None
        self._visible_modules: set[str] = {""}
        self._visible_nodes: set[str] = set()
        self._module_nodes: dict[str, TreeNode[Entry]] = {}
        self._leaf_nodes: dict[str, TreeNode[Entry]] = {}
        self._populated: set[str] = set()
        self._children: dict[str, list[Entry]] = {}
        self._folded: dict[str, str | None] = {}
        self._first_index: dict[str, int] = {}
        self._auto_expanded: set[str] = set()
        """Branches opened by reveal() rather than by the user."""
        self.totals: Mapping[str, float] = {}
        self.backward: Mapping[str, float] = {}
        """A training step's inclusive backward time per module (part of ``totals``)."""
        self.stats: Mapping[str, NodeStats] = {}
        self.run_s: float = 0.0
        self.error_node: str | None = None
        self._line_style: Style | None = None
        self._label_styles: dict[str, Style] | None = None

    # -- structure ----------------------------------------------------------

    def show(self, graph: GraphInfo, visible_modules: set[str], visible_nodes: set[str]) -> None:
        """(Re)build the tree for ``graph`` keeping only visible branches; expanded entries stay expanded."""
        expanded = {path for path, node in self._module_nodes.items() if node.is_expanded} or {""}
        auto_expanded = self._auto_expanded & expanded
        cursor = self.cursor_node.data if self.cursor_node is not None else None
        self._graph = graph
        self._visible_modules = visible_modules
        self._visible_nodes = visible_nodes
        self._children = {}
        self._folded = {}
        self._first_index = {}
        for node_info in graph.nodes:
            if node_info.name in visible_nodes:
                for path in module_ancestors(node_info.module_path):
                    self._first_index.setdefault(path, node_info.index)
        self.clear()
        self.root.data = Entry("module", "")
        self.root.set_label(graph.model)
        self._module_nodes = {"": self.root}
        self._leaf_nodes = {}
        self._populated = set()
        self._auto_expanded = set()
        self._populate(self.root)
        self.root.expand()
        for path in sorted(expanded, key=lambda p: p.count(".") if p else -1):
            node = self._module_nodes.get(path)
            if node is not None:
                self._populate(node)
                node.expand()
        self._auto_expanded = auto_expanded & set(self._module_nodes)
        if cursor is not None:
            self.reveal(cursor)

    def folded_node(self, path: str) -> str | None:
        """The node a module is shown as, when it holds just one visible node and no submodules.

        Tracing gives every called submodule (``layer1.0.conv1``) a module entry holding
        one ``call_module`` node; listing the module and then its only node would nest
        every leaf twice, so such a module is shown as its node.
        """
        if path in self._folded:
            return self._folded[path]
        folded = None
        if path and self._graph is not None:
            info = self._graph.modules[path]
            if not any(c in self._visible_modules for c in info.children):
                names = [n for n in info.nodes if n in self._visible_nodes]
                folded = names[0] if len(names) == 1 else None
        self._folded[path] = folded
        return folded

    def display_parent(self, name: str) -> str:
        """The module whose branch lists node ``name``."""
        assert self._graph is not None
        path = self._graph.node(name).module_path
        return path.rpartition(".")[0] if self.folded_node(path) == name else path

    def children_of(self, path: str) -> list[Entry]:
        """What the tree lists under module ``path``, in graph order (folded modules as their node)."""
        cached = self._children.get(path)
        if cached is not None:
            return cached
        assert self._graph is not None
        info = self._graph.modules[path]
        items: list[tuple[int, Entry]] = []
        for child in info.children:
            if child not in self._visible_modules:
                continue
            folded = self.folded_node(child)
            if folded is not None:
                items.append((self._graph.node(folded).index, Entry("node", folded)))
            else:
                items.append((self._first_index.get(child, 0), Entry("module", child)))
        items += [(self._graph.node(n).index, Entry("node", n)) for n in info.nodes if n in self._visible_nodes]
        items.sort(key=lambda item: item[0])
        entries = [entry for _, entry in items]
        self._children[path] = entries
        return entries

    def _populate(self, node: TreeNode[Entry]) -> None:
        assert self._graph is not None and node.data is not None
        path = node.data.key
        if path in self._populated:
            return
        self._populated.add(path)
        for entry in self.children_of(path):
            if entry.kind == "module":
                self._module_nodes[entry.key] = node.add(entry.key.rpartition(".")[2], data=entry)
            else:
                self._leaf_nodes[entry.key] = node.add_leaf(entry.key, data=entry)

    def on_resize(self, event: events.Resize) -> None:
        """On a narrow tree the guides take two cells a level instead of three, leaving room for names."""
        self.guide_depth = 2 if event.size.width < TIME_FROM else 3

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[Entry]) -> None:
        """Fill a branch the first time it opens."""
        self._populate(event.node)

    @on(Tree.NodeHighlighted)
    def _highlighted(self, message: Tree.NodeHighlighted[Entry]) -> None:
        entry = message.node.data
        if entry is not None and entry.kind == "node":
            self.post_message(self.NodeChosen(entry.key))

    @on(Tree.NodeSelected)
    def _selected(self, message: Tree.NodeSelected[Entry]) -> None:
        entry = message.node.data
        if entry is not None and entry.kind == "module":
            self.open(message.node)
            self.post_message(self.ModuleChosen(entry.key))
        elif entry is not None:
            self.post_message(self.NodeChosen(entry.key))

    def open(self, node: TreeNode[Entry]) -> None:
        """Expand ``node`` for the user: it stays open when the cursor moves on."""
        self._populate(node)
        if node.data is not None:
            self._auto_expanded.discard(node.data.key)
        if not node.is_expanded:
            node.expand()

    def collapse_branch(self, node: TreeNode[Entry]) -> None:
        """Close ``node``; a cursor inside it moves onto it first.

        Left inside, the cursor would sit on a hidden line: the tree re-lays out keeping
        that line's old number, and the cursor lands on whatever line now has it.
        """
        cursor = self.cursor_node
        parent = cursor.parent if cursor is not None else None
        while parent is not None and parent is not node:
            parent = parent.parent
        if cursor is not None and parent is node:
            self.move_cursor(node)
        node.collapse()

    def toggle_clicked(self, node: TreeNode[Entry]) -> None:
        """A click on a branch's ▼ closes it the safe way (see :meth:`collapse_branch`)."""
        if node.allow_expand and node.is_expanded:
            self.collapse_branch(node)
        else:
            super().toggle_clicked(node)

    def action_expand_cursor(self) -> None:
        """Open the module under the cursor."""
        node = self.cursor_node
        if node is not None and node.allow_expand:
            self.open(node)

    def action_collapse_cursor(self) -> None:
        """Close the module under the cursor, or go to its parent."""
        node = self.cursor_node
        if node is None:
            return
        if node.allow_expand and node.is_expanded:
            node.collapse()
        elif node.parent is not None:
            self.move_cursor(node.parent)

    def reveal(self, entry: Entry) -> bool:
        """Open the branches down to ``entry`` and put the cursor on it; False when it is filtered out.

        Branches opened only to reveal an earlier entry close again, so following the
        table's cursor through a large graph does not leave the whole tree open.
        """
        if self._graph is None:
            return False
        if entry.kind == "module" and self.folded_node(entry.key) is not None:
            entry = Entry("node", self.folded_node(entry.key) or "")
        if entry.kind == "module":
            chain = module_ancestors(entry.key)[:-1]
        else:
            chain = module_ancestors(self.display_parent(entry.key))
        stale = sorted(self._auto_expanded - set(chain), key=lambda p: -p.count("."))
        for ancestor in chain:
            node = self._module_nodes.get(ancestor)
            if node is None:
                return False
            self._populate(node)
            if not node.is_expanded:  # expand() re-lays out the whole tree even when already open
                self._auto_expanded.add(ancestor)
                node.expand()
        target = self._module_nodes.get(entry.key) if entry.kind == "module" else self._leaf_nodes.get(entry.key)
        if target is None:
            return False
        if self.cursor_node is not target:
            _ = self.last_line  # lay out the lines just expanded, so the target knows its line
            self.move_cursor(target)
        # Close the branches opened for an earlier entry only now that the cursor has left them.
        # Closed first, they hid the cursor's node: the tree re-laid out with the cursor at that
        # node's old line number, past the shorter tree's end, so it landed on the last line
        # (fc), highlighted it, and the screen followed it to the root.
        for path in stale:
            node = self._module_nodes.get(path)
            if node is not None and node.is_expanded:
                node.collapse()
        self._auto_expanded -= set(stale)
        return True

    # -- numbers ------------------------------------------------------------

    def update_numbers(
        self,
        totals: Mapping[str, float],
        stats: Mapping[str, NodeStats],
        run_s: float,
        backward: Mapping[str, float] | None = None,
    ) -> None:
        """New inclusive module times and node statistics; labels redraw, structure stays.

        ``backward`` (a training step's) is each module's inclusive backward time, part of its total.
        """
        self.totals = totals
        self.backward = backward or {}
        self.stats = stats
        self.run_s = run_s
        # Labels are computed in render_label; invalidating the lines makes each render once,
        # instead of calling set_label (a callback each) per node. The lines of earlier numbers
        # are dropped, not kept: they filled the cache's 1,024 entries with dead lines, each
        # holding crop and style caches of its own, and the app grew by about 6 MB a minute.
        self.invalidate_lines()
        self.refresh()

    def label_text(self, entry: Entry) -> str:
        """The plain text of an entry's label (what a user reads)."""
        node = self._module_nodes.get(entry.key) if entry.kind == "module" else self._leaf_nodes.get(entry.key)
        return "".join(text for text, _ in self._parts(entry, node))

    def _depth_cells(self, node: TreeNode[Entry] | None) -> int:
        """Cells taken left of the label: guides and the expand icon."""
        if node is None:
            return 0
        depth = 0
        parent = node.parent
        while parent is not None:
            depth += 1
            parent = parent.parent
        return depth * self.guide_depth + (cell_len(self.ICON_NODE) if node.allow_expand else 0)

    def _parts(self, entry: Entry, node: TreeNode[Entry] | None) -> list[tuple[str, str]]:
        """The label as (text, component class) pieces, fitted to the tree's width.

        Numbers sit at the right edge so they line up at every depth; on a narrow
        tree the class name and then the bar give way before the time and share do.
        """
        graph = self._graph
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
            folded = bool(module) and self.folded_node(module) == entry.key
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
        return fit_label(
            name, kind, flag, seconds, share, width, self._depth_cells(node), backward_share if split else None
        )

    def _label_for(self, entry: Entry, node: TreeNode[Entry] | None = None) -> Text:
        text = Text()
        for piece, component in self._parts(entry, node):
            text.append(piece, style=self._part_style(component) if component else "")
        return text

    def render_lines(self, crop: Region) -> list[Strip]:
        """Draw the lines in ``crop``, working out the widget and label styles once, not per line."""
        # Tree.render_line asks for rich_style (a walk over every ancestor's CSS) on every line;
        # with numbers redrawn a few times a second that was most of a repaint's cost.
        self._line_style = self.rich_style
        self._label_styles = {
            name: self.get_component_rich_style(name, partial=True) for name in self.COMPONENT_CLASSES
        }
        try:
            return super().render_lines(crop)
        finally:
            self._line_style = None
            self._label_styles = None

    def render_line(self, y: int) -> Strip:
        """One line of the tree, with the style computed once per repaint."""
        style = self._line_style if self._line_style is not None else self.rich_style
        scroll_x, scroll_y = self.scroll_offset
        return self.render_tree_line(y + scroll_y, scroll_x, scroll_x + self.size.width, style)

    def _part_style(self, name: str) -> Style:
        styles = self._label_styles
        return styles[name] if styles is not None else self.get_component_rich_style(name, partial=True)

    def get_label_width(self, node: TreeNode[Entry]) -> int:
        """Cells a label takes, without drawing it (the tree asks for every line on each layout)."""
        if node.data is None or self._graph is None:
            return super().get_label_width(node)
        icon = cell_len(self.ICON_NODE) if node.allow_expand else 0
        return icon + sum(cell_len(text) for text, _ in self._parts(node.data, node))

    def render_label(self, node: TreeNode[Entry], base_style: Style, style: Style) -> Text:
        """The label with current numbers, behind the expand/collapse icon."""
        label = self._label_for(node.data, node) if node.data is not None else Text(str(node.label))
        label.stylize(style)
        prefix = (self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE) if node.allow_expand else ""
        # The icon carries the toggle marker, so a click on ▶/▼ opens or closes the branch.
        return Text.assemble((prefix, base_style + TOGGLE_STYLE), label)
