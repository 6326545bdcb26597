"""NaN and inf in the app: a badge that says which, the sentence under T, and a masked inf as a fact of its node."""

from __future__ import annotations

import dataclasses

import pytest
from fakes import FakeSource, resnet_snapshot, settle
from textual.widgets import Static

from fxtui.core.findings import Disturbance
from fxtui.core.snapshot import Snapshot
from fxtui.ui.app import FxtuiApp
from fxtui.ui.widgets.detail_pane import DetailPane
from fxtui.ui.widgets.status_bar import StatusBar

pytestmark = pytest.mark.unit

INF = "inf reaches the model's output: it first appears in layer1_0_bn1"


def with_values(warnings: tuple[str, ...], node: str, kind: str) -> Snapshot:
    snapshot = resnet_snapshot()
    assert snapshot.graph is not None
    nodes = tuple(dataclasses.replace(n, nonfinite=kind) if n.name == node else n for n in snapshot.graph.nodes)
    graph = dataclasses.replace(snapshot.graph, nodes=nodes, value_warnings=warnings)
    return dataclasses.replace(snapshot, graph=graph)


async def test_an_inf_at_the_output_is_a_badge_and_a_sentence_under_t() -> None:
    app = FxtuiApp(FakeSource([with_values((INF,), "layer1_0_bn1", "inf")]))
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(app, pilot)
        status = str(app.main.query_one(StatusBar).render()).splitlines()[0]
        assert "⚠ inf at an output (T)" in status and "NaN" not in status
        await pilot.press("T")
        assert INF in str(app.screen.query_one("#threads-text", Static).render())


async def test_a_masked_inf_is_no_warning_but_its_node_says_so() -> None:
    app = FxtuiApp(FakeSource([with_values((), "layer1_0_bn1", "inf")]))
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(app, pilot)
        assert "⚠" not in str(app.main.query_one(StatusBar).render())
        app.main.select_node("layer1_0_bn1")
        await pilot.pause()
        fields = dict(app.main.query_one(DetailPane).fields)
        assert fields["values"].startswith("±inf in its output, masked before any output")


async def test_the_display_s_share_of_disturbed_steps_is_said_as_the_display_s() -> None:
    drawn = Disturbance(30, 7, median_lost=0.2, worst_lost=0.3, used=23, in_window=7, left_out=7, median_display=0.2)
    app = FxtuiApp(FakeSource([dataclasses.replace(resnet_snapshot(), disturbance=drawn)]))
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(app, pilot)
        await pilot.press("T")
        text = str(app.screen.query_one("#threads-text", Static).render())
        assert "7 of 30 steps disturbed: the display took 20% of their time" in text
        assert "other processes" not in text
