"""The nodes the per-op timer found (:mod:`fxtui.core.op_nodes`), as a graph description the app and the report read.

Node names follow the TorchDynamo capture's rule — ``conv1 · convolution``, ``conv1 · ∇convolution_backward``,
``#2`` for a second position of a label in its module and phase — and every root's paths begin with its
class, but for the program's one model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from fxtui.core.compilation import kernel_text, kernel_type
from fxtui.core.generation import GENERATE_PHASES
from fxtui.core.nodes import NodeInfo, build_module_tree, module_ancestors
from fxtui.core.op_nodes import EagerNode, RootModule
from fxtui.core.snapshot import GraphInfo


def root_prefixes(roots: Iterable[RootModule]) -> dict[int, str]:
    """How each root's paths begin: nothing for the program's one model, its class for every other root."""
    ordered = sorted(roots, key=lambda r: r.index)
    models = [r for r in ordered if not r.loss]
    prefixes: dict[int, str] = {}
    used: dict[str, int] = {}
    for root in ordered:
        if len(models) == 1 and root is models[0]:
            prefixes[root.index] = ""
            continue
        n = used[root.class_name] = used.get(root.class_name, 0) + 1
        prefixes[root.index] = root.class_name if n == 1 else f"{root.class_name}_{n}"
    return prefixes


def node_path(prefixes: dict[int, str], node: EagerNode) -> str:
    """The module path a node is shown under (an optimizer's class, ``DataLoader``, ``""`` outside every module)."""
    if node.root < 0:
        return node.module_path
    return ".".join(p for p in (prefixes.get(node.root, ""), node.module_path) if p)


def eager_graph(
    nodes: Iterable[EagerNode],
    roots: Iterable[RootModule],
    *,
    model: str,
    inputs: tuple[str, ...] = (),
    dtype: str = "",
    threads: int = 0,
    training: bool = False,
    capture: str = "eager",
) -> GraphInfo:
    """The graph description of the nodes an eager capture found, in the order they were first seen.

    Names follow the TorchDynamo capture's rule: ``conv1 · convolution``, ``conv1 · ∇convolution_backward``,
    ``#2`` for the second of a label in its module and phase.
    """
    roots = list(roots)
    prefixes = root_prefixes(roots)
    infos: list[NodeInfo] = []
    for node in sorted(nodes, key=lambda n: n.id):
        path = node_path(prefixes, node)
        label = node.label + (f" #{node.occurrence}" if node.occurrence > 1 else "")
        if node.phase in GENERATE_PHASES:  # the same op runs in the prefill and in every decode step
            label += f" ({node.phase})"
        infos.append(
            NodeInfo(
                name=f"{path} · {label}" if path else label,
                index=len(infos),
                op="call_function",
                target=node.target,
                type_name=node.label.lstrip("∇"),
                module_path=path,
                node_text=f"{node.target}({', '.join(node.inputs)})" if node.inputs else node.target,
                shape=node.shape,
                input_shapes=node.inputs,
                phase=node.phase,
                source=node.source,
            )
        )
        if node.kernel:
            infos[-1] = _kernel_info(infos[-1], node, prefixes)
    classes = {"": model}
    for root in roots:
        prefix = prefixes.get(root.index, "")
        for path, cls in root.classes.items():
            classes[".".join(p for p in (prefix, path) if p)] = cls
    for info in infos:  # optimizers, the DataLoader, generate()'s loop, anything else without a module of its own
        for ancestor in module_ancestors(info.module_path):
            kind = "generate()" if info.phase in GENERATE_PHASES else info.phase
            classes.setdefault(ancestor, kind if kind in ("optimizer", "data", "generate()") else "")
    return GraphInfo(
        model=model,
        inputs=inputs,
        dtype=dtype,
        threads=threads,
        nodes=tuple(infos),
        modules=build_module_tree(infos, classes),
        capture=capture,
        training=training,
    )


def _kernel_info(info: NodeInfo, node: EagerNode, prefixes: dict[int, str]) -> NodeInfo:
    """A compiled kernel's :class:`NodeInfo`: what it fuses, and where."""
    prefix = prefixes.get(node.root, "")
    modules = tuple(".".join(p for p in (prefix, path) if p) for path in node.fused_modules)
    fused = tuple(f"{prefix}.{name}" if prefix and " · " in name else name for name in node.fused_nodes)
    return dataclasses.replace(
        info,
        kernel=node.kernel,
        fused_nodes=fused,
        fused_modules=modules,
        type_name=kernel_type(node.label.lstrip("∇")),
        node_text=kernel_text(node.kernel, fused),
    )
