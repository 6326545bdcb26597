"""The module tree: graph order, submodules called once shown as their node, leaf-fallback marks, labels."""

from __future__ import annotations

import pytest
from fakes import FakeSource, settle, tree_cursor, tree_entries

from fxtui.ui.app import FxtuiApp
from fxtui.ui.demo.demo_source import build_graph, make_snapshot, resnet18_medians, resnet18_rows
from fxtui.ui.widgets.module_tree import Entry, bar, op_label, short_node_name
from fxtui.ui.widgets.outline_view import GUTTER

pytestmark = pytest.mark.unit


def test_short_names_drop_what_the_branch_already_says() -> None:
    assert short_node_name("layer1_0_relu_1", "layer1.0.relu") == "relu_1"
    assert short_node_name("layer1_0_conv1", "layer1.0.conv1") == "conv1"
    assert short_node_name("add_3", "layer2.1") == "add_3"
    assert short_node_name("flatten", "") == "flatten"


def test_leaves_say_their_op_type() -> None:
    assert op_label("call_module", "Conv2d") == "Conv2d"
    assert op_label("call_function", "add") == "add()"
    assert op_label("call_method", "view") == ".view()"


def test_bar_is_proportional_and_fixed_width() -> None:
    assert bar(0.0) == " " * 8
    assert bar(1.0) == "█" * 8
    assert bar(0.5).rstrip() == "████"
    assert len(bar(0.37)) == 8


async def test_a_submodule_called_once_is_a_leaf_and_a_reused_one_a_branch() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        tree = app.main.module_tree
        tree.reveal(Entry("node", "layer1_0_relu_1"))
        entries = tree_entries(tree)
        assert "layer1_0_conv1" in entries and "layer1.0.conv1" not in entries
        # BasicBlock calls its ReLU twice: a branch with both calls under it.
        assert "layer1.0.relu" in entries
        assert entries.index("layer1_0_relu") == entries.index("layer1.0.relu") + 1
        assert tree.label_text(Entry("node", "layer1_0_relu_1")).startswith("relu_1 ")
        assert tree.label_text(Entry("node", "layer1_0_conv1")).startswith("conv1 Conv2d")
        assert tree.label_text(Entry("node", "add")).startswith("add add()")
        assert tree.display_parent("layer1_0_conv1") == "layer1.0"
        assert tree.display_parent("layer1_0_relu_1") == "layer1.0.relu"


async def test_leaf_fallback_modules_are_marked() -> None:
    graph = build_graph(resnet18_rows(), model="resnet18", inputs=("1×3×224×224",), leaf=["layer2.0.conv1"])
    app = FxtuiApp(FakeSource([make_snapshot(graph, resnet18_medians())]))
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        tree = app.main.module_tree
        assert "[leaf]" in tree.label_text(Entry("node", "layer2_0_conv1"))
        assert "[leaf]" not in tree.label_text(Entry("node", "layer1_0_conv1"))


async def test_clicking_a_leaf_outside_the_scope_widens_the_scope() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        main = app.main
        main.set_scope("layer4")
        await pilot.pause()
        tree = main.module_tree
        tree.reveal(Entry("node", "layer1_0_bn1"))  # opens its branch and scrolls to it, telling nobody
        await pilot.pause()
        assert main.selected != "layer1_0_bn1"
        line = tree.line_of(Entry("node", "layer1_0_bn1"))
        assert line is not None
        await pilot.click(tree, offset=(8, line - round(tree.scroll_y)))
        await pilot.pause()
        assert main.selected == "layer1_0_bn1"
        assert main.scope == "layer1.0"
        assert main.table.cursor_name == "layer1_0_bn1"


def _tree_screen_lines(app: FxtuiApp) -> list[str]:
    tree = app.main.module_tree
    return [tree.render_line(y).text[GUTTER:].rstrip() for y in range(tree.size.height)]


async def test_backspace_from_a_branch_opened_to_reveal_goes_up_one_module_not_to_the_last_line() -> None:
    # Closing the branch the cursor was in used to drop the cursor past the end of the
    # shorter tree, onto "fc"; the screen followed it to the root and selected fc.
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        for path in ("layer3", "layer3.0", "layer3.0.downsample"):
            app.main.set_scope(path)
            await pilot.pause()
        await pilot.press("backspace")
        await pilot.pause()
        assert app.main.scope == "layer3.0"
        assert app.main.selected is not None and app.main.selected.startswith("layer3_0")
        assert tree_cursor(app.main.module_tree) == Entry("module", "layer3.0")
        await pilot.press("backspace")
        await pilot.pause()
        assert app.main.scope == "layer3"


async def test_drilling_down_and_jumping_between_branches_draws_every_tree_line_once() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        tree = app.main.module_tree
        for keys in (("h", "h", "h"), ("n", "n", "n"), ("backspace", "backspace"), ("N",), ("h", "h")):
            await pilot.press(*keys)
            await pilot.pause()
            lines = [line for line in _tree_screen_lines(app) if line]
            assert len(lines) == tree.last_line + 1
            assert sum("fc Linear" in line for line in lines) == 1
            assert lines[-1].startswith("└─ fc")


async def test_clicking_an_open_branch_icon_closes_it_and_the_cursor_inside_moves_onto_it() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        tree = app.main.module_tree
        app.main.select_node("layer1_0_conv2")
        await pilot.pause()
        line = tree.line_of(Entry("module", "layer1"))
        assert line is not None and tree.is_expanded("layer1")
        await pilot.click("#tree", offset=(GUTTER + 3, line))  # on "▼", after the focus gutter
        await pilot.pause()
        assert not tree.is_expanded("layer1")
        assert tree_cursor(tree) == Entry("module", "layer1")
        assert app.main.scope == "" and app.main.selected == "layer1_0_conv2"
        await pilot.click("#tree", offset=(GUTTER + 3, line))  # "▶" opens it again
        await pilot.pause()
        assert tree.is_expanded("layer1")


async def test_the_mouse_highlights_the_line_under_it_and_a_click_selects_a_node() -> None:
    app = FxtuiApp(FakeSource())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        tree = app.main.module_tree
        line = tree.line_of(Entry("node", "bn1"))
        assert line is not None
        plain = tree.render_line(line)
        await pilot.hover("#tree", offset=(8, line))
        await pilot.pause()
        assert tree.hover_line == line
        assert tree.render_line(line).text == plain.text and tree.render_line(line) != plain  # same text, highlighted
        await pilot.click("#tree", offset=(8, line))
        await pilot.pause()
        assert tree_cursor(tree) == Entry("node", "bn1") and app.main.selected == "bn1"
