"""SVG snapshots of the main views with the deterministic source (update with --snapshot-update)."""

from __future__ import annotations

import pytest
from fakes import FakeSource, error_snapshot, settle
from textual.pilot import Pilot

from fxtui.ui.app import FxtuiApp
from fxtui.ui.demo.demo_findings import findings_snapshot, resnet18_diff
from fxtui.ui.diff_app import DiffApp

pytestmark = pytest.mark.unit

NARROW = (80, 24)
WIDE = (160, 48)


def _app(error: bool = False) -> FxtuiApp:
    return FxtuiApp(FakeSource([error_snapshot()] if error else None))


def _ready(*keys: str, applied: int = 1):
    async def run_before(pilot: Pilot) -> None:
        app = pilot.app
        assert isinstance(app, FxtuiApp)
        await settle(app, pilot, applied)
        for key in keys:
            await pilot.press(key)
        await pilot.pause()

    return run_before


def test_overview_80x24(snap_compare) -> None:
    assert snap_compare(_app(), terminal_size=NARROW, run_before=_ready())


def test_overview_160x48(snap_compare) -> None:
    assert snap_compare(_app(), terminal_size=WIDE, run_before=_ready())


def test_path_filter_80x24(snap_compare) -> None:
    keys = ("slash", *"layer[12]*", "enter")
    assert snap_compare(_app(), terminal_size=NARROW, run_before=_ready(*keys))


def test_hottest_path_drilldown_160x48(snap_compare) -> None:
    assert snap_compare(_app(), terminal_size=WIDE, run_before=_ready("h", "h", "h"))


def test_help_80x24(snap_compare) -> None:
    assert snap_compare(_app(), terminal_size=NARROW, run_before=_ready("question_mark"))


def test_model_error_160x48(snap_compare) -> None:
    assert snap_compare(_app(error=True), terminal_size=WIDE, run_before=_ready("e"))


def test_op_filter_modal_80x24(snap_compare) -> None:
    assert snap_compare(_app(), terminal_size=NARROW, run_before=_ready("o"))


def test_hints_with_a_measured_what_if_80x24(snap_compare) -> None:
    app = FxtuiApp(FakeSource([findings_snapshot()]))
    assert snap_compare(app, terminal_size=NARROW, run_before=_ready("H"))


def test_what_ifs_with_results_80x24(snap_compare) -> None:
    app = FxtuiApp(FakeSource([findings_snapshot()]))
    assert snap_compare(app, terminal_size=NARROW, run_before=_ready("w"))


def test_diff_app_100x30(snap_compare) -> None:
    assert snap_compare(DiffApp(resnet18_diff(), title="fxtui diff"), terminal_size=(100, 30))
