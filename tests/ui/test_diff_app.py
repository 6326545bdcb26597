"""The diff app: two runs saved in the test, compared with keys a user would press."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import DataTable, Static, TabbedContent

from fxtui.report.api import Report
from fxtui.report.diff import RunDiff, diff_files
from fxtui.ui.demo.demo_source import build_graph, make_snapshot, resnet18_rows
from fxtui.ui.diff_app import DiffApp
from fxtui.ui.screens.help import HelpScreen

pytestmark = pytest.mark.unit

SIZE = (120, 36)
#: The batch norms of layer1 are folded away in the "after" run.
FOLDED = ("layer1_0_bn1", "layer1_0_bn2", "layer1_1_bn1", "layer1_1_bn2")


def diff_rows(app: DiffApp, table_id: str) -> list[str]:
    """The row keys of table ``table_id`` (``diff-nodes``, ``diff-modules``, ``diff-only``), top to bottom."""
    table = app.query_one(f"#{table_id}", DataTable)
    return [str(row.key.value) for row in table.ordered_rows]


def save(path: Path, rows: list, medians: list[float]) -> Path:
    graph = build_graph(rows, model="resnet18", inputs=("1×3×224×224",))
    report = Report.from_snapshot(make_snapshot(graph, medians))
    path.write_text(json.dumps(report.to_dict()), encoding="utf-8")
    return path


@pytest.fixture
def diff(tmp_path: Path) -> RunDiff:
    rows = resnet18_rows()
    medians = [r[6] for r in rows]
    before = save(tmp_path / "before.json", rows, medians)
    after_rows = [r for r in rows if r[0] not in FOLDED]
    after_medians = []
    for r in after_rows:
        factor = 1.0
        if r[0] == "layer1_0_conv1":
            factor = 1.5  # the one node that got slower
        elif r[0].startswith("layer4"):
            factor = 0.8
        after_medians.append(r[6] * factor)
    after = save(tmp_path / "after.json", after_rows, after_medians)
    return diff_files(before, after)


async def test_totals_on_top_and_nodes_by_absolute_change(diff: RunDiff) -> None:
    app = DiffApp(diff)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        totals = str(app.query_one("#diff-totals", Static).render())
        assert "before   resnet18" in totals and "after    resnet18" in totals
        assert "(profiled median)" in totals and "(uninstrumented median)" in totals
        names = diff_rows(app, "diff-nodes")
        changes = {c.name: c for c in diff.nodes}
        sizes = [abs(changes[n].delta_s) for n in names]
        assert sizes == sorted(sizes, reverse=True)
        assert len(names) == len(diff.nodes)
        table = app.query_one("#diff-nodes", DataTable)
        row = [str(cell) for cell in table.get_row("layer1_0_conv1")]
        assert row[0] == "layer1_0_conv1" and row[1] == "layer1.0.conv1"
        assert row[4].startswith("+") and row[5] == "+50.0%"
        assert app.focused is table


async def test_s_cycles_the_sort_and_S_reverses_it(diff: RunDiff) -> None:
    app = DiffApp(diff)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("s")  # signed Δ, largest (slower) first
        assert diff_rows(app, "diff-nodes")[0] == "layer1_0_conv1"
        assert "sort Δ ↓" in str(app.query_one("#diff-sort", Static).render())
        await pilot.press("S")
        changes = {c.name: c for c in diff.nodes}
        deltas = [changes[n].delta_s for n in diff_rows(app, "diff-nodes")]
        assert deltas == sorted(deltas)
        assert changes[diff_rows(app, "diff-nodes")[0]].name.startswith("layer4")


async def test_modules_and_one_run_only_tabs(diff: RunDiff) -> None:
    app = DiffApp(diff)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("2")
        assert app.query_one(TabbedContent).active == "modules"
        modules = diff_rows(app, "diff-modules")
        assert "layer4" in modules and "" not in modules
        await pilot.press("3")
        assert app.query_one(TabbedContent).active == "only"
        assert diff_rows(app, "diff-only") == [f"before:{n}" for n in FOLDED]
        assert app.focused is app.query_one("#diff-only", DataTable)


async def test_question_mark_lists_the_keys_and_q_quits(diff: RunDiff) -> None:
    app = DiffApp(diff)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert {key for _, key, _ in app.screen.rows} >= {"q, Ctrl+C", "s", "S", "1", "2", "3"}
        await pilot.press("escape")
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_survives_a_small_terminal(diff: RunDiff) -> None:
    app = DiffApp(diff)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.resize_terminal(40, 12)
        await pilot.pause()
        await pilot.press("s", "3", "1")
        await pilot.resize_terminal(120, 36)
        await pilot.pause()
        assert app.query_one("#diff-nodes", DataTable).size.height > 10


async def test_changes_within_either_runs_spread_carry_a_mark_explained_on_top(diff: RunDiff) -> None:
    app = DiffApp(diff)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.query_one("#diff-nodes", DataTable)
        # conv1 did not change: inside its own spread. layer1_0_conv1 took 1.5×: outside both runs' ranges.
        assert str(table.get_row("conv1")[-1]) == "~"
        assert str(table.get_row("layer1_0_conv1")[-1]) == ""
        assert str(table.get_row("layer4_0_conv1")[-1]) == ""
        totals = str(app.query_one("#diff-totals", Static).render())
        marked = len(diff.within_spread)
        assert 0 < marked < len(diff.nodes)
        assert f"~ {marked} of {len(diff.nodes)} node changes lie within" in totals
        assert "settings differ" not in totals
