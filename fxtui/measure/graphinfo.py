"""Turn a captured model into the torch-free :class:`~fxtui.core.snapshot.GraphInfo`."""

from __future__ import annotations

from collections.abc import Sequence

import torch.fx
from torch.fx.node import Node

from fxtui.core.nodes import NodeInfo, build_module_tree
from fxtui.core.snapshot import GraphInfo
from fxtui.measure.capture.captured import CapturedModel
from fxtui.measure.capture.names import describe_target
from fxtui.measure.values import ValueMeta

__all__ = ["build_graph_info", "describe_target"]


def build_graph_info(
    captured: CapturedModel,
    *,
    model: str,
    inputs: Sequence[str],
    dtype: str,
    threads: int,
    meta: Sequence[ValueMeta] | None = None,
    calls: Sequence[int] | None = None,
) -> GraphInfo:
    """Describe every node of ``captured`` and its module tree for display and export.

    ``meta`` (one per node, capture order) gives output shapes; ``calls`` (one per graph)
    how often each graph runs in one run of the model.
    """
    nodes: list[NodeInfo] = []
    for part in captured.parts:
        graph_nodes = list(part.gm.graph.nodes)
        local = {n: part.offset + i for i, n in enumerate(graph_nodes)}
        for node, name in zip(graph_nodes, part.names, strict=True):
            index = local[node]
            target, type_name = describe_target(part.gm, node)
            m = meta[index] if meta and index < len(meta) else None
            input_shapes = tuple(meta[local[a]].shape for a in node.all_input_nodes if meta and local[a] < len(meta))
            nodes.append(
                NodeInfo(
                    name=name,
                    index=index,
                    op=node.op,
                    target=target,
                    type_name=type_name,
                    module_path=captured.module_paths.get(name, ""),
                    node_text=node.format_node() or node.name,
                    shape=m.shape if m else "",
                    dtype=m.dtype if m else "",
                    nonfinite=m.nonfinite if m else "",
                    input_shapes=input_shapes,
                    module_repr=_module_repr(part.gm, node),
                    graph=part.index,
                    calls=calls[part.index] if calls else 1,
                    phase=part.phase,
                    gradients=captured.gradients.get(name, ()),
                )
            )
    return GraphInfo(
        model=model,
        inputs=tuple(inputs),
        dtype=dtype,
        threads=threads,
        nodes=tuple(nodes),
        modules=build_module_tree(nodes, captured.module_classes, captured.leaf_modules),
        leaf_modules=tuple(captured.leaf_modules),
        capture=captured.capture,
        capture_reason=captured.reason,
        graphs=len(captured.parts),
        breaks=captured.breaks,
        training=captured.training,
        loss=captured.loss,
        optimizer=captured.optimizer,
    )


def _module_repr(gm: torch.fx.GraphModule, node: Node) -> str:
    if node.op != "call_module":
        return ""
    text = repr(gm.get_submodule(str(node.target)))
    # A leaf-fallback block can print hundreds of lines; the detail pane wants the gist.
    lines = text.splitlines()
    return "\n".join(lines[:12] + (["  …"] if len(lines) > 12 else []))
