"""The Textual internals fxtui.ui.textual_compat relies on are still there, in the shape it uses.

A Textual upgrade that renames one of them would otherwise fail quietly: the footer would
leak again. Each check names what disappeared.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import textual
from textual.app import App, ComposeResult
from textual.reactive import reactive
from textual.widget import Widget

from fxtui.ui.textual_compat import PRIVATE_NAMES

UPGRADE = f"Textual {textual.__version__}: see fxtui/ui/textual_compat.py"


def _parameters(function: Callable[..., object]) -> list[str]:
    return list(inspect.signature(function).parameters)


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
    "__watchers": check_watchers,
}


@pytest.mark.parametrize("owner,name,why", PRIVATE_NAMES, ids=[name for _, name, _ in PRIVATE_NAMES])
async def test_every_private_name_textual_compat_uses_still_exists(owner: str, name: str, why: str) -> None:
    assert name in CHECKS, f"{owner}.{name} ({why}) is listed in textual_compat but has no check here"
    result = CHECKS[name]()
    if result is not None:
        await result


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
