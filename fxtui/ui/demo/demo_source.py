"""A deterministic, torch-free demo source: a resnet18-shaped graph with plausible CPU timings.

Used for screenshots, by the UI tests' fake source and by the benchmarks. Nothing here is measured: the
numbers are fixed so that pictures and tests come out the same on every machine.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from fxtui.core.nodes import NodeInfo, NodeStats, build_module_tree, module_ancestors
from fxtui.core.rollup import module_stats
from fxtui.core.snapshot import GraphInfo, RunError, Snapshot, State

# (name, op, target, type_name, module path, output shape, median in µs)
_Row = tuple[str, str, str, str, str, str, float]

_CONV_REPR = "Conv2d({c_in}, {c_out}, kernel_size=({k}, {k}), stride=({s}, {s}), padding=({p}, {p}), bias=False)"


def _block(layer: int, index: int, c_in: int, c_out: int, hw: int, downsample: bool, scale: float) -> list[_Row]:
    """The FX nodes of one torchvision BasicBlock, named as symbolic tracing names them."""
    path = f"layer{layer}.{index}"
    pre = f"layer{layer}_{index}"
    shape = f"1×{c_out}×{hw}×{hw}"
    # A call_module node belongs to the submodule it calls (layer1.0.conv1), as fxtui's tracer
    # records it; functions called in the block's forward (the add) belong to the block.
    rows: list[_Row] = [
        (f"{pre}_conv1", "call_module", "Conv2d", "Conv2d", f"{path}.conv1", shape, 410 * scale),
        (f"{pre}_bn1", "call_module", "BatchNorm2d", "BatchNorm2d", f"{path}.bn1", shape, 38 * scale),
        (f"{pre}_relu", "call_module", "ReLU", "ReLU", f"{path}.relu", shape, 14 * scale),
        (f"{pre}_conv2", "call_module", "Conv2d", "Conv2d", f"{path}.conv2", shape, 395 * scale),
        (f"{pre}_bn2", "call_module", "BatchNorm2d", "BatchNorm2d", f"{path}.bn2", shape, 36 * scale),
    ]
    if downsample:
        rows += [
            (f"{pre}_downsample_0", "call_module", "Conv2d", "Conv2d", f"{path}.downsample.0", shape, 62 * scale),
            (f"{pre}_downsample_1", "call_module", "BatchNorm2d", "BatchNorm2d", f"{path}.downsample.1", shape, 21),
        ]
    add = "add" if (layer, index) == (1, 0) else f"add_{2 * (layer - 1) + index}"
    rows += [
        (add, "call_function", "operator.add", "add", path, shape, 19 * scale),
        # BasicBlock calls its one ReLU twice: the second call is another node of the same module.
        (f"{pre}_relu_1", "call_module", "ReLU", "ReLU", f"{path}.relu", shape, 12 * scale),
    ]
    return rows


def resnet18_rows() -> list[_Row]:
    """resnet18's FX nodes as rows: name, op, target, type name, module path, output shape, median µs."""
    rows: list[_Row] = [
        ("x", "placeholder", "x", "input", "", "1×3×224×224", 0.4),
        ("conv1", "call_module", "Conv2d", "Conv2d", "conv1", "1×64×112×112", 1480.0),
        ("bn1", "call_module", "BatchNorm2d", "BatchNorm2d", "bn1", "1×64×112×112", 182.0),
        ("relu", "call_module", "ReLU", "ReLU", "relu", "1×64×112×112", 71.0),
        ("maxpool", "call_module", "MaxPool2d", "MaxPool2d", "maxpool", "1×64×56×56", 240.0),
    ]
    widths = {1: 64, 2: 128, 3: 256, 4: 512}
    sizes = {1: 56, 2: 28, 3: 14, 4: 7}
    # Later layers have fewer pixels but more channels; per-block cost stays roughly level.
    scales = {1: 1.0, 2: 0.93, 3: 0.97, 4: 1.12}
    for layer in (1, 2, 3, 4):
        c_in = widths[layer - 1] if layer > 1 else 64
        for index in (0, 1):
            down = layer > 1 and index == 0
            rows += _block(
                layer,
                index,
                c_in if index == 0 else widths[layer],
                widths[layer],
                sizes[layer],
                down,
                scales[layer] * (1.04 if index == 0 else 1.0),
            )
    rows += [
        ("avgpool", "call_module", "AdaptiveAvgPool2d", "AdaptiveAvgPool2d", "avgpool", "1×512×1×1", 9.0),
        ("flatten", "call_function", "torch.flatten", "flatten", "", "1×512", 2.1),
        ("fc", "call_module", "Linear", "Linear", "fc", "1×1000", 61.0),
        ("output", "output", "output", "output", "", "1×1000", 0.3),
    ]
    return rows


_CLASSES = {
    "": "ResNet",
    "layer1": "Sequential",
    "layer2": "Sequential",
    "layer3": "Sequential",
    "layer4": "Sequential",
}


def _module_class(path: str) -> str:
    if path in _CLASSES:
        return _CLASSES[path]
    if path.endswith("downsample") or (path.startswith("stage") and "." not in path):
        return "Sequential"
    return "BasicBlock" if path.startswith("layer") else "Block"


def _node_text(name: str, op: str, target: str, module: str, prev: str) -> str:
    if op == "placeholder":
        return f"%{name} : [num_users=1] = placeholder[target={name}]"
    if op == "output":
        return f"return {prev}"
    if op == "call_function":
        args = f"(%{prev}, 1)" if target == "torch.flatten" else f"(%{prev}, %{prev})"
        return f"%{name} : [num_users=1] = call_function[target={target}](args = {args}, kwargs = {{}})"
    return f"%{name} : [num_users=1] = call_module[target={module}](args = (%{prev},), kwargs = {{}})"


def build_graph(rows: Sequence[_Row], *, model: str, inputs: tuple[str, ...], leaf: Iterable[str] = ()) -> GraphInfo:
    """A :class:`GraphInfo` from flat rows; the module tree is derived from the module paths."""
    nodes: list[NodeInfo] = []
    prev = ""
    prev_shape = inputs[0] if inputs else ""
    for index, (name, op, target, type_name, path, shape, _) in enumerate(rows):
        module_repr = ""
        if op == "call_module" and target == "Conv2d":
            c_in = prev_shape.split("×")[1] if prev_shape.count("×") >= 1 else "?"
            module_repr = _CONV_REPR.format(c_in=c_in, c_out=shape.split("×")[1], k=3, s=1, p=1)
        elif op == "call_module":
            module_repr = f"{target}()"
        nodes.append(
            NodeInfo(
                name=name,
                index=index,
                op=op,
                target=target,
                type_name=type_name,
                module_path=path,
                node_text=_node_text(name, op, target, path, prev),
                shape=shape,
                dtype="float32",
                input_shapes=(prev_shape,) if op != "placeholder" else (),
                module_repr=module_repr,
            )
        )
        prev, prev_shape = name, shape
    leaves = set(leaf)
    # A module that a call_module node calls is of that node's class (Conv2d); the rest are containers.
    called = {n.module_path: n.target for n in nodes if n.op == "call_module"}
    paths = {path for node in nodes for path in module_ancestors(node.module_path)}
    classes = {p: called.get(p) or _module_class(p) for p in paths}
    modules = build_module_tree(nodes, classes, tuple(leaves))
    return GraphInfo(
        model=model,
        inputs=inputs,
        dtype="float32",
        threads=2,
        nodes=tuple(nodes),
        modules=modules,
        leaf_modules=tuple(sorted(leaves)),
    )


def _recent(median_s: float, index: int, n: int = 24) -> tuple[float, ...]:
    """A fixed, wiggly sample history around ``median_s`` (deterministic)."""
    return tuple(median_s * (1.0 + 0.08 * (((i * 7 + index * 3) % 11) - 5) / 5) for i in range(n))


def make_snapshot(
    graph: GraphInfo,
    medians_us: Sequence[float],
    *,
    state: State = State.RUNNING,
    seq: int = 1,
    runs: int = 200,
    scale: float = 1.0,
    error: RunError | None = None,
    message: str = "",
) -> Snapshot:
    """A snapshot with the given per-node medians (µs, graph order), derived statistics and module totals.

    The module totals are the engine's own roll-up (:func:`~fxtui.core.rollup.module_stats`),
    as in a live session.
    """
    nodes: dict[str, NodeStats] = {}
    total = sum(medians_us) * scale * 1e-6
    run_s = total * 1.06
    for i, (info, med_us) in enumerate(zip(graph.nodes, medians_us, strict=True)):
        med = med_us * scale * 1e-6
        spread = 0.25 if i % 9 == 4 else 0.04  # every ninth node is noisy
        nodes[info.name] = NodeStats(
            count=runs,
            median_s=med,
            mean_s=med * 1.02,
            p90_s=med * (1 + spread * 1.5),
            min_s=med * 0.91,
            max_s=med * (1.4 + spread),
            iqr_s=med * spread,
            pct=100.0 * med / run_s,
            recent=_recent(med, i),
        )
    modules = module_stats(graph.nodes, graph.modules, nodes, run_s)
    return Snapshot(
        graph=graph,
        state=state,
        seq=seq,
        runs=runs,
        run_median_s=run_s,
        eager_median_s=total * 1.01,
        nodes=nodes,
        modules=modules,
        error=error,
        message=message,
    )


def resnet18_graph() -> GraphInfo:
    """The resnet18 graph as fxtui's tracer describes it (1×3×224×224, float32)."""
    return build_graph(resnet18_rows(), model="resnet18", inputs=("1×3×224×224",))


def resnet18_medians() -> list[float]:
    """Plausible per-node CPU medians for resnet18, µs, graph order."""
    return [row[6] for row in resnet18_rows()]


def synthetic_rows(n_nodes: int) -> list[_Row]:
    """``n_nodes`` nodes in a deep module tree: stage → block → (conv, bn, relu, add …) nodes."""
    kinds = [
        ("conv", "call_module", "Conv2d", "Conv2d", 300.0),
        ("bn", "call_module", "BatchNorm2d", "BatchNorm2d", 30.0),
        ("relu", "call_module", "ReLU", "ReLU", 10.0),
        ("add", "call_function", "operator.add", "add", 15.0),
        ("view", "call_method", "Tensor.view", "view", 2.0),
        ("linear", "call_module", "Linear", "Linear", 120.0),
        ("gelu", "call_function", "torch.nn.functional.gelu", "gelu", 20.0),
        ("mul", "call_function", "operator.mul", "mul", 12.0),
    ]
    per_block = len(kinds)
    blocks_per_stage = 25
    rows: list[_Row] = [("x", "placeholder", "x", "input", "", "8×256", 0.4)]
    i = 0
    while len(rows) < n_nodes - 1:
        stage, block = divmod(i // per_block, blocks_per_stage)
        kind, op, target, type_name, base = kinds[i % per_block]
        name = f"stage{stage}_{block}_{kind}_{i}"
        wiggle = 1.0 + ((i * 37) % 17) / 17.0
        rows.append((name, op, target, type_name, f"stage{stage}.{block}", "8×256", base * wiggle))
        i += 1
    rows.append(("output", "output", "output", "output", "", "8×256", 0.3))
    return rows


def synthetic_graph(n_nodes: int) -> tuple[GraphInfo, list[float]]:
    """A deep synthetic graph of ``n_nodes`` nodes and its fixed medians (µs)."""
    rows = synthetic_rows(n_nodes)
    return build_graph(rows, model=f"synthetic{n_nodes}", inputs=("8×256",)), [r[6] for r in rows]
