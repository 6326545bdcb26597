"""What the module tree lists, and which of it is open, as a flat list of lines: pure data, no widget.

A graph of 50,000 nodes can put thousands of entries under one module (an
``nn.Sequential`` of 10,000 layers puts 10,000 under the root). Textual's ``Tree``
keeps an object per entry and walks every open entry whenever anything opens,
closes, takes the focus or changes size: half a second at 50,000. Here the lines are
two lists (the entries, and how each is drawn), a branch that opens or closes splices
its lines in or out, and the widget draws only the lines on screen.

The lists hold objects made once per graph (the entries, and one tuple of guide flags
per branch), not a new tuple per line: each filter lays out tens of thousands of lines,
and as many new objects made the garbage collector run dozens of times per filter and
walk the lines kept for the last filters (20–50 ms a filter at 50,000 nodes).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from fxtui.core.snapshot import GraphInfo
from fxtui.ui.widgets.tree_labels import Entry

ROOT = Entry("module", "")

#: The last part of a group's key: no module path can have it (a module's name is a Python identifier).
SMALL = "·small"
#: A module's direct op leaves are folded into one line only when at least this many are small.
MIN_GROUP = 4


def group_key(path: str) -> str:
    """The key of the line that folds module ``path``'s small direct ops (an :class:`Entry` of kind ``group``)."""
    return f"{path}.{SMALL}" if path else SMALL


def group_module(key: str) -> str | None:
    """The module whose small ops group ``key`` folds; None when ``key`` is not a group's."""
    if key == SMALL:
        return ""
    return key[: -len(SMALL) - 1] if key.endswith("." + SMALL) else None


def fused_index(graph: GraphInfo, path: str) -> int:
    """Where a module holding no node is listed among its siblings: at the first kernel holding its work (a
    compiled model's module fused whole into an ancestor's kernel; resnet18's ``maxpool`` after ``conv1``)."""
    by_name = graph.by_name
    return min((by_name[n].index for n in graph.modules[path].fused if n in by_name), default=0)


class Outline:
    """The modules and nodes of ``graph`` that a filter lets through, and the lines of the open branches.

    A module's direct op leaves named in ``small`` (ops that take little time) are folded into one
    line of kind ``group`` when there are at least :data:`MIN_GROUP` of them: it opens like a branch
    and lists them. Siblings are in graph order, or sorted by ``order`` (a sort key per entry).
    """

    def __init__(
        self,
        graph: GraphInfo | None = None,
        modules: Iterable[str] = ("",),
        nodes: Iterable[str] = (),
        *,
        small: AbstractSet[str] = frozenset(),
        order: Callable[[Entry], float] | None = None,
    ) -> None:
        self.graph = graph
        self.small = small
        """Nodes that take little time: folded when a module lists enough of them directly."""
        self.order = order
        """Sort key of sibling entries (None: graph order)."""
        self._groups: dict[str, list[Entry]] = {}
        """Module path → the small direct ops its group line folds."""
        self._grouped: dict[str, str] = {}
        """Node name → the key of the group line that lists it."""
        self.modules = modules if isinstance(modules, AbstractSet) and "" in modules else {*modules, ""}
        """Module paths holding a visible node in their subtree."""
        self.nodes = nodes if isinstance(nodes, AbstractSet) else set(nodes)
        """Names of the visible nodes."""
        self.expanded: set[str] = set()
        """Module paths whose branch is open (the root's always is)."""
        self.entries: list[Entry] = [ROOT]
        """What each line shows."""
        self.lasts: list[tuple[bool, ...]] = [()]
        """For each line, whether each of its ancestors below the root (its entry last) ends its branch."""
        self._children: dict[str, list[Entry]] = {}
        self._folded: dict[str, str | None] = {}
        self._first_index: dict[str, int] = {}
        self._line_index: dict[Entry, int] | None = None

    # -- what is listed -----------------------------------------------------

    def folded_node(self, path: str) -> str | None:
        """The node a module is shown as, when it holds just one visible node and no submodules.

        Tracing gives every called submodule (``layer1.0.conv1``) a module entry holding
        one ``call_module`` node; listing the module and then its only node would nest
        every leaf twice, so such a module is shown as its node.
        """
        if path in self._folded:
            return self._folded[path]
        folded = None
        if path and self.graph is not None:
            info = self.graph.modules[path]
            if not any(c in self.modules for c in info.children):
                names = [n for n in info.nodes if n in self.nodes]
                folded = names[0] if len(names) == 1 else None
        self._folded[path] = folded
        return folded

    def first_index(self, path: str) -> int:
        """The graph index of the first visible node in module ``path``'s subtree (where the tree lists it)."""
        first = self._first_index.get(path)
        if first is None:
            assert self.graph is not None
            info, by_name, nodes = self.graph.modules[path], self.graph.by_name, self.nodes
            # A module's own nodes are in graph order: the first visible one is the earliest of them.
            own = next((by_name[n].index for n in info.nodes if n in nodes), None)
            firsts = [self.first_index(c) for c in info.children if c in self.modules]
            firsts = firsts if own is None else [own, *firsts]
            first = self._first_index[path] = min(firsts) if firsts else fused_index(self.graph, path)
        return first

    def display_parent(self, name: str) -> str:
        """The module whose branch lists node ``name`` (for a node in a group of small ops, the group's module)."""
        assert self.graph is not None
        path = self.graph.node(name).module_path
        return path.rpartition(".")[0] if self.folded_node(path) == name else path

    def group_of(self, name: str) -> str | None:
        """The key of the group line that lists node ``name``; None when it is listed on its own."""
        self.children(self.display_parent(name))
        return self._grouped.get(name)

    def group_members(self, key: str) -> list[Entry]:
        """The small ops group ``key`` folds (empty when there is no such group)."""
        module = group_module(key)
        if module is None:
            return []
        if module not in self._groups:  # (while its module's children are sorted, the group is made already)
            self.children(module)
        return self._groups.get(module, [])

    def is_branch(self, entry: Entry) -> bool:
        """True for a line that opens: a module, or a group of small ops."""
        return entry.kind != "node"

    def children(self, path: str) -> list[Entry]:
        """What the tree lists under module ``path`` (folded modules as their node, small ops as a group),
        or under group ``path`` (its small ops); in graph order or by :attr:`order`."""
        cached = self._children.get(path)
        if cached is not None:
            return cached
        if self.graph is None:
            return []
        if group_module(path) is not None:
            return self.group_members(path)
        listing = _Listing.of_graph(self.graph).of(path)
        # Which entries the filter keeps, tested in C: the root of a 50,000-layer nn.Sequential lists 50,000.
        if not listing.has_branches:  # nodes only: each is kept when its node is
            shown = list(itertools.compress(listing.items, map(self.nodes.__contains__, listing.keys)))
        else:
            shown = list(
                itertools.compress(
                    listing.items,
                    map(
                        operator.or_,
                        map(operator.and_, map(self.nodes.__contains__, listing.keys), listing.is_node),
                        map(operator.and_, map(self.modules.__contains__, listing.keys), listing.is_module),
                    ),
                )
            )
        if not listing.has_branches or not any(kind == _BRANCH for _, _, kind in shown):
            entries = list(map(operator.itemgetter(1), shown))
        else:
            entries = self._with_branches(shown)
        if self.small:
            entries = self._fold_small(path, entries)
        if self.order is not None:
            entries.sort(key=self.order)
        self._children[path] = entries
        return entries

    def _fold_small(self, path: str, entries: list[Entry]) -> list[Entry]:
        """``entries`` with module ``path``'s small direct ops as one group line, where its first one was."""
        assert self.graph is not None
        small, by_name = self.small, self.graph.by_name
        members = [e for e in entries if e.kind == "node" and e.key in small and by_name[e.key].module_path == path]
        if len(members) < MIN_GROUP:
            return entries
        key = group_key(path)
        self._groups[path] = sorted(members, key=self.order) if self.order is not None else members
        self._grouped.update(dict.fromkeys((e.key for e in members), key))
        folded = set(members)
        first = next(i for i, e in enumerate(entries) if e in folded)
        return [*entries[:first], Entry("group", key), *(e for e in entries[first:] if e not in folded)]

    def _with_branches(self, shown: list[tuple[int, Entry, int]]) -> list[Entry]:
        """The entries of ``shown`` with each submodule holding more than one node as a branch or its one node."""
        assert self.graph is not None
        items: list[tuple[int, Entry]] = []
        resort = False
        for index, entry, kind in shown:
            if kind != _BRANCH:
                items.append((index, entry))
            elif (folded := self.folded_node(entry.key)) is not None:
                items.append((self.graph.by_name[folded].index, Entry("node", folded)))
                resort = True
            else:
                first = self.first_index(entry.key)
                items.append((first, entry))
                resort = resort or first != index
        if resort:  # the filter hid the first node of a module listed here: its place may change
            items.sort(key=lambda item: item[0])
        return [entry for _, entry in items]

    # -- which lines are shown ----------------------------------------------

    def open_all(self, paths: Iterable[str]) -> None:
        """Open the branches ``paths`` (module paths, group keys; the root always) and lay out every line anew."""
        modules = self.modules
        self.expanded = {p for p in paths if p in modules or group_module(p) in modules} | {""}
        self.entries, self.lasts = [ROOT], [()]
        self._subtree("", (), self.entries, self.lasts)
        self._line_index = None

    def _subtree(self, path: str, flags: tuple[bool, ...], entries: list[Entry], lasts: list[tuple[bool, ...]]) -> None:
        children = self.children(path)
        middle, last = (*flags, False), (*flags, True)
        end = len(children) - 1
        if children and not any(p.rpartition(".")[0] == path for p in self.expanded if p):
            # No branch open under this one (the root of a 50,000-layer Sequential): its lines in one go.
            entries += children
            lasts += itertools.repeat(middle, end)
            lasts.append(last)
            return
        for i, entry in enumerate(children):
            own = last if i == end else middle
            entries.append(entry)
            lasts.append(own)
            if entry.kind != "node" and entry.key in self.expanded:
                self._subtree(entry.key, own, entries, lasts)

    def is_expanded(self, path: str) -> bool:
        """True when the branch of module ``path`` is open."""
        return path in self.expanded

    def expand(self, path: str) -> tuple[int, int]:
        """Open the branch of module (or group) ``path``: (its line, lines added); (-1, 0) when it is not on a line."""
        group = group_module(path) is not None
        if path in self.expanded or (not group and path not in self.modules):
            return -1, 0
        self.expanded.add(path)
        at = self.line_of(Entry("group" if group else "module", path))
        if at is None:
            return -1, 0
        entries: list[Entry] = []
        lasts: list[tuple[bool, ...]] = []
        self._subtree(path, self.lasts[at], entries, lasts)
        self.entries[at + 1 : at + 1] = entries
        self.lasts[at + 1 : at + 1] = lasts
        self._line_index = None
        return at, len(entries)

    def collapse(self, path: str) -> tuple[int, int]:
        """Close the branch of module ``path``: (its line, lines removed)."""
        if path not in self.expanded or not path:
            return -1, 0
        self.expanded.discard(path)
        at = self.line_of(Entry("group" if group_module(path) is not None else "module", path))
        if at is None:
            return -1, 0
        end = self.subtree_end(at)
        del self.entries[at + 1 : end + 1]
        del self.lasts[at + 1 : end + 1]
        self._line_index = None
        return at, end - at

    def subtree_end(self, line: int, stop: int | None = None) -> int:
        """The last line of the branch on ``line`` (the line itself when closed); the scan ends at ``stop``."""
        lasts = self.lasts
        depth = len(lasts[line])
        if depth == 0:
            return len(lasts) - 1
        last = min(len(lasts), stop + 1 if stop is not None else len(lasts))
        end = line + 1
        while end < last and len(lasts[end]) > depth:
            end += 1
        return end - 1

    def parent_line(self, line: int) -> int | None:
        """The line of the branch that lists ``line``; None for the root."""
        depth = len(self.lasts[line])
        while line > 0:
            line -= 1
            if len(self.lasts[line]) < depth:
                return line
        return None

    def line_of(self, entry: Entry) -> int | None:
        """The line showing ``entry``, or None when no line shows it."""
        if self._line_index is None:
            self._line_index = dict(zip(self.entries, range(len(self.entries)), strict=True))
        return self._line_index.get(entry)


#: How a listed entry is shown: a node, a module holding only one node (shown as that node), a branch.
_NODE, _LEAF, _BRANCH = 0, 1, 2


@dataclass
class _Children:
    """What one module lists before any filter, in graph order."""

    items: list[tuple[int, Entry, int]]
    """(index of its first node, the entry shown, _NODE / _LEAF / _BRANCH)."""
    keys: list[str]
    """What a filter has to let through for the item to be listed: the node's name (for a module
    holding one node, that node's) or a branch's module path."""
    is_node: list[bool]
    """Whether each key is a node name (else a branch's module path)."""
    is_module: list[bool]
    has_branches: bool


class _Listing:
    """Each module's children and nodes in graph order with their entries, worked out once per graph.

    A filter only takes entries away: listing what is left is then a set lookup per entry.
    """

    _last: _Listing | None = None

    def __init__(self, graph: GraphInfo) -> None:
        self.graph = graph
        self._children: dict[str, _Children] = {}
        self._first: dict[str, int] = {}

    @classmethod
    def of_graph(cls, graph: GraphInfo) -> _Listing:
        """The listing of ``graph`` (the last graph's is kept)."""
        last = cls._last
        if last is None or last.graph is not graph:
            last = cls._last = cls(graph)
        return last

    def of(self, path: str) -> _Children:
        """What module ``path`` lists, unfiltered."""
        children = self._children.get(path)
        if children is None:
            graph = self.graph
            info, modules, by_name = graph.modules[path], graph.modules, graph.by_name
            items = [(by_name[n].index, Entry("node", n), _NODE, n) for n in info.nodes]
            for child in info.children:
                child_info = modules[child]
                if not child_info.children and len(child_info.nodes) == 1:
                    only = child_info.nodes[0]
                    items.append((self._first_index(child), Entry("node", only), _LEAF, only))
                else:
                    items.append((self._first_index(child), Entry("module", child), _BRANCH, child))
            items.sort(key=lambda item: item[0])
            is_node = [kind != _BRANCH for _, _, kind, _ in items]
            children = self._children[path] = _Children(
                [item[:3] for item in items],
                [item[3] for item in items],
                is_node,
                [not n for n in is_node],
                not all(is_node),
            )
        return children

    def _first_index(self, path: str) -> int:
        first = self._first.get(path)
        if first is None:
            info = self.graph.modules[path]
            own = [self.graph.by_name[info.nodes[0]].index] if info.nodes else []
            firsts = [*own, *(self._first_index(c) for c in info.children)]
            first = self._first[path] = min(firsts) if firsts else fused_index(self.graph, path)
        return first
