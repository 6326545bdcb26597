"""The torch-free data every part of fxtui shares about nodes and modules.

One node is described once: :class:`NodeInfo` holds what capture and analysis found
(name, op, target, module path, shape, FLOPs, source line), :class:`NodeStats` what the
timed runs measured, and :class:`NodeRow` the two together with the rates derived from
them (what reports, exports and ``fxtui diff`` work with). Modules are paths on a tree
(``""`` is the root); :func:`module_ancestors` is the one walk up that tree.

Nothing here imports torch, so the UI process and ``fxtui diff`` can use all of it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fxtui.core.column_table import column_map

#: A node is flagged noisy when its IQR exceeds this fraction of its median
#: (the threshold torch.utils.benchmark uses).
NOISY_IQR_RATIO = 0.1

#: A node is flagged unsteady when its median is at least this many times its fastest
#: run, and the difference is at least UNSTEADY_MIN_S (below that, clock and call
#: overhead dominate). Measured on resnet18 5×3×224×224 with 2 threads on a 2-core
#: machine: in each session six to nine batch-norm, add and downsample nodes took
#: 2-7× their fastest run in nearly every run (bimodal, so their IQR stays small),
#: and which nodes it hit changed from session to session, and with it their rank.
UNSTEADY_RATIO = 2.0
UNSTEADY_MIN_S = 20e-6


#: The phases of a training step, in the order a step runs them (inference nodes have none); a program's
#: nodes (``fxtui run``) may also be in its data loading, its collectives or in its own code between the
#: model's calls; a ``generate()`` call's (``--generate``) are its prefill and its decode steps.
PHASES = ("forward", "backward", "optimizer", "data", "comm", "other", "prefill", "decode")


def module_ancestors(path: str) -> list[str]:
    """The root first, then every module down to ``path``: ``"a.b"`` → ``["", "a", "a.b"]``."""
    out = [""]
    if path:
        parts = path.split(".")
        out += [".".join(parts[: i + 1]) for i in range(len(parts))]
    return out


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """What is known about one FX node without running it repeatedly.

    ``target`` is the display form (``Conv2d``, ``operator.add``, ``torch.flatten``,
    ``.view``); ``type_name`` is the short name a user filters by (``Conv2d``,
    ``add``, ``flatten``, ``view``).
    """

    name: str
    index: int
    op: str
    target: str
    type_name: str
    module_path: str
    node_text: str
    shape: str = ""
    dtype: str = ""
    input_shapes: tuple[str, ...] = ()
    module_repr: str = ""
    source: str = ""
    """Where the node comes from in the model's code: ``file.py:92  out = self.conv1(x)``."""
    forward_source: str = ""
    """For a ``call_module`` node: where its class's ``forward`` is defined."""
    flops: float | None = None
    """FLOPs of one call (``torch.utils.flop_counter``); None when not measured."""
    bytes_moved: float | None = None
    """Bytes read (inputs, parameters) plus bytes written (outputs) by one call."""
    params: int | None = None
    graph: int = 0
    """Which captured graph the node is in (0 unless the capture split the model)."""
    calls: int = 1
    """How often the node runs in one run of the model (a graph reused in a loop runs more than once)."""
    phase: str = ""
    """In a training step: ``forward``, ``backward`` or ``optimizer``; ``""`` for inference."""
    gradients: tuple[str, ...] = ()
    """For a forward node of a training step: the backward nodes that differentiate it."""
    output_bytes: int | None = None
    """New bytes holding the node's outputs (0 for a view or an in-place op); None when not measured."""
    alloc_bytes: int | None = None
    """Bytes allocated while the node ran: its outputs plus temporaries and workspaces."""
    live_bytes: int | None = None
    """Activation bytes alive right after the node (parameters and inputs apart)."""
    saved_bytes: int | None = None
    """For a forward node of a training step: bytes of its outputs saved for the backward graphs."""
    page_faults: int | None = None
    """Minor page faults the process took while the node ran, in the memory pass's run: the node that
    touches freshly mapped memory first pays for it."""
    nonfinite: str = ""
    """What the node's output held in the first run: ``"nan"`` (a NaN), ``"inf"`` (an infinity, no NaN)
    or ``""`` (finite values only)."""
    kernel: str = ""
    """With ``--compile``: the kernel Inductor generated or the extern call it makes
    (``cpp_fused__native_batch_norm_legit_no_training_relu_3``, ``extern_kernels.convolution``)."""
    fused_nodes: tuple[str, ...] = ()
    """With ``--compile``: the source nodes (TorchDynamo's, named as ``--capture dynamo`` names them) the kernel
    computes."""
    fused_modules: tuple[str, ...] = ()
    """With ``--compile``: the module path of each of :attr:`fused_nodes`; the node's ``module_path`` is their
    common ancestor."""


@dataclass(frozen=True, slots=True)
class GraphBreak:
    """Where TorchDynamo stopped one graph and started another, and why."""

    reason: str
    """TorchDynamo's reason, first line: ``Unsupported Tensor.item() call …``."""
    source: str = ""
    """The user's line that caused it: ``model.py:12  if x.sum().item() > 0:``."""


@dataclass(frozen=True, slots=True)
class ModuleInfo:
    """One entry of the module tree. The root has the path ``""``."""

    path: str
    class_name: str
    parent: str | None
    children: tuple[str, ...]
    nodes: tuple[str, ...]
    """Names of the FX nodes directly in this module (not in its children), graph order."""
    leaf_fallback: bool = False
    """True when tracing kept this module whole because its code could not be traced."""
    fused: tuple[str, ...] = ()
    """With ``--compile``: kernels charged to a module above this one that compute some of its (subtree's) source
    nodes, graph order. A module Inductor fused whole into such kernels holds no node and has only these."""


def build_module_tree(
    nodes: Sequence[NodeInfo],
    module_classes: Mapping[str, str],
    leaf_modules: Sequence[str] = (),
    extra: Iterable[str] = (),
) -> dict[str, ModuleInfo]:
    """The module tree (root ``""`` → ``layer1`` → ``layer1.0``) holding every node's path.

    ``extra`` are module paths the tree holds even with no node of their own (a compiled model's modules
    whose work Inductor fused into a kernel charged to an ancestor); each module records such kernels
    (:attr:`ModuleInfo.fused`).
    """
    direct: dict[str, list[str]] = {"": []}
    children: dict[str, list[str]] = {"": []}

    def add(path: str) -> None:
        for parent, child in itertools.pairwise(module_ancestors(path)):
            if child not in direct:
                direct[child] = []
                children[child] = []
                children[parent].append(child)

    for node in nodes:
        add(node.module_path)
        direct[node.module_path].append(node.name)
    for path in extra:
        add(path)
    fused: dict[str, list[str]] = {}
    for node in nodes:
        # The modules between the one a kernel is charged to and each module it fuses nodes of.
        below = len(module_ancestors(node.module_path))
        for path in dict.fromkeys(node.fused_modules):
            chain = module_ancestors(path)
            if chain[below - 1 : below] != [node.module_path]:
                continue  # not under the module it is charged to (a kernel always is: their common ancestor)
            for inner in (p for p in chain[below:] if p in direct):
                held = fused.setdefault(inner, [])
                if node.name not in held:
                    held.append(node.name)
    leaves = set(leaf_modules)
    return {
        path: ModuleInfo(
            path=path,
            class_name=module_classes.get(path, ""),
            parent=None if path == "" else path.rpartition(".")[0],
            children=tuple(children[path]),
            nodes=tuple(direct[path]),
            leaf_fallback=path in leaves,
            fused=tuple(fused.get(path, ())),
        )
        for path in direct
    }


@dataclass(frozen=True, slots=True)
class NodeStats:
    """Statistics of one node's timings, in seconds.

    ``median_s``, ``p90_s``, ``iqr_s`` and ``recent`` come from a bounded window of
    the latest samples; ``count``, ``mean_s``, ``min_s`` and ``max_s`` from running
    aggregates over every sample since the last reset.
    """

    count: int
    median_s: float
    mean_s: float
    p90_s: float
    min_s: float
    max_s: float
    iqr_s: float
    pct: float
    """Median as a share of the profiled run's median, in percent."""
    recent: tuple[float, ...] = ()
    """The latest samples, oldest first (for a sparkline)."""
    q25_s: float = 0.0
    """The first quartile of the window: with ``q75_s``, the range around the median."""
    q75_s: float = 0.0
    """The third quartile of the window."""
    rank: int = -1
    """In a distributed job (``fxtui run`` of ``torchrun``): the rank these figures are from; -1 elsewhere."""
    rank_min_s: float = 0.0
    """In a distributed job: the fastest rank's median of this node."""
    rank_max_s: float = 0.0
    """In a distributed job: the slowest rank's median of this node."""
    slowest_rank: int = -1
    """In a distributed job: the rank whose median of this node is the largest."""
    calls_per_step: float = 0.0
    """In a program's profile (``fxtui run``): how many times the node ran per sampled step (a module called in a
    loop runs its nodes at every call; :attr:`median_s` is their sum in a step); 0 elsewhere."""
    node: int = -1
    """In a job across nodes: the node (torchrun's ``GROUP_RANK``) of :attr:`rank`; -1 elsewhere."""

    @property
    def noisy(self) -> bool:
        """True when the spread (IQR) exceeds a tenth of the median."""
        return self.median_s > 0 and self.iqr_s / self.median_s > NOISY_IQR_RATIO

    @property
    def unsteady(self) -> bool:
        """True when the typical run takes at least twice the node's fastest run.

        The operator did the same work in less time at least once, so most of the
        difference is not its arithmetic: memory placement, page faults, or the
        machine (another process, the hypervisor) — see :data:`UNSTEADY_RATIO`.
        """
        return is_unsteady(self.median_s, self.min_s)


@dataclass(frozen=True, slots=True)
class Spread:
    """A figure over the runs: its median and the interquartile range around it (p25–p75)."""

    median: float
    q25: float
    q75: float

    def overlaps(self, other: Spread) -> bool:
        """True when the two ranges share a value: a difference between them is not yet evidence."""
        return self.q25 <= other.q75 and other.q25 <= self.q75


@dataclass(frozen=True, slots=True)
class ModuleStats:
    """Time attributed to one module path."""

    path: str
    inclusive_s: float
    """Sum of node medians in the module's subtree."""
    self_s: float
    """Sum of node medians directly in the module."""
    pct: float
    """Inclusive time as a share of the profiled run's median, in percent."""
    nodes: int
    """Nodes in the subtree."""
    forward_s: float = 0.0
    """In a training step: inclusive time of the subtree's forward nodes."""
    backward_s: float = 0.0
    """In a training step: inclusive time of the backward nodes charged to the subtree."""
    prefill_s: float = 0.0
    """In a ``generate()`` call: inclusive time of the subtree's prefill nodes (per call)."""
    decode_s: float = 0.0
    """In a ``generate()`` call: inclusive time of the subtree's decode nodes (per token)."""


def node_medians(stats: Mapping[str, NodeStats]) -> Mapping[str, float]:
    """Each node's median, read by column from a :class:`~fxtui.core.column_table.ColumnTable` (no per-node objects)."""
    return column_map(stats, "median_s")


@dataclass(frozen=True, slots=True)
class ModuleMemory:
    """Memory figures of one module's subtree, rolled up from its nodes' (bytes)."""

    output_bytes: int
    alloc_bytes: int | None
    peak_live_bytes: int
    peak_node: str
    saved_bytes: int | None


def module_memory(nodes: Iterable[NodeInfo]) -> dict[str, ModuleMemory]:
    """Each module path's memory over its subtree: output and allocated bytes summed, the live peak inside it.

    Empty when no node's memory was measured.
    """
    acc: dict[str, list[Any]] = {}
    for info in nodes:
        if info.output_bytes is None:
            continue
        live = info.live_bytes or 0
        for path in module_ancestors(info.module_path):
            a = acc.setdefault(path, [0, None, -1, "", None])
            a[0] += info.output_bytes
            if info.alloc_bytes is not None:
                a[1] = (a[1] or 0) + info.alloc_bytes
            if live > a[2]:
                a[2], a[3] = live, info.name
            if info.saved_bytes is not None:
                a[4] = (a[4] or 0) + info.saved_bytes
    return {path: ModuleMemory(a[0], a[1], max(a[2], 0), a[3], a[4]) for path, a in acc.items()}


def phase_totals(nodes: Iterable[NodeInfo], stats: Mapping[str, NodeStats]) -> dict[str, float]:
    """Sum of node medians per phase of a training step (``forward``, ``backward``, ``optimizer``)."""
    totals: dict[str, float] = {}
    medians = node_medians(stats)
    for info in nodes:
        median = medians.get(info.name)
        if info.phase and median is not None:
            totals[info.phase] = totals.get(info.phase, 0.0) + median
    return totals


def is_unsteady(median_s: float, min_s: float) -> bool:
    """The :attr:`NodeStats.unsteady` test on plain figures (the hints apply it too)."""
    return min_s > 0 and median_s >= UNSTEADY_RATIO * min_s and median_s - min_s >= UNSTEADY_MIN_S
