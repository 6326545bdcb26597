"""A compiled model's kernel calls as nodes: what each computes, where it comes from, how it is named.

A kernel call (:class:`Kernel`) knows the post-grad FX nodes Inductor generated it from
(:mod:`~fxtui.ops.kernel_code`); here those become the TorchDynamo source nodes it fuses,
named as ``--capture dynamo`` names them, the module they run in, the user's line, and one display
name per call: ``layer1.0 · bn+relu+add (fused)`` (a generated kernel of several source nodes),
``layer1.0.conv1 · conv (kernel)`` (of one), ``layer1.0.conv1 · convolution`` (an extern call).
Each is charged to the common ancestor of its source nodes' modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fxtui.core.compilation import common_ancestor, kernel_text, kernel_type
from fxtui.core.nodes import NodeInfo, build_module_tree, module_ancestors
from fxtui.core.snapshot import GraphInfo
from fxtui.measure.capture.names import Namer
from fxtui.ops.kernel_code import KernelOrigin, ops_label

if TYPE_CHECKING:
    from fxtui.measure.capture.captured import CapturedModel
    from fxtui.measure.capture.compiled import CompiledRuns, CompiledTimer


@dataclass
class Kernel:
    """One timed kernel call: what it is and where it comes from."""

    origin: KernelOrigin
    graph: int
    sources: list[tuple[str, str]]
    """``(display name, module path)`` of each source node it computes, graph order."""
    source_line: str = ""


def kernel_label(kernel: Kernel) -> str:
    """What a kernel computes: an extern call's operation, or the source operations a generated kernel fuses."""
    labels = [d.rpartition(" · ")[2].split(" #")[0] for d, _ in kernel.sources]  # "conv2d #2" → "conv2d"
    return ops_label(kernel.origin.kernel, kernel.origin.extern, labels)


def kernel_names(kernels: list[Kernel]) -> list[str]:
    """One unique display name per kernel call: ``layer1.0 · bn+relu (fused)``, a repeat ``#2``."""
    used: dict[str, int] = {}
    names = []
    for kernel in kernels:
        path = common_ancestor([p for _, p in kernel.sources])
        base = f"{path} · {kernel_label(kernel)}" if path else kernel_label(kernel)
        n = used[base] = used.get(base, 0) + 1
        names.append(base if n == 1 else f"{base} #{n}")
    return names


def kernel_sources(
    origin: KernelOrigin, dynamo: dict[str, tuple[str, str, int]], namer: Namer
) -> list[tuple[str, str]]:
    """The TorchDynamo nodes a kernel's post-grad origins come from, graph order, as (display name, module path)."""
    found: dict[str, tuple[int, str]] = {}
    for node in origin.nodes:
        source = next(iter(node.meta.get("from_node") or ()), None)
        name = getattr(source, "name", None)
        if name in dynamo:
            display, path, index = dynamo[name]
            found.setdefault(display, (index, path))
            continue
        path, _ = namer.module_of(node)  # a node lowering made with no TorchDynamo node behind it
        target = getattr(node.target, "overloadpacket", node.target)
        label = str(getattr(target, "__name__", target))
        display = f"{path} · {label}" if path else label
        found.setdefault(display, (10**9, path))
    return [(d, p) for d, (_, p) in sorted(found.items(), key=lambda item: item[1][0])]


def kernel_source_line(origin: KernelOrigin) -> str:
    """The user's line of the kernel's first origin with a stack trace: ``model.py:12  return self.conv(x)``."""
    from fxtui.measure.analysis.source import short_path

    for node in origin.nodes:
        trace = node.meta.get("stack_trace") or ""
        lines = [line.strip() for line in trace.strip().splitlines()]
        for i in range(len(lines) - 2, -1, -1):
            if lines[i].startswith("File "):
                head = lines[i].split(",")
                path = head[0].removeprefix("File ").strip('"')
                number = head[1].strip().removeprefix("line ") if len(head) > 1 else ""
                return f"{short_path(path)}:{number}  {lines[i + 1]}"
    return ""


def describe_kernels(
    timer: CompiledTimer,
    captured: CapturedModel,
    classes: dict[str, str],
    *,
    model: str,
    inputs: tuple[str, ...],
    dtype: str,
    threads: int,
) -> GraphInfo:
    """The kernel calls as nodes, each under its source nodes' common module; every module with eager ops a line."""
    infos = []
    rooted = 0
    for i, (kernel, name) in enumerate(zip(timer.kernels, timer.names, strict=True)):
        paths = tuple(p for _, p in kernel.sources)
        fused = tuple(d for d, _ in kernel.sources)
        path = common_ancestor(list(paths))
        rooted += path == ""
        infos.append(
            NodeInfo(
                name=name,
                index=i,
                op="call_function",
                target=kernel.origin.kernel,
                type_name=kernel_type(kernel_label(kernel)),
                module_path=path,
                node_text=kernel_text(kernel.origin.kernel, fused),
                source=kernel.source_line,
                graph=kernel.graph,
                kernel=kernel.origin.kernel,
                fused_nodes=fused,
                fused_modules=paths,
            )
        )
    runs: CompiledRuns = captured.notes  # type: ignore[assignment]
    if rooted:
        runs.root_reason = (
            f"{rooted} of {len(infos)} kernel calls are charged to the root: they fuse nodes of several top-level "
            "modules, or of the model's own forward"
        )
    # Every module the eager run has ops in gets a line, those Inductor fused whole into an ancestor's kernel too:
    # their eager time has to show somewhere, beside where their work went.
    eager_paths = list(dict.fromkeys(runs.eager_paths))
    all_classes = {"": model, **{p: c for p, c in classes.items() if p}}
    for path, sub in runs.module.named_modules():
        all_classes.setdefault(path, type(sub).__name__)
    for info in infos:
        for ancestor in module_ancestors(info.module_path):
            all_classes.setdefault(ancestor, "")
    return GraphInfo(
        model=model,
        inputs=inputs,
        dtype=dtype,
        threads=threads,
        nodes=tuple(infos),
        modules=build_module_tree(infos, all_classes, extra=eager_paths),
        capture="compiled",
        graphs=runs.graphs,
        breaks=captured.breaks,
    )
