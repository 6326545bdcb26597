"""Fixed findings for the demo: hints, measured what-ifs, thread facts, and a second run to diff.

Like :mod:`fxtui.ui.demo.demo_source`, nothing here is measured; the figures are chosen to look
like a resnet18 on a small CPU so screenshots show every panel filled in.
"""

from __future__ import annotations

import dataclasses

from fxtui.core.findings import Hint, MemorySummary
from fxtui.core.snapshot import GraphInfo, Snapshot
from fxtui.report.data import ReportData
from fxtui.report.diff import RunDiff, diff_reports
from fxtui.ui.demo.demo_source import build_graph, make_snapshot, resnet18_graph, resnet18_medians, resnet18_rows
from fxtui.ui.demo.demo_what_ifs import demo_what_if_options, demo_what_ifs

#: The (conv, bn) pairs of resnet18, in graph order.
CONV_BN_PAIRS: tuple[tuple[str, str], ...] = (
    ("conv1", "bn1"),
    *((f"layer{i}_{b}_conv{c}", f"layer{i}_{b}_bn{c}") for i in (1, 2, 3, 4) for b in (0, 1) for c in (1, 2)),
    *((f"layer{i}_0_downsample_0", f"layer{i}_0_downsample_1") for i in (2, 3, 4)),
)

THREAD_INFO: tuple[str, ...] = (
    "threads      2 intra-op (torch.get_num_threads), 1 inter-op",
    "cores        2 usable (os.sched_getaffinity), 2 logical",
    "environment  OMP_NUM_THREADS unset · MKL_NUM_THREADS unset",
    "backend      OpenMP · MKL on · MKL-DNN (oneDNN) on",
    "versions     torch 2.15 · torchvision 0.29.2 · python 3.11",
)


def demo_hints() -> tuple[Hint, ...]:
    """Three hints: the Conv-BN fold (measured), channels-last (measurable) and one about the run."""
    bns = tuple(bn for _, bn in CONV_BN_PAIRS)
    return (
        Hint(
            "conv-bn-fold",
            "Fold each BatchNorm2d into the Conv2d before it",
            bns,
            f"{len(bns)} BatchNorm2d directly after a Conv2d take 0.95 ms per run",
            9.5e-4,
            9.0,
            "fold-bn",
        ),
        Hint(
            "channels-last",
            "Try channels-last memory format: convolutions and pooling take 82% of the run",
            ("conv1", "maxpool"),
            "20 Conv2d nodes and 1 pooling node take 8.2 ms of a 10.0 ms run and the input (1×3×224×224) is "
            "NCHW-contiguous",
            None,
            None,
            "channels-last",
        ),
        Hint(
            "python-glue",
            "Most of the unattributed time is Python between ops",
            (),
            "the nodes account for 94% of the uninstrumented run; the rest is the interpreter",
            None,
            None,
        ),
    )


def with_memory(graph: GraphInfo) -> GraphInfo:
    """``graph`` with the bytes the memory pass would find: float32 outputs, in-place ReLUs, a block's input
    held until its add, convolutions allocating a reorder buffer half their output's size."""
    nodes = []
    held = 0  # the residual block's input, kept for its add
    peak, peak_node = 0, ""
    for n in graph.nodes:
        size = 4 * _numel(n.shape)
        out = 0 if n.op in ("placeholder", "output") or n.type_name in ("ReLU", "flatten") else size
        if n.name.startswith("layer") and n.name.endswith("_conv1"):
            held = 4 * _numel(n.input_shapes[0]) if n.input_shapes else 0
        if n.name.endswith("_downsample_1"):
            held = size
        live = 0 if n.op == "output" else (size if n.op != "placeholder" else 0) + held
        if n.type_name == "add":
            held, live = 0, size
        if live > peak:
            peak, peak_node = live, n.name
        alloc = out + (out // 2 if n.type_name == "Conv2d" else 0)
        nodes.append(dataclasses.replace(n, output_bytes=out, alloc_bytes=alloc, live_bytes=live))
    memory = MemorySummary(peak_live_bytes=peak, peak_node=peak_node, param_bytes=46_796_608, input_bytes=602_112)
    return dataclasses.replace(graph, nodes=tuple(nodes), memory=memory)


def _numel(shape: str) -> int:
    count = 1
    for dim in shape.split("×"):
        count *= int(dim) if dim.isdigit() else 1
    return count


def findings_snapshot() -> Snapshot:
    """The demo resnet18 snapshot with thread facts, hints, what-ifs and memory figures."""
    snapshot = make_snapshot(resnet18_graph(), resnet18_medians())
    assert snapshot.graph is not None
    graph = dataclasses.replace(with_memory(snapshot.graph), thread_info=THREAD_INFO)
    return dataclasses.replace(
        snapshot,
        graph=graph,
        hints=demo_hints(),
        what_ifs=demo_what_ifs(),
        what_if_options=demo_what_if_options(),
    )


def resnet18_diff() -> RunDiff:
    """The demo run against the same model with its batch norms folded away."""
    rows = resnet18_rows()
    folded = {bn for _, bn in CONV_BN_PAIRS}
    after_rows = [r for r in rows if r[0] not in folded]
    # Folding makes each conv a little dearer (it now adds a bias) and removes the batch norm.
    after_medians = [r[6] * (1.03 if r[0] in {c for c, _ in CONV_BN_PAIRS} else 1.0) for r in after_rows]
    before = make_snapshot(resnet18_graph(), resnet18_medians())
    after_graph = build_graph(after_rows, model="resnet18", inputs=("1×3×224×224",))
    after = make_snapshot(after_graph, after_medians)
    return diff_reports(ReportData.from_snapshot(before), ReportData.from_snapshot(after))
