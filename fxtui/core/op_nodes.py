"""What the eager capture found, as torch-free data: its nodes and its outermost modules.

Made in the profiled program (:mod:`fxtui.ops.recorder`), sent to the collector
(:mod:`fxtui.agent.sender`), which names and shows them without importing torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from fxtui.core.compilation import kernel_text, kernel_type
from fxtui.core.generation import GENERATE_PHASES
from fxtui.core.nodes import NodeInfo, build_module_tree, module_ancestors
from fxtui.core.snapshot import GraphInfo


@dataclass(frozen=True, slots=True)
class EagerNode:
    """One node the eager capture found: where it runs and what it is, torch-free (it crosses processes)."""

    id: int
    root: int
    """Which outermost module it runs under (the order they were first called); -1: outside every module."""
    module_path: str
    """The module's path inside its root (``""``: the root itself); for optimizer ops, the optimizer's class."""
    phase: str
    label: str
    """``convolution``, ``∇convolution_backward``, ``<compiled>``."""
    occurrence: int
    """1 for the first op of this label in its module and phase in a step, 2 for the second …"""
    target: str
    """``aten.convolution``."""
    shape: str = ""
    inputs: tuple[str, ...] = ()
    """Each input's shape, dtype and strides (or its value), once described."""
    source: str = ""
    """The user's line the op comes from, once described."""
    kernel: str = ""
    """A kernel of compiled code: Inductor's name for it (``cpp_fused_…``, ``extern_kernels.convolution``)."""
    fused_nodes: tuple[str, ...] = ()
    """A kernel's source operations, each named by its module (``block1.bn · batch_norm``)."""
    fused_modules: tuple[str, ...] = ()
    """The module path (in the node's root) of each of :attr:`fused_nodes`."""


@dataclass(frozen=True, slots=True)
class RootModule:
    """An outermost module: its class and the class of every module below it (by path)."""

    index: int
    class_name: str
    classes: dict[str, str]
    loss: bool = False
    """A loss module (``nn.CrossEntropyLoss``): a root of its own, never the one steps are counted by."""


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
