"""Turn a traced graph into the torch-free :class:`~fxtui.engine.snapshot.GraphInfo`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
import torch.fx
from torch.fx.node import Node, _get_qualified_name

from fxtui.engine.snapshot import GraphInfo, NodeInfo, build_module_tree
from fxtui.engine.timing import ValueMeta


def describe_target(gm: torch.fx.GraphModule, node: Node) -> tuple[str, str]:
    """Display form and short type name of a node's target.

    ``call_module`` → (``Conv2d``, ``Conv2d``); ``call_function`` →
    (``operator.add``, ``add``); ``call_method`` → (``Tensor.view``, ``view``).
    """
    if node.op == "call_module":
        name = type(gm.get_submodule(str(node.target))).__name__
        return name, name
    if node.op == "call_function":
        try:
            qualified = _get_qualified_name(node.target)  # type: ignore[arg-type]
        except Exception:  # builtins and odd callables have no qualified name
            qualified = getattr(node.target, "__name__", repr(node.target))
        qualified = qualified.replace("_operator.", "operator.")
        return qualified, qualified.rpartition(".")[2]
    if node.op == "call_method":
        return f"Tensor.{node.target}", str(node.target)
    if node.op == "get_attr":
        return str(node.target), "get_attr"
    if node.op == "placeholder":
        return str(node.target), "input"
    return "output", "output"


def build_graph_info(
    gm: torch.fx.GraphModule,
    *,
    model: str,
    inputs: Sequence[str],
    dtype: str,
    threads: int,
    module_paths: Mapping[str, str],
    module_classes: Mapping[str, str],
    leaf_modules: Sequence[str] = (),
    meta: Sequence[ValueMeta] | None = None,
    sources: Mapping[str, str] | None = None,
) -> GraphInfo:
    """Describe ``gm``'s nodes and module tree for display and export."""
    graph_nodes = list(gm.graph.nodes)
    meta_by_name = {n.name: meta[i] for i, n in enumerate(graph_nodes)} if meta else {}
    nodes = []
    for index, node in enumerate(graph_nodes):
        target, type_name = describe_target(gm, node)
        m = meta_by_name.get(node.name)
        inputs_meta = [meta_by_name[a.name].shape for a in node.all_input_nodes if a.name in meta_by_name]
        nodes.append(
            NodeInfo(
                name=node.name,
                index=index,
                op=node.op,
                target=target,
                type_name=type_name,
                module_path=module_paths.get(node.name, ""),
                node_text=node.format_node() or node.name,
                shape=m.shape if m else "",
                dtype=m.dtype if m else "",
                input_shapes=tuple(inputs_meta),
                module_repr=_module_repr(gm, node),
                source=(sources or {}).get(node.name, ""),
            )
        )
    return GraphInfo(
        model=model,
        inputs=tuple(inputs),
        dtype=dtype,
        threads=threads,
        nodes=tuple(nodes),
        modules=build_module_tree(nodes, module_classes, leaf_modules),
        leaf_modules=tuple(leaf_modules),
    )


def _module_repr(gm: torch.fx.GraphModule, node: Node) -> str:
    if node.op != "call_module":
        return ""
    text = repr(gm.get_submodule(str(node.target)))
    # A leaf-fallback block can print hundreds of lines; the detail pane wants the gist.
    lines = text.splitlines()
    return "\n".join(lines[:12] + (["  …"] if len(lines) > 12 else []))
