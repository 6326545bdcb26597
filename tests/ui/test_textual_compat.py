"""The Textual internals fxtui.ui.textual_compat relies on are still there, in the shape it uses.

A Textual upgrade that renames one of them would otherwise fail quietly: the module tree
would stop redrawing its numbers, or a click on ▼ would close a branch the unsafe way, or
the footer would leak again. Each check names what disappeared.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import textual
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from fxtui.ui.textual_compat import PRIVATE_NAMES, CompatTree

UPGRADE = f"Textual {textual.__version__}: see fxtui/ui/textual_compat.py"


def _parameters(function: Callable[..., object]) -> list[str]:
    return list(inspect.signature(function).parameters)


def check_line_cache() -> None:
    cache = getattr(Tree("t"), "_line_cache", None)
    assert cache is not None and callable(getattr(cache, "clear", None)), f"Tree._line_cache is gone ({UPGRADE})"


def check_updates() -> None:
    assert isinstance(getattr(Tree("t"), "_updates", None), int), f"Tree._updates is gone ({UPGRADE})"


def check_render_line() -> None:
    method = getattr(Tree, "_render_line", None)
    assert method is not None, f"Tree._render_line is gone ({UPGRADE})"
    assert _parameters(method)[1:] == ["y", "x1", "x2", "base_style"], f"Tree._render_line changed ({UPGRADE})"


def check_toggle_node() -> None:
    method = getattr(Tree, "_toggle_node", None)
    assert method is not None, f"Tree._toggle_node is gone ({UPGRADE})"
    assert _parameters(method)[1:] == ["node"], f"Tree._toggle_node changed ({UPGRADE})"
    # The override only matters while Tree's click handler goes through it.
    assert "self._toggle_node(" in inspect.getsource(Tree), f"Tree no longer toggles through _toggle_node ({UPGRADE})"


class _Counter(Widget):
    count: reactive[int] = reactive(0)


class _Follower(Widget):
    def on_mount(self) -> None:
        self.watch(self.app.query_one(_Counter), "count", lambda _value: None)


class _WatchApp(App[None]):
    def compose(self) -> ComposeResult:
        yield _Counter()
        yield _Follower()


async def check_watchers() -> None:
    app = _WatchApp()
    async with app.run_test() as pilot:
        await pilot.pause()
        watchers = getattr(app.query_one(_Counter), "__watchers", None)
        assert isinstance(watchers, dict), f"reactive watchers are no longer stored in __watchers ({UPGRADE})"
        owners = [owner for owner, _callback in watchers.get("count", [])]
        assert app.query_one(_Follower) in owners, f"__watchers no longer holds (owner, callback) pairs ({UPGRADE})"


CHECKS: dict[str, Callable[[], Awaitable[None] | None]] = {
    "_line_cache": check_line_cache,
    "_updates": check_updates,
    "_render_line": check_render_line,
    "_toggle_node": check_toggle_node,
    "__watchers": check_watchers,
}


@pytest.mark.parametrize("owner,name,why", PRIVATE_NAMES, ids=[name for _, name, _ in PRIVATE_NAMES])
async def test_every_private_name_textual_compat_uses_still_exists(owner: str, name: str, why: str) -> None:
    assert name in CHECKS, f"{owner}.{name} ({why}) is listed in textual_compat but has no check here"
    result = CHECKS[name]()
    if result is not None:
        await result


class _NumberTree(CompatTree[str]):
    """Labels read a number at render time, as the module tree's do."""

    number = 1

    def render_label(self, node: TreeNode[str], base_style: Style, style: Style) -> Text:
        return Text(f"{node.label} {self.number}")


class _TreeApp(App[None]):
    def compose(self) -> ComposeResult:
        tree = _NumberTree("root")
        tree.root.expand()
        tree.root.add_leaf("leaf")
        yield tree


async def test_invalidated_lines_redraw_with_new_numbers() -> None:
    app = _TreeApp()
    async with app.run_test(size=(40, 5)) as pilot:
        await pilot.pause()
        tree = app.query_one(_NumberTree)
        assert "leaf 1" in tree.render_line(1).text
        tree.number = 2
        assert "leaf 1" in tree.render_line(1).text  # cached: the reason invalidate_lines exists
        tree.invalidate_lines()
        assert "leaf 2" in tree.render_line(1).text


def test_the_installed_textual_is_in_the_range_pyproject_allows() -> None:
    # The bound says which Textual releases the suite has passed on; a newer major must pass first.
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    requirement = re.findall(r'^\s*"(textual[^"]*)"', pyproject, re.M)[0]
    bounds = dict(re.findall(r"(>=|<)\s*([\d.]+)", requirement))
    assert set(bounds) == {">=", "<"}, f"textual needs a lower and an upper bound in pyproject.toml: {requirement}"

    def version(text: str) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", text)[:3])

    installed = version(textual.__version__)
    assert version(bounds[">="]) <= installed < version(bounds["<"]), f"textual {textual.__version__}: {requirement}"
