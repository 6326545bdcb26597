"""A compiled model in the app: each module's eager time → compiled time in the tree, the kernel's fused nodes,
the status line's compile and eager-against-compiled figures."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import pytest
from fakes import FakeSource, settle, tree_entries

from fxtui.core.compilation import CompiledSummary
from fxtui.core.nodes import NodeInfo, build_module_tree
from fxtui.core.snapshot import GraphInfo, Snapshot
from fxtui.ui.app import FxtuiApp
from fxtui.ui.demo.demo_source import make_snapshot
from fxtui.ui.view_filter import DEFAULT_FILTER, Shown
from fxtui.ui.widgets.detail_pane import _fields
from fxtui.ui.widgets.module_tree import Entry
from fxtui.ui.widgets.status_bar import StatusBar

pytestmark = pytest.mark.unit

SIZE = (200, 44)


def kernel(name: str, index: int, kernel: str, fused: tuple[tuple[str, str], ...], path: str) -> NodeInfo:
    return NodeInfo(
        name,
        index,
        "call_function",
        kernel,
        "fused" if len(fused) > 1 else "convolution",
        path,
        kernel,
        kernel=kernel,
        fused_nodes=tuple(d for d, _ in fused),
        fused_modules=tuple(p for _, p in fused),
    )


def compiled_snapshot() -> Snapshot:
    """layer3's convolution 1.9 ms compiled (4.1 ms eager); layer1's bn+relu fused, 1 ms compiled (0.5 ms eager);
    pool (1.1 ms eager) fused whole with layer1's last ReLU into a kernel of the root, 0.3 ms."""
    nodes = [
        kernel("layer3.conv · convolution", 0, "extern_kernels.convolution", (("layer3.conv · conv2d", "layer3.conv"),),
               "layer3.conv"),
        kernel("layer1 · bn+relu (fused)", 1, "cpp_fused_relu_0",
               (("layer1.bn · batch_norm", "layer1.bn"), ("layer1.relu · relu", "layer1.relu")), "layer1"),
        kernel("relu+max_pool2d (fused)", 2, "cpp_fused_max_pool2d_1",
               (("layer1.relu · relu #2", "layer1.relu"), ("pool · max_pool2d", "pool")), ""),
    ]  # fmt: skip
    classes = {"": "Tiny", "layer3": "Block", "layer3.conv": "Conv2d", "layer1": "Block", "pool": "MaxPool2d"}
    graph = GraphInfo(
        model="tiny",
        inputs=("1×3×8×8",),
        dtype="float32",
        threads=2,
        nodes=tuple(nodes),
        modules=build_module_tree(nodes, classes, extra=["layer3.conv", "pool"]),
        capture="compiled",
    )
    snapshot = make_snapshot(graph, [1900.0, 1000.0, 300.0])
    summary = CompiledSummary(
        compile_s=8.3,
        graphs=1,
        kernels=2,
        externs=1,
        eager_s=7.0e-3,
        eager_modules={"": 5.7e-3, "layer3": 4.1e-3, "layer3.conv": 4.1e-3, "layer1": 0.5e-3, "pool": 1.1e-3},
    )
    return dataclasses.replace(snapshot, compiled=summary, eager_median_s=3.0e-3)


async def test_tree_shows_eager_then_compiled_and_status_the_compile() -> None:
    snapshot = compiled_snapshot()
    app = FxtuiApp(FakeSource([snapshot]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        tree = app.main.module_tree
        label = tree.label_text(Entry("module", "layer3"))
        assert "4.10 ms → " in label and "1.90 ms" in label and "×0.46" in label, label
        assert "×2.00" in tree.label_text(Entry("module", "layer1"))  # compiling did not help layer1
        status = str(app.main.query_one(StatusBar).render())
        assert "compiled in 8.30 s" in status and "3 kernels" in status
        assert "eager 7.00 ms → compiled 3.00 ms" in status and "(×0.43)" in status
        # g: siblings by saving, the smallest first: layer1 (it lost 0.5 ms) before layer3 (it saved 2.2 ms).
        await pilot.press("g")
        await pilot.pause()
        assert any(n.message == "tree: smallest saving first" for n in app._notifications)
        graph = snapshot.graph
        assert graph is not None
        # layer1 holds one kernel: its line is the kernel's, read as the module's.
        paths = [e.key if e.kind == "module" else graph.node(e.key).module_path for e in tree.outline.entries]
        order = [p for p in paths if p in ("layer1", "layer3")]
        assert order[:2] == ["layer1", "layer3"], paths
        assert "×2.00" in tree.label_text(Entry("node", "layer1 · bn+relu (fused)"))


def test_detail_pane_names_the_fused_nodes_and_splits_the_time() -> None:
    snapshot = compiled_snapshot()
    assert snapshot.graph is not None
    info = snapshot.graph.node("layer1 · bn+relu (fused)")
    fields = dict(_fields(info, snapshot.nodes[info.name]))
    assert fields["fuses"] == "layer1.bn · batch_norm, layer1.relu · relu"
    assert "layer1.bn 500 µs · layer1.relu 500 µs" in fields["split"] and "charged to layer1" in fields["split"]


async def test_a_module_fused_whole_into_the_roots_kernel_has_a_line_saying_so() -> None:
    snapshot = compiled_snapshot()
    app = FxtuiApp(FakeSource([snapshot]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        tree = app.main.module_tree
        # pool has no kernel of its own: its eager time, and the module whose kernel holds its work.
        label = tree.label_text(Entry("module", "pool"))
        assert "1.10 ms → fused into (root)" in label and "×" not in label, label
        # Listed where its work runs: right after the root's kernel that computes it.
        entries = tree_entries(tree)
        assert entries.index("pool") == entries.index("relu+max_pool2d (fused)") + 1, entries
        # Enter on it selects the kernel that holds its work (it has nothing of its own to list).
        tree.focus()
        tree.reveal(Entry("module", "pool"))
        await pilot.press("enter")
        await pilot.pause()
        assert app.main.selected == "relu+max_pool2d (fused)" and app.main.scope == ""
        assert app.main.table.cursor_name == "relu+max_pool2d (fused)"
        # g: its saving is not its own (it is in the root's kernel), so it comes last, not first as a 100% saving.
        await pilot.press("g")
        await pilot.pause()
        assert tree_entries(tree)[-1] == "pool", tree_entries(tree)


def test_a_module_fused_whole_shows_with_its_kernel_and_hides_with_it() -> None:
    graph = compiled_snapshot().graph
    assert graph is not None
    assert graph.modules["pool"].nodes == () and graph.modules["pool"].fused == ("relu+max_pool2d (fused)",)
    assert "pool" in Shown.of(graph, DEFAULT_FILTER).modules
    # A filter that keeps the kernel holding its work keeps it; one that hides that kernel hides it.
    assert "pool" in Shown.of(graph, replace(DEFAULT_FILTER, types=frozenset({"fused"}))).modules
    assert "pool" not in Shown.of(graph, replace(DEFAULT_FILTER, types=frozenset({"convolution"}))).modules
