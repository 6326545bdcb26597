"""The app shows a live session: status, refreshes that keep the view, errors, pause/reset, quitting."""

from __future__ import annotations

import dataclasses

import pytest
from fakes import (
    FailingSource,
    FakeSource,
    error_snapshot,
    graph_of,
    resnet_snapshot,
    settle,
    stats_of,
    tree_cursor,
    tree_entries,
)
from textual.widgets import Label, OptionList

from fxtui.core.findings import AtenOp, Hint
from fxtui.core.nodes import GraphBreak
from fxtui.core.snapshot import Snapshot, State
from fxtui.ui.app import FxtuiApp
from fxtui.ui.screens.hints import HintsScreen
from fxtui.ui.widgets.detail_pane import DetailPane
from fxtui.ui.widgets.module_tree import Entry
from fxtui.ui.widgets.status_bar import StatusBar

pytestmark = pytest.mark.unit

SIZE = (120, 36)


def status(app: FxtuiApp) -> str:
    return str(app.main.query_one(StatusBar).render())


async def test_first_view_shows_the_session_and_the_hottest_nodes_first() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        text = status(app)
        for part in ("running", "resnet18", "1×3×224×224", "float32", "200 runs", "fidelity", "-placeholder"):
            assert part in text
        table = app.main.table
        assert table.row_names[0] == "conv1"
        medians = [stats_of(app)[n].median_s for n in table.row_names]
        assert medians == sorted(medians, reverse=True)
        # Inputs and the output are hidden by default.
        assert "x" not in table.row_names and "output" not in table.row_names
        assert table.cell_text("conv1", "target") == "Conv2d"
        assert table.cell_text("conv1", "median") == "1.48 ms"
        tree = app.main.module_tree
        # Graph order; a submodule called once (conv1) is listed as its node, not as a branch holding it.
        assert tree_entries(tree)[:9] == [
            "",
            "conv1",
            "bn1",
            "relu",
            "maxpool",
            "layer1",
            "layer2",
            "layer3",
            "layer4",
        ]
        assert "1.48 ms" in tree.label_text(Entry("node", "conv1"))
        assert app.focused is table


async def test_the_detail_pane_shows_the_first_node_in_full_on_a_small_terminal() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        detail = app.main.query_one(DetailPane)
        assert detail.query_one("#detail-fields").size.height >= len(detail.fields) > 5
        assert detail.query_one("#detail-node-text").size.height > 1  # the FX node text wraps


async def test_loading_states_show_before_the_graph() -> None:
    source = FakeSource([Snapshot(None, State.TRACING, seq=1, message="tracing resnet18")])
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert "tracing" in status(app)
        assert not app.main.table.row_names
        source.push(resnet_snapshot(seq=2))
        await settle(app, pilot, 2)
        assert "running" in status(app)
        assert app.main.table.row_names[0] == "conv1"


async def test_refresh_keeps_cursor_expansion_sort_and_scroll() -> None:
    source = FakeSource()
    app = FxtuiApp(source)
    async with app.run_test(size=(120, 20)) as pilot:
        await settle(app, pilot)
        main = app.main
        await pilot.press("s")  # sort by p90
        for _ in range(12):
            await pilot.press("down")
        chosen = main.table.cursor_name
        scroll = main.table.scroll_y
        main.module_tree.reveal(Entry("module", "layer2.0"))
        main.module_tree.action_expand_cursor()
        main.table.focus()
        before = main.table.cell_text("conv1", "median")
        source.push(resnet_snapshot(seq=2, scale=2.0))
        await settle(app, pilot, 2)
        assert main.table.cell_text("conv1", "median") != before
        assert main.table.cursor_name == chosen == main.selected
        assert main.table.sort_key == "p90"
        assert main.table.scroll_y == scroll > 0
        assert "layer2_0_conv1" in tree_entries(main.module_tree)


async def test_an_error_inside_the_model_shows_the_node_and_the_app_stays_usable() -> None:
    source = FakeSource()
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        source.push(error_snapshot())
        await settle(app, pilot, 2)
        banner = str(app.main.query_one("#error-banner").render())
        assert "layer3_0_bn2" in banner and "RuntimeError: boom" in banner
        await pilot.press("e")
        assert app.main.selected == "layer3_0_bn2"
        table = app.main.table
        visible = table.scrollable_content_region.height - 1  # below the header
        assert table.scroll_y <= table.cursor_row < table.scroll_y + visible  # scrolled into view
        assert "raised: RuntimeError: boom" in str(app.main.query_one("#detail-error").render())
        await pilot.press("n")
        assert app.main.selected != "layer3_0_bn2"
        source.push(resnet_snapshot(seq=3))
        await settle(app, pilot, 3)
        assert not app.main.query_one("#error-banner").display


async def test_a_session_that_fails_to_load_exits_with_its_message() -> None:
    source = FailingSource()
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(200):
            if app.fatal_error:
                break
            await pilot.pause(0.01)
    assert app.fatal_error == "unknown model 'nosuchmodel'"
    assert app.return_code == 2
    assert "stop" in source.calls


async def test_space_pauses_and_resumes_the_source() -> None:
    source = FakeSource()
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("space")
        assert source.calls == ["pause"]
        assert "paused" in status(app)
        await pilot.press("space")
        assert source.calls == ["pause", "resume"]
        assert "paused" not in status(app)


async def test_space_pauses_even_with_the_tree_focused() -> None:
    source = FakeSource()
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.main.module_tree.focus()
        await pilot.press("space")
        assert source.calls == ["pause"]


async def test_r_resets_the_statistics() -> None:
    source = FakeSource()
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("r")
        assert source.calls == ["reset"]


async def test_q_stops_the_source_and_ends_the_worker() -> None:
    source = FakeSource()
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("q")
        await pilot.pause()
        assert "stop" in source.calls
        assert app.return_code == 0  # exit() was called by the key, not by the test harness
    assert source.finished.wait(5)
    assert app.return_code == 0 and app.fatal_error is None


async def test_ctrl_c_quits() -> None:
    source = FakeSource()
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.return_code is None
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.return_code == 0 and "stop" in source.calls
    assert source.finished.wait(5)


async def test_no_color_is_honoured(monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = FxtuiApp(FakeSource())
    assert app.no_color


async def test_x_explains_the_selected_node_and_the_detail_pane_shows_its_aten_operators() -> None:
    source = FakeSource()
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        detail = app.main.query_one(DetailPane)
        assert detail.aten is None and detail.aten_note.startswith("x:")
        await pilot.press("x")
        assert source.calls == ["explain conv1"]
        assert "working" in detail.aten_note
        ops = (
            AtenOp("aten::convolution", 0, 1e-5, 1.4e-3, 1.0, 0.95),
            AtenOp("aten::mkldnn_convolution", 1, 1.39e-3, 1.39e-3, 1.0, 0.94),
        )
        source.push(dataclasses.replace(resnet_snapshot(seq=2), aten={"conv1": ops}))
        await settle(app, pilot, 2)
        assert detail.aten == ops
        # Another node has not been explained.
        await pilot.press("down")
        assert detail.aten is None


async def test_H_asks_for_hints_lists_them_and_enter_goes_to_the_node() -> None:
    source = FakeSource()
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("H")
        assert source.calls == ["hints"]
        screen = app.screen
        assert isinstance(screen, HintsScreen)
        assert "asking" in str(screen.query_one("#hints-note", Label).render())
        hints = (
            Hint(
                "conv-bn-fold",
                "Fold batch norms into the convolutions",
                ("layer2_0_bn1", "layer2_0_conv1"),
                "20 BatchNorm2d after Conv2d take 0.8 ms",
                7e-4,
                6.6,
            ),
            Hint("threads", "Try more threads", (), "1 of 2 cores used", None, None),
        )
        source.push(dataclasses.replace(resnet_snapshot(seq=2), hints=hints))
        await settle(app, pilot, 2)
        assert screen.query_one(OptionList).option_count == 2
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is app.main
        assert app.main.selected == "layer2_0_bn1"
        assert tree_cursor(app.main.module_tree) == Entry("node", "layer2_0_bn1")


async def test_a_refresh_draws_only_the_tree_lines_on_screen() -> None:
    # Each refresh changes every number in the tree, but only the lines in view are drawn: labels
    # for lines scrolled away (or kept from earlier numbers) cost time and, kept, memory.
    source = FakeSource([resnet_snapshot(seq=1)])
    app = FxtuiApp(source)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        tree = app.main.module_tree
        for path in graph_of(app).modules:
            tree.open(path)
        await pilot.pause()
        assert tree.last_line + 1 > 2 * tree.size.height  # most lines are off screen
        drawn: list[Entry] = []
        parts = tree.label_parts

        def counted(entry: Entry, depth: int) -> list[tuple[str, str]]:
            drawn.append(entry)
            return parts(entry, depth)

        tree.label_parts = counted  # type: ignore[method-assign]
        for i in range(5):
            source.push(resnet_snapshot(seq=i + 2, scale=1.0 + 0.01 * i))
            await settle(app, pilot, applied=i + 2)
        assert 0 < len(drawn) <= 5 * tree.size.height
        assert any(e.key == "layer1_0_conv1" for e in drawn) and not any(e.key == "fc" for e in drawn)


async def test_an_unsteady_node_is_marked_and_explained() -> None:
    snapshot = resnet_snapshot()
    conv1 = dataclasses.replace(snapshot.nodes["conv1"], min_s=snapshot.nodes["conv1"].median_s / 3)
    app = FxtuiApp(FakeSource([dataclasses.replace(snapshot, nodes={**snapshot.nodes, "conv1": conv1})]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        table = app.main.table
        assert table.cell_text("conv1", "noisy") == "~"
        assert table.cell_text("bn1", "noisy").strip() == ""
        detail = app.main.query_one(DetailPane)
        labels = dict(detail.fields)
        assert labels["unsteady"].startswith("the median is 3.0× the fastest run")


async def test_status_line_says_when_torchdynamo_captured_the_model() -> None:
    snapshot = resnet_snapshot()
    assert snapshot.graph is not None
    graph = dataclasses.replace(
        snapshot.graph,
        capture="dynamo",
        graphs=3,
        breaks=(GraphBreak("Unsupported Tensor.item() call", "model.py:12  if x.item():"),) * 2,
    )
    app = FxtuiApp(FakeSource([dataclasses.replace(snapshot, graph=graph)]))
    async with app.run_test(size=(160, 36)) as pilot:
        await settle(app, pilot)
        assert "TorchDynamo 3 graphs/2 breaks" in status(app)
    plain = FxtuiApp(FakeSource())
    async with plain.run_test(size=(160, 36)) as pilot:
        await settle(plain, pilot)
        assert "TorchDynamo" not in status(plain)  # torch.fx, the usual case, adds nothing to the line


async def test_a_session_that_fails_after_tracing_keeps_the_graph_and_numbers_on_screen() -> None:
    source = FakeSource()
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        before = app.main.table.cell_text("conv1", "median")
        source.push(Snapshot(None, State.ERROR, seq=2, message="the engine process exited"))
        await settle(app, pilot, 2)
        assert app.main.table.row_names[0] == "conv1"
        assert app.main.table.cell_text("conv1", "median") == before
        assert "● error" in status(app) and "200 runs" in status(app)
        banner = app.main.query_one("#error-banner")
        assert banner.display and "the engine process exited" in str(banner.render())
        assert app.return_code is None  # not fatal: there is something to look at
