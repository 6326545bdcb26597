"""The one module that touches Textual's private names.

fxtui needs one workaround Textual offers no public way to do:

* the footer drops the watcher entries that each recompose leaves behind
  (``DOMNode.__watchers``; Textualize/textual#6666).

Everything else in ``fxtui/ui`` uses public API only (``tests/test_layering.py`` checks
that no other module names a Textual private attribute), and
``tests/ui/test_textual_compat.py`` fails naming the attribute when a Textual upgrade
removes or reshapes one of these. (The module tree used four of Tree's private names;
it is a ScrollView of its own now, see ``fxtui/ui/widgets/module_tree.py``.)
"""

from __future__ import annotations

from textual.dom import DOMNode

#: Textual's private names used here: (owner, name, what fxtui uses it for).
PRIVATE_NAMES: tuple[tuple[str, str, str], ...] = (
    ("DOMNode", "__watchers", "watcher entries pruned after a footer recompose (textual#6666)"),
)


def drop_detached_watchers(node: DOMNode) -> None:
    """Forget watchers that ``node``'s reactives hold for widgets no longer in the DOM.

    Textual prunes a reactive's watcher list only when that reactive changes; a widget
    that recomposes children data-bound to one of its reactives otherwise keeps every
    replaced child alive (Textualize/textual#6666).
    """
    watchers: dict[str, list[tuple[object, object]]] = getattr(node, "__watchers", {})
    for entries in watchers.values():
        entries[:] = [(owner, callback) for owner, callback in entries if getattr(owner, "is_attached", True)]
