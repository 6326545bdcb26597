"""Tiny ops no longer crowd the tree: a module's small direct ops fold into one line; g orders siblings by time.

The graph is shaped like BERT's training step at the root: embeddings, then dozens of tiny
ops the root runs itself (``_to_copy``, ``arange``, ``unsqueeze``, gradients of ``add`` …), then
the encoder with nearly all the time.
"""

from __future__ import annotations

import pytest
from fakes import FakeSource, settle, tree_entries
from textual.pilot import Pilot

from fxtui.core.snapshot import GraphInfo, Snapshot
from fxtui.ui.app import FxtuiApp
from fxtui.ui.demo.demo_source import build_graph, make_snapshot
from fxtui.ui.widgets.module_tree import ModuleTree
from fxtui.ui.widgets.tree_lines import group_key

pytestmark = pytest.mark.unit

SIZE = (160, 48)
TINY = ("_to_copy", "arange", "unsqueeze", "add")


def rows() -> list[tuple[str, str, str, str, str, str, float]]:
    out = [("input_ids", "placeholder", "input_ids", "input", "", "1×128", 0.4)]
    out += [(f"embeddings_{k}", "call_module", "Linear", "Linear", f"embeddings.{k}", "1×128×64", 900.0) for k in "ab"]
    out += [
        (f"{TINY[i % 4]}_{i}", "call_function", f"torch.{TINY[i % 4]}", TINY[i % 4], "", "1×128", 2.0 + i)
        for i in range(33)
    ]
    out.append(("heavy_matmul", "call_function", "torch.matmul", "matmul", "", "1×128×128", 4000.0))
    out += [
        (f"encoder_layer_{i}_{k}", "call_module", "Linear", "Linear", f"encoder.layer.{i}.{k}", "1×128×64", 30000.0)
        for i in range(2)
        for k in ("q", "k")
    ]
    out.append(("output", "output", "output", "output", "", "1×128×64", 0.3))
    return out


def graph_and_snapshot(seq: int = 1, graph: GraphInfo | None = None) -> tuple[GraphInfo, Snapshot]:
    built = graph or build_graph(rows(), model="bert", inputs=("1×128",))
    return built, make_snapshot(built, [r[6] for r in rows()], seq=seq)


async def started(pilot: Pilot[None], app: FxtuiApp) -> ModuleTree:
    await settle(app, pilot)
    return app.main.module_tree


async def test_a_modules_small_direct_ops_fold_into_one_line_and_modules_and_heavy_ops_stay() -> None:
    _, snapshot = graph_and_snapshot()
    app = FxtuiApp(FakeSource([snapshot]))
    async with app.run_test(size=SIZE) as pilot:
        tree = await started(pilot, app)
        root = tree_entries(tree)[1:]
        assert root == ["embeddings", group_key(""), "heavy_matmul", "encoder"]  # 35 lines before
        group = tree.entry_at(2)
        assert group is not None and group.kind == "group"
        label = tree.label_text(group)
        total_us = sum(2.0 + i for i in range(33))  # the folded ops' medians, summed
        assert label.startswith("33 small ops") and f"{total_us:.0f} µs   0.4%" in label, label
        # → opens the group: its ops are listed under it, graph order
        tree.focus()
        tree.move_cursor(2)
        await pilot.press("right")
        listed = tree_entries(tree)
        assert listed[3:6] == ["_to_copy_0", "arange_1", "unsqueeze_2"] and listed[-2:] == ["heavy_matmul", "encoder"]


async def test_selecting_a_small_op_in_the_table_opens_its_group() -> None:
    _, snapshot = graph_and_snapshot()
    app = FxtuiApp(FakeSource([snapshot]))
    async with app.run_test(size=SIZE) as pilot:
        tree = await started(pilot, app)
        app.main.select_node("arange_5")
        await pilot.pause()
        cursor = tree.cursor_entry
        assert cursor is not None and cursor.key == "arange_5"
        assert tree.is_expanded(group_key(""))


async def test_g_orders_siblings_slowest_first_and_the_order_stays_for_the_session() -> None:
    graph, snapshot = graph_and_snapshot()
    source = FakeSource([snapshot])
    app = FxtuiApp(source)
    async with app.run_test(size=SIZE) as pilot:
        tree = await started(pilot, app)
        await pilot.press("g")
        assert tree.by_time
        assert tree_entries(tree)[1:] == ["encoder", "heavy_matmul", "embeddings", group_key("")]
        source.push(graph_and_snapshot(seq=2, graph=graph)[1])  # new numbers: still by time
        await settle(app, pilot, applied=2)
        await pilot.press("slash", "e", "n", "c", "enter", "escape")  # a filter set and cleared
        await pilot.pause()
        assert tree.by_time and tree_entries(tree)[1] == "encoder"
        await pilot.press("g")
        assert tree_entries(tree)[1:] == ["embeddings", group_key(""), "heavy_matmul", "encoder"]
