"""Immutable data the engine hands to its consumers (the UI, reports, exports).

Nothing here imports torch: the UI process may import this module without paying
for torch, and every value is a plain Python object that pickles cheaply. Rows are
keyed by the FX node name (``node.name``), never by a ``torch.fx.Node``.

Two kinds of object travel:

* :class:`GraphInfo` describes what was traced. It is built once per session.
* :class:`Snapshot` carries the statistics at one moment. A running session
  publishes a fresh one every few hundred milliseconds; each refers to the same
  ``GraphInfo``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

from fxtui.engine.findings import AtenOp, Hint, MachinePeaks, WhatIf

#: The six FX opcodes, in the order the UI lists them.
OPCODES: tuple[str, ...] = (
    "placeholder",
    "get_attr",
    "call_function",
    "call_method",
    "call_module",
    "output",
)

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


class State(str, enum.Enum):
    """Where a profiling session is in its life."""

    LOADING = "loading"
    TRACING = "tracing"
    WARMING_UP = "warming up"
    RUNNING = "running"
    PAUSED = "paused"
    ERROR = "error"
    DONE = "done"


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


def build_module_tree(
    nodes: Sequence[NodeInfo], module_classes: Mapping[str, str], leaf_modules: Sequence[str] = ()
) -> dict[str, ModuleInfo]:
    """The module tree (root ``""`` → ``layer1`` → ``layer1.0``) holding every node's path."""
    direct: dict[str, list[str]] = {"": []}
    children: dict[str, list[str]] = {"": []}

    def ensure(path: str) -> None:
        if path in direct:
            return
        parent = path.rpartition(".")[0]
        ensure(parent)
        direct[path] = []
        children[path] = []
        children[parent].append(path)

    for node in nodes:
        ensure(node.module_path)
        direct[node.module_path].append(node.name)
    leaves = set(leaf_modules)
    return {
        path: ModuleInfo(
            path=path,
            class_name=module_classes.get(path, ""),
            parent=None if path == "" else path.rpartition(".")[0],
            children=tuple(children[path]),
            nodes=tuple(direct[path]),
            leaf_fallback=path in leaves,
        )
        for path in direct
    }


@dataclass(frozen=True)
class GraphInfo:
    """The traced model as the UI and reports see it."""

    model: str
    inputs: tuple[str, ...]
    """One description per example input, e.g. ``"5×3×224×224"``."""
    dtype: str
    threads: int
    nodes: tuple[NodeInfo, ...]
    """Every FX node, graph order."""
    modules: Mapping[str, ModuleInfo]
    """Every module path on the tree, root (``""``) included."""
    leaf_modules: tuple[str, ...] = ()
    peaks: MachinePeaks | None = None
    """This machine's measured ceilings (matmul GFLOP/s, copy GB/s) at the session's threads."""
    thread_info: tuple[str, ...] = ()
    """Threads, environment and build flags, one line each."""
    thread_warnings: tuple[str, ...] = ()
    capture: str = "fx"
    """Which capture produced the graphs: ``fx`` (torch.fx.symbolic_trace) or ``dynamo`` (TorchDynamo)."""
    capture_reason: str = ""
    """Why that capture ran, when it was not the first choice (``auto`` switching to TorchDynamo)."""
    graphs: int = 1
    breaks: tuple[GraphBreak, ...] = ()
    """Graph breaks, in the order TorchDynamo met them."""

    @cached_property
    def by_name(self) -> Mapping[str, NodeInfo]:
        """Nodes keyed by name."""
        return {n.name: n for n in self.nodes}

    def node(self, name: str) -> NodeInfo:
        """The node called ``name``."""
        return self.by_name[name]

    def subtree_nodes(self, path: str) -> list[str]:
        """Names of all nodes at or below module ``path``, graph order."""
        if path == "":
            return [n.name for n in self.nodes]
        prefix = path + "."
        return [n.name for n in self.nodes if n.module_path == path or n.module_path.startswith(prefix)]


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


@dataclass(frozen=True, slots=True)
class RunError:
    """A failure inside the model during a run."""

    message: str
    node: str | None = None
    runs_failed: int = 1


@dataclass(frozen=True, slots=True)
class RunFigures:
    """How far per-node figures can be trusted, from the two run medians and the node sum."""

    fidelity: float | None
    """Sum of node medians ÷ uninstrumented run median (1.0: the nodes account for the whole run)."""
    overhead: float | None
    """Profiled-run median ÷ uninstrumented run median (the cost of profiling)."""
    unattributed_s: float | None
    """Uninstrumented run time no node accounts for: the Python glue between ops."""

    @classmethod
    def of(cls, attributed_s: float | None, run_median_s: float | None, eager_median_s: float | None) -> RunFigures:
        """Figures from the sum of node medians and the profiled and uninstrumented run medians."""
        known = attributed_s is not None and bool(eager_median_s)
        return cls(
            fidelity=attributed_s / eager_median_s if known else None,  # type: ignore[operator]
            overhead=run_median_s / eager_median_s if eager_median_s and run_median_s is not None else None,
            unattributed_s=eager_median_s - attributed_s if known else None,  # type: ignore[operator]
        )


class RunFiguresMixin:
    """``fidelity``, ``overhead`` and ``unattributed_s`` for anything that has ``figures``."""

    __slots__ = ()

    @property
    def figures(self) -> RunFigures:
        raise NotImplementedError

    @property
    def fidelity(self) -> float | None:
        """Sum of node medians ÷ uninstrumented run median (1.0: the nodes account for the whole run)."""
        return self.figures.fidelity

    @property
    def overhead(self) -> float | None:
        """Profiled-run median ÷ uninstrumented run median (the cost of profiling)."""
        return self.figures.overhead

    @property
    def unattributed_s(self) -> float | None:
        """Uninstrumented run time no node accounts for: the Python glue between ops."""
        return self.figures.unattributed_s


@dataclass(frozen=True, slots=True)
class Snapshot(RunFiguresMixin):
    """The state of a profiling session at one moment."""

    graph: GraphInfo | None
    state: State
    seq: int = 0
    runs: int = 0
    run_median_s: float | None = None
    """Median wall time of one profiled run."""
    eager_median_s: float | None = None
    """Median wall time of the same graph run uninstrumented, interleaved."""
    nodes: Mapping[str, NodeStats] = field(default_factory=dict)
    modules: Mapping[str, ModuleStats] = field(default_factory=dict)
    error: RunError | None = None
    message: str = ""
    """A one-line status for the user (what is happening, or what went wrong)."""
    aten: Mapping[str, tuple[AtenOp, ...]] = field(default_factory=dict)
    """Aten operators inside the nodes explained so far (see ``SnapshotSource.explain``)."""
    hints: tuple[Hint, ...] | None = None
    """Suggestions, once asked for (see ``SnapshotSource.request_hints``)."""
    what_if: WhatIf | None = None
    """The Conv-BN folding tried and measured, once asked for (``SnapshotSource.try_fusion``)."""
    faults_per_run: float | None = None
    """Median minor page faults of the process per profiled run."""
    malloc: str = ""
    """How the process hands freed memory back (``fxtui.engine.allocator``): keep, glibc or system."""
    reference_median_s: float | None = None
    """Median wall time of the model run uncaptured, for reference (TorchDynamo captures only)."""
    late_graphs: int = 0
    """Graphs TorchDynamo compiled after capture (recompiles): they run untimed."""

    @property
    def fault_warning(self) -> str:
        """A sentence when page faults inflate node times, else ``""``."""
        return page_fault_warning(self.faults_per_run, self.malloc)

    @property
    def attributed_s(self) -> float:
        """Sum of all node medians."""
        return sum(s.median_s for s in self.nodes.values())

    @property
    def figures(self) -> RunFigures:
        """Fidelity, overhead and the unattributed remainder of these statistics."""
        return RunFigures.of(self.attributed_s if self.nodes else None, self.run_median_s, self.eager_median_s)


def module_stats(graph: GraphInfo, nodes: dict[str, NodeStats], run_s: float) -> dict[str, ModuleStats]:
    """Inclusive and self time of every module path, from the node medians."""
    inclusive = dict.fromkeys(graph.modules, 0.0)
    own = dict.fromkeys(graph.modules, 0.0)
    counts = dict.fromkeys(graph.modules, 0)
    for info in graph.nodes:
        stats = nodes.get(info.name)
        t = stats.median_s if stats else 0.0
        path = info.module_path
        own[path] += t
        while True:
            inclusive[path] += t
            counts[path] += 1
            if path == "":
                break
            path = path.rpartition(".")[0]
    return {
        p: ModuleStats(
            path=p, inclusive_s=inclusive[p], self_s=own[p], pct=100.0 * inclusive[p] / run_s, nodes=counts[p]
        )
        for p in graph.modules
    }


def is_unsteady(median_s: float, min_s: float) -> bool:
    """The :attr:`NodeStats.unsteady` test on plain figures (the hints apply it too)."""
    return min_s > 0 and median_s >= UNSTEADY_RATIO * min_s and median_s - min_s >= UNSTEADY_MIN_S


#: Minor page faults per run above which node times are dominated by first-touch memory:
#: a 4 KiB page each, so 1,000 faults are 4 MB of memory mapped afresh every run.
PAGE_FAULT_WARNING = 1000


def page_fault_warning(faults_per_run: float | None, malloc: str = "") -> str:
    """Say so when each run maps large buffers afresh (the allocator returns them to the OS)."""
    if faults_per_run is None or faults_per_run < PAGE_FAULT_WARNING:
        return ""
    said = f"{faults_per_run:,.0f} page faults per run (~{faults_per_run * 4096 / 2**20:.0f} MB touched afresh): "
    if malloc == "keep":
        return said + "the model maps new memory every run even though freed memory is kept, and its nodes pay for it"
    return said + (
        "the allocator returns large buffers to the OS and the nodes that refill them pay for it; "
        "fxtui's --malloc keep (the default on the command line; fxtui.keep_freed_memory() from Python) "
        "or a caching allocator (jemalloc or tcmalloc via LD_PRELOAD) removes this"
    )


class SnapshotSource(Protocol):
    """Anything that produces snapshots: a live session, a saved file, a test fake.

    ``run`` blocks in a worker thread and calls ``publish`` with each new snapshot
    until ``stop`` is called; the other methods are called from the UI thread and
    must return at once.
    """

    def run(self, publish: Callable[[Snapshot], None]) -> None: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def reset(self) -> None: ...

    def stop(self) -> None: ...

    def explain(self, node: str) -> None:
        """Ask for the aten breakdown of ``node``; later snapshots carry it in ``aten``."""

    def request_hints(self) -> None:
        """Ask for suggestions from the current statistics; later snapshots carry them in ``hints``."""

    def try_fusion(self) -> None:
        """Ask to fold Conv-BN pairs and time the result against the original; see ``what_if``."""
