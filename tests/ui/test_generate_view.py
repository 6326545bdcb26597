"""A generate() call in the app: both phases per module in the tree, the phase filter, the decode plot, status."""

from __future__ import annotations

import dataclasses

import pytest
from fakes import FakeSource, settle

from fxtui.core.generation import GenerationSummary
from fxtui.core.nodes import NodeInfo, build_module_tree
from fxtui.core.snapshot import GraphInfo, Snapshot
from fxtui.ui.app import FxtuiApp
from fxtui.ui.demo.demo_source import make_snapshot
from fxtui.ui.widgets.decode_plot import DecodePlot, decode_rows, decode_twin
from fxtui.ui.widgets.module_tree import Entry
from fxtui.ui.widgets.status_bar import StatusBar

pytestmark = pytest.mark.unit

SIZE = (200, 44)


def node(name: str, index: int, path: str, phase: str) -> NodeInfo:
    label = name.split(" · ")[-1].split(" ")[0]
    return NodeInfo(name, index, "call_function", f"aten.{label}", label, path, name, phase=phase)


def generation_snapshot() -> Snapshot:
    """Attention 20 µs of a 100 µs prefill, 45 µs of a 100 µs decode step; the MLP the rest."""
    nodes = [
        node("attn · bmm (prefill)", 0, "attn", "prefill"),
        node("mlp · mm (prefill)", 1, "mlp", "prefill"),
        node("attn · bmm (decode)", 2, "attn", "decode"),
        node("mlp · mm (decode)", 3, "mlp", "decode"),
        node("generate · argmax (decode)", 4, "generate", "decode"),
    ]
    graph = GraphInfo(
        model="hf:tiny",
        inputs=("input_ids: 1×16",),
        dtype="float32",
        threads=1,
        nodes=tuple(nodes),
        modules=build_module_tree(nodes, {"": "TinyLM", "attn": "Attention", "mlp": "MLP", "generate": "generate()"}),
        capture="generate",
    )
    snapshot = make_snapshot(graph, [20.0, 80.0, 45.0, 50.0, 5.0])
    generation = GenerationSummary(
        new_tokens=5,
        prompt_tokens=16,
        calls=7,
        generate_s=0.5e-3,
        ttft_s=100e-6,
        tpot_s=100e-6,
        tpot_mean_s=100e-6,
        profiled_ttft_s=100e-6,
        profiled_tpot_mean_s=100e-6,
        positions=(17, 18, 19, 20),
        position_s=(90e-6, 100e-6, 110e-6, 120e-6),
        node_positions={"attn · bmm (decode)": (30e-6, 40e-6, 50e-6, 60e-6), "mlp · mm (decode)": (50e-6,) * 4},
        kv_cache_bytes=4096,
        kv_layer_bytes=(4096,),
        cache="DynamicCache",
        weight_bytes=1 << 20,
    )
    # Each node's share is of its own phase, as the engine gives it.
    stats = {name: dataclasses.replace(s, pct=100.0 * s.median_s / 100e-6) for name, s in snapshot.nodes.items()}
    return dataclasses.replace(snapshot, nodes=stats, generation=generation)


def test_decode_rows_mark_the_nodes_part_at_the_foot_of_each_column() -> None:
    rows = decode_rows([1.0, 2.0], [0.5, 1.0], width=10, height=2)
    assert ["".join(c for c, _ in row) for row in rows] == [" █", "██"]
    # The node fills half of each column: the bottom row of both, none of the top.
    assert [m for _, m in rows[1]] == [True, True] and [m for _, m in rows[0]] == [False, False]
    assert decode_rows([], [], 10, 2) == []


def test_a_prefill_node_marks_its_decode_twin() -> None:
    g = generation_snapshot().generation
    assert g is not None
    assert decode_twin("attn · bmm (prefill)", g) == "attn · bmm (decode)"
    assert decode_twin("attn · bmm (decode)", g) == "attn · bmm (decode)"
    assert decode_twin("generate · argmax (decode)", g) is None and decode_twin(None, g) is None


async def test_tree_status_phase_filter_and_decode_plot() -> None:
    app = FxtuiApp(FakeSource([generation_snapshot()]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        main = app.main
        tree = main.module_tree
        # Both phases on a module's line: attention is 20% of the prefill and 45% of a decode step.
        label = tree.label_text(Entry("module", "attn"))
        assert "P 20.0%" in label and "D 45.0%" in label, label
        assert "P 80.0%" in tree.label_text(Entry("module", "mlp"))
        status = str(main.query_one(StatusBar).render())
        assert "TTFT 100 µs" in status and "TPOT 100 µs" in status and "tok/s" in status
        assert main.table.columns[[c.key for c in main.table.columns].index("pct")].app_label == "% ph"
        # p: the prefill's nodes alone, the tree in that phase's times and shares; then decode.
        await pilot.press("p")
        await pilot.pause()
        assert {main.graph.node(n).phase for n in main.table.row_names} == {"prefill"}  # type: ignore[union-attr]
        label = tree.label_text(Entry("module", "attn"))
        assert "20.0 µs" in label and "20.0%" in label and "D " not in label, label
        await pilot.press("p")
        await pilot.pause()
        assert {main.graph.node(n).phase for n in main.table.row_names} == {"decode"}  # type: ignore[union-attr]
        assert "45.0%" in tree.label_text(Entry("module", "attn"))
        # The decode plot: one column per position, the selected node's part marked, growing with the context.
        plot = main.query_one(DecodePlot)
        assert plot.display
        main.select_node("attn · bmm (prefill)")
        await pilot.pause()
        assert len(plot.rows[-1]) == 4 and all(plot.marked)
        assert plot.marked == sorted(plot.marked) and plot.marked[-1] > plot.marked[0]
        assert "attn · bmm (decode)" in str(plot.render())


async def test_no_decode_plot_without_a_generation() -> None:
    snapshot = dataclasses.replace(generation_snapshot(), generation=None)
    app = FxtuiApp(FakeSource([snapshot]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert not app.main.query_one(DecodePlot).display


@pytest.mark.parametrize("width", [40, 60, 100])
def test_phase_shares_fit_every_width(width: int) -> None:
    from fxtui.ui.widgets.tree_labels import fit_phase_label

    parts = fit_phase_label("self_attn", "Attention", None, 20.0, 45.0, width, 4)
    text = "".join(t for t, _ in parts)
    assert len(text) == width - 4 and "P 20.0%" in text and "D 45.0%" in text
