"""The action registry: every key does something, the palette offers what applies, the README agrees."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import FakeSource, error_snapshot, settle
from textual.dom import DOMNode

from fxtui.ui.actions import (
    ACTIONS,
    APP,
    DIFF,
    HINTS,
    MAIN,
    PROFILER_GROUPS,
    WHAT_IFS,
    Action,
    palette_actions,
    readme_table,
)
from fxtui.ui.app import FxtuiApp
from fxtui.ui.diff_app import DiffApp
from fxtui.ui.screens.help import HelpScreen
from fxtui.ui.screens.hints import HintsScreen
from fxtui.ui.screens.main import MainScreen
from fxtui.ui.screens.what_if import WhatIfScreen

pytestmark = pytest.mark.unit

README = Path(__file__).resolve().parents[2] / "README.md"

#: Which class answers each group's keys.
HANDLERS: dict[str, type[DOMNode]] = {
    MAIN: MainScreen,
    HINTS: HintsScreen,
    WHAT_IFS: WhatIfScreen,
    APP: FxtuiApp,
    DIFF: DiffApp,
}


def readme_key_table() -> str:
    """The Markdown table right under "## The app" in README.md."""
    lines = README.read_text(encoding="utf-8").splitlines()
    start = lines.index("## The app")
    first = next(i for i in range(start, len(lines)) if lines[i].startswith("|"))
    end = next((i for i in range(first, len(lines)) if not lines[i].startswith("|")), len(lines))
    return "\n".join(lines[first:end])


def test_the_readme_key_table_is_the_registry() -> None:
    assert readme_key_table() == readme_table(), (
        "README.md's key table (under '## The app') differs from fxtui/ui/actions.py: "
        "paste the output of `python -m fxtui.ui.actions` over it"
    )


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: f"{a.group}:{a.id}")
def test_every_action_has_a_handler(action: Action) -> None:
    # A registry entry without an action_ method is a key that silently does nothing. An action
    # named "app.…" runs on the app whichever screen binds its key.
    handler = FxtuiApp if action.id.startswith("app.") else HANDLERS[action.group]
    assert hasattr(handler, f"action_{action.name}"), action


def test_every_profiler_action_says_what_it_does_in_the_readme_and_keys_are_not_shared() -> None:
    for group in PROFILER_GROUPS:
        keys: dict[str, str] = {}
        for action in (a for a in ACTIONS if a.group == group):
            assert action.readme, f"{action.id} has no README text"
            for key in action.all_keys:
                assert keys.setdefault(key, action.id) == action.id, f"{key} runs both {keys[key]} and {action.id}"


async def test_the_palette_offers_every_registered_command_once_they_all_apply() -> None:
    source = FakeSource([error_snapshot(seq=1)])
    app = FxtuiApp(source, save=lambda snapshot: "saved.json")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await pilot.press("h", "t", "a", "d", "d", "enter")  # below the root, with a type filter
        titles = {c.title for c in app.get_system_commands(app.screen)}
        # The phase filter applies to training steps only (tests/ui/test_train_view.py offers it), the
        # memory columns once the memory pass has run (tests/ui/test_memory_view.py), the program's output
        # and detaching from it, stopping it or showing another kind of step to fxtui run (tests/ui/test_run_view.py).
        assert {a.palette for a in palette_actions()} - {
            "Filter by phase",
            "Memory columns",
            "Program output",
            "Detach",
            "Stop the program",
            "Next rank",
            "Next kind of step",
        } <= titles
        app.main.set_scope("")
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert "Up a module" not in titles  # at the root it does not apply


async def test_a_palette_command_runs_its_action_with_its_parameters() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        first = app.main.selected
        await commands["Next hotspot"].callback()
        second = app.main.selected
        assert second != first
        await commands["Previous hotspot"].callback()
        assert app.main.selected == first
        await commands["Keys"].callback()
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
