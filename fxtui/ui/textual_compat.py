"""The one module that touches Textual's private names.

fxtui needs four things Textual offers no public way to do, and one workaround:

* the module tree redraws every label from new numbers without a ``set_label`` per node:
  it clears the tree's line cache and bumps the update counter the cache is keyed on
  (``Tree._line_cache``, ``Tree._updates``);
* it draws its lines with a style computed once per repaint instead of once per line
  (``Tree._render_line``);
* a click on a branch's ▼ closes the branch the way the keyboard does, moving a cursor
  inside it onto it first (``Tree._toggle_node``, the hook Tree's click handler calls);
* the footer drops the watcher entries that each recompose leaves behind
  (``DOMNode.__watchers``; Textualize/textual#6666).

Everything else in ``fxtui/ui`` uses public API only (``tests/test_layering.py`` checks
that no other module names a Textual private attribute), and
``tests/ui/test_textual_compat.py`` fails naming the attribute when a Textual upgrade
removes or reshapes one of these.
"""

from __future__ import annotations

from rich.style import Style
from textual.dom import DOMNode
from textual.strip import Strip
from textual.widgets import Tree
from textual.widgets.tree import TreeDataType, TreeNode

#: Textual's private names used here: (owner, name, what fxtui uses it for).
PRIVATE_NAMES: tuple[tuple[str, str, str], ...] = (
    ("Tree", "_line_cache", "cleared so labels redraw from new numbers"),
    ("Tree", "_updates", "bumped so cached lines miss once after new numbers"),
    ("Tree", "_render_line", "draws one line with a style computed once per repaint"),
    ("Tree", "_toggle_node", "the click-on-▼ hook, overridden to collapse safely"),
    ("DOMNode", "__watchers", "watcher entries pruned after a footer recompose (textual#6666)"),
)


class CompatTree(Tree[TreeDataType]):
    """A :class:`~textual.widgets.Tree` whose private hooks fxtui needs have public names."""

    def invalidate_lines(self) -> None:
        """Make every line render again (from ``render_label``) on the next repaint.

        Lines drawn for earlier numbers can never be shown again, so they are dropped
        rather than left to fill the cache.
        """
        self._line_cache.clear()
        self._updates += 1

    def render_tree_line(self, y: int, x1: int, x2: int, style: Style) -> Strip:
        """Tree line ``y`` (counted from the top of the tree), cells ``x1`` to ``x2``, on ``style``."""
        return self._render_line(y, x1, x2, style)

    def toggle_clicked(self, node: TreeNode[TreeDataType]) -> None:
        """A click landed on ``node``'s expand icon: Tree's own toggle unless overridden."""
        super()._toggle_node(node)

    def _toggle_node(self, node: TreeNode[TreeDataType]) -> None:
        self.toggle_clicked(node)


def drop_detached_watchers(node: DOMNode) -> None:
    """Forget watchers that ``node``'s reactives hold for widgets no longer in the DOM.

    Textual prunes a reactive's watcher list only when that reactive changes; a widget
    that recomposes children data-bound to one of its reactives otherwise keeps every
    replaced child alive (Textualize/textual#6666).
    """
    watchers: dict[str, list[tuple[object, object]]] = getattr(node, "__watchers", {})
    for entries in watchers.values():
        entries[:] = [(owner, callback) for owner, callback in entries if getattr(owner, "is_attached", True)]
