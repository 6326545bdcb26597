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
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from fxtui.core.column_table import column_total
from fxtui.core.compilation import CompiledSummary
from fxtui.core.findings import AtenOp, Disturbance, Hint, MachinePeaks, MemorySummary, WhatIf, WhatIfOption
from fxtui.core.generation import GENERATE_PHASES, GenerationSummary
from fxtui.core.nodes import (  # noqa: F401 (the data a snapshot is made of, importable from here too)
    GraphBreak,
    ModuleInfo,
    ModuleStats,
    NodeInfo,
    NodeStats,
    Spread,
    build_module_tree,
    is_unsteady,
    node_medians,
    phase_totals,
)
from fxtui.core.program_run import ProgramState, RankSummary, StepSummary
from fxtui.core.rollup import ModulePlan, module_stats  # noqa: F401 (importable from here too)

#: The six FX opcodes, in the order the UI lists them.
OPCODES: tuple[str, ...] = (
    "placeholder",
    "get_attr",
    "call_function",
    "call_method",
    "call_module",
    "output",
)


class State(str, enum.Enum):
    """Where a profiling session is in its life."""

    LOADING = "loading"
    TRACING = "tracing"
    WARMING_UP = "warming up"
    RUNNING = "running"
    PAUSED = "paused"
    STOPPED = "stopped"
    """The session stopped rerunning by itself (the model raised run after run); a Resume starts it again."""
    ERROR = "error"
    DONE = "done"


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
    """Which capture produced the graphs: ``fx`` (torch.fx.symbolic_trace), ``dynamo`` (TorchDynamo) or
    ``train`` (TorchDynamo and AOTAutograd: a training step's forward and backward graphs)."""
    capture_reason: str = ""
    """Why that capture ran, when it was not the first choice (``auto`` switching to TorchDynamo)."""
    graphs: int = 1
    breaks: tuple[GraphBreak, ...] = ()
    """Graph breaks, in the order TorchDynamo met them."""
    training: bool = False
    """True when a run is a training step (forward, backward, optimizer); nodes carry their phase."""
    loss: str = ""
    """How a training step's loss is made (``cross-entropy against fixed random labels …``)."""
    optimizer: str = ""
    """The optimizer a training step runs (``SGD(lr=0.001)``)."""
    memory: MemorySummary | None = None
    """The run's memory figures, once the memory pass has run (nodes then carry theirs)."""
    ranks: tuple[int, ...] = ()
    """The ranks of a distributed job (``fxtui run`` of ``torchrun``): the nodes carry every rank's spread."""
    value_warnings: tuple[str, ...] = ()
    """NaN anywhere, or an inf that reaches an output, in the first run (:mod:`fxtui.core.nonfinite`)."""

    @cached_property
    def module_plan(self) -> ModulePlan:
        """How node times roll up into modules (:func:`~fxtui.core.rollup.module_stats`), worked out once."""
        return ModulePlan(self.nodes, self.modules)

    @cached_property
    def generating(self) -> bool:
        """The nodes are ``generate()`` calls': each in the prefill or a decode step."""
        return any(n.phase in GENERATE_PHASES for n in self.nodes)

    @cached_property
    def by_name(self) -> Mapping[str, NodeInfo]:
        """Nodes keyed by name."""
        return {n.name: n for n in self.nodes}

    def node(self, name: str) -> NodeInfo:
        """The node called ``name``."""
        return self.by_name[name]


@dataclass(frozen=True, slots=True)
class RunError:
    """A failure inside the model during a run."""

    message: str
    node: str | None = None
    runs_failed: int = 1


@dataclass(frozen=True, slots=True)
class RunSummary:
    """How far per-node figures can be trusted, from the two run medians and the node sum."""

    fidelity: float | None
    """Sum of node medians ÷ uninstrumented run median (1.0: the nodes account for the whole run)."""
    overhead: float | None
    """Profiled-run median ÷ uninstrumented run median (the cost of profiling)."""
    unattributed_s: float | None
    """Uninstrumented run time no node accounts for: the Python glue between ops."""

    @classmethod
    def of(cls, attributed_s: float | None, run_median_s: float | None, eager_median_s: float | None) -> RunSummary:
        """Figures from the sum of node medians and the profiled and uninstrumented run medians."""
        known = attributed_s is not None and bool(eager_median_s)
        return cls(
            fidelity=attributed_s / eager_median_s if known else None,  # type: ignore[operator]
            overhead=run_median_s / eager_median_s if eager_median_s and run_median_s is not None else None,
            unattributed_s=eager_median_s - attributed_s if known else None,  # type: ignore[operator]
        )


@dataclass(frozen=True, slots=True)
class RunSpreads:
    """The run figures' ranges over the steps: p25–p75 of each step's own value."""

    run: Spread | None = None
    """Profiled runs' wall time, seconds."""
    eager: Spread | None = None
    """Uninstrumented runs' wall time, seconds."""
    overhead: Spread | None = None
    """Each step's profiled run ÷ the uninstrumented run beside it."""
    fidelity: Spread | None = None
    """Each step's sum of node times ÷ its uninstrumented run."""

    def to_dict(self) -> dict[str, list[float] | None]:
        """``{"run_range_s": [p25, median, p75], …}`` for a report's metadata."""
        return {f"{key}_range{unit}": [s.q25, s.median, s.q75] if s else None for key, unit, s in self._items()}

    @classmethod
    def from_dict(cls, meta: Mapping[str, object]) -> RunSpreads:
        """The spreads :meth:`to_dict` wrote; none for a file saved before they existed."""

        def get(key: str) -> Spread | None:
            value = meta.get(key)
            if not isinstance(value, list) or len(value) != 3:
                return None
            q25, median, q75 = (math.nan if v is None else float(v) for v in value)  # null: not finite
            return Spread(median, q25, q75)

        return cls(*(get(f"{key}_range{unit}") for key, unit, _ in cls()._items()))

    def _items(self) -> list[tuple[str, str, Spread | None]]:
        return [("run", "_s", self.run), ("eager", "_s", self.eager), ("overhead", "", self.overhead),
                ("fidelity", "", self.fidelity)]  # fmt: skip


class RunSummaryMixin:
    """``fidelity``, ``overhead`` and ``unattributed_s`` for anything that has ``figures``."""

    __slots__ = ()

    @property
    def figures(self) -> RunSummary:
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
class Snapshot(RunSummaryMixin):
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
    """Aten operators inside the nodes explained so far (``commands.Explain``)."""
    hints: tuple[Hint, ...] | None = None
    """Suggestions, once asked for (``commands.RequestHints``)."""
    what_ifs: tuple[WhatIf, ...] = ()
    """What-ifs measured so far, the latest of each name, in the order they were first asked for
    (``commands.MeasureWhatIfs``)."""
    what_if_progress: str = ""
    """What the what-if being measured is doing (``what-if bf16: pair 3 of 20``); ``""`` when none is."""
    what_if_options: tuple[WhatIfOption, ...] = ()
    """The what-ifs this session offers, each with why it cannot apply when it cannot."""
    faults_per_run: float | None = None
    """Median minor page faults of the process per profiled run."""
    malloc: str = ""
    """How the process hands freed memory back (``fxtui.measure.allocator``): keep, glibc or system."""
    reference_median_s: float | None = None
    """Median wall time of the model run uncaptured, for reference (TorchDynamo captures only)."""
    late_graphs: int = 0
    """Graphs TorchDynamo compiled after capture (recompiles): they run untimed."""
    nonfinite_steps: int = 0
    """Training steps whose loss was NaN or infinite."""
    spreads: RunSpreads = field(default_factory=RunSpreads)
    """The run figures' ranges over the steps."""
    disturbance: Disturbance | None = None
    """How much other work on the machine disturbed the steps."""
    program: ProgramState | None = None
    """A program profiled as it runs (``fxtui run``): what runs and how it is doing; None for a model."""
    steps: StepSummary | None = None
    """A program's steps: their phases and timeline (``fxtui run``)."""
    shapes: Mapping[str, tuple[tuple[str, int, float], ...]] = field(default_factory=dict)
    """Nodes that ran at several output shapes: each shape, how often, and its median (the row shows the most
    frequent one)."""
    generation: GenerationSummary | None = None
    """A ``generate()`` call's figures (``--generate``): time to first token, per token, the cache; None otherwise."""
    rank_summary: RankSummary | None = None
    """A distributed job: every rank's steps and phases, which rank is shown, and the straggler."""
    compiled: CompiledSummary | None = None
    """A compiled model (``--compile``): the compile, the kernels, the eager model's median and modules."""
    timelines: Mapping[int, list[tuple[str, float, float]]] = field(default_factory=dict)
    """A program's last profile (``State.DONE``): the latest sampled step of each rank, for a trace."""
    other_ranks: Mapping[int, Snapshot] = field(default_factory=dict)
    """A distributed job's last profile (``State.DONE``): every other rank's own snapshot, so that a report holds
    every rank's rows (:attr:`rank_summary` says which rank this one is)."""
    step_shapes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Nodes whose calls in one step ran at several output shapes (one module called after layers of different
    widths): those shapes, in the order they came. Their rows hold every call's time."""
    other_kinds: Mapping[str, Snapshot] = field(default_factory=dict)
    """A program's last profile as its collector sends it at the end (``State.DONE``): the figures of each other kind
    of step it ran (training steps, evaluation calls, ``generate()`` calls), so that the app's ``k`` still shows
    them once the collector is gone."""
    trace_left_out: Mapping[int, int] = field(default_factory=dict)
    """Per rank of :attr:`timelines` whose step ran more ops than its agent sends raw (its first
    :data:`~fxtui.core.op_sums.RAW_OPS`): the ops its trace leaves out."""

    def shown_after(self, before: Snapshot | None) -> Snapshot:
        """What to show when this snapshot follows ``before``: itself, or, when a source that failed after
        tracing sends one without the graph or without figures (its process died), its state and message over
        ``before``'s graph and figures, so that what was measured stays on screen beside the failure."""
        if before is None or before.graph is None:
            return self
        if self.graph is None or (self.state is State.ERROR and not self.nodes and before.nodes):
            return self.keeping_figures_of(before)
        return self

    def keeping_figures_of(self, before: Snapshot) -> Snapshot:
        """This snapshot (a source that failed after tracing sends one without a graph) with the graph and the
        figures of ``before``: what was measured stays on screen beside the failure."""
        kept = {name: getattr(before, name) for name in ("runs", "run_median_s", "eager_median_s", "nodes", "modules")}
        return Snapshot(before.graph, self.state, self.seq, message=self.message, error=self.error, **kept)

    @property
    def fault_warning(self) -> str:
        """A sentence when page faults inflate node times, else ``""``."""
        return page_fault_warning(self.faults_per_run, self.malloc, self.graph.nodes if self.graph else ())

    @property
    def attributed_s(self) -> float:
        """Sum of all node medians."""
        return column_total(self.nodes, "median_s")

    @property
    def phases(self) -> dict[str, float]:
        """In a training step: the sum of node medians of each phase (forward, backward, optimizer)."""
        return phase_totals(self.graph.nodes, self.nodes) if self.graph is not None else {}

    @property
    def figures(self) -> RunSummary:
        """Fidelity, overhead and the unattributed remainder of these statistics."""
        return RunSummary.of(self.attributed_s if self.nodes else None, self.run_median_s, self.eager_median_s)


#: Minor page faults per run above which node times are dominated by first-touch memory:
#: a 4 KiB page each, so 1,000 faults are 4 MB of memory mapped afresh every run.
PAGE_FAULT_WARNING = 1000


def page_fault_warning(faults_per_run: float | None, malloc: str = "", nodes: Iterable[NodeInfo] = ()) -> str:
    """Say so when each run maps large buffers afresh (the allocator returns them to the OS).

    ``nodes`` with their memory pass's ``page_faults`` name the nodes that pay most.
    """
    if faults_per_run is None or faults_per_run < PAGE_FAULT_WARNING:
        return ""
    said = f"{faults_per_run:,.0f} page faults per run (~{faults_per_run * 4096 / 2**20:.0f} MB touched afresh"
    paying = sorted((n for n in nodes if n.page_faults), key=lambda n: -(n.page_faults or 0))[:3]
    if paying:
        said += ", most by " + ", ".join(f"{n.name} ({n.page_faults:,})" for n in paying)
    said += "): "
    if malloc == "keep":
        return said + "the model maps new memory every run even though freed memory is kept, and its nodes pay for it"
    return said + (
        "the allocator returns large buffers to the OS and the nodes that refill them pay for it; "
        "fxtui's --malloc keep (the default on the command line; fxtui.keep_freed_memory() from Python) "
        "or a caching allocator (jemalloc or tcmalloc via LD_PRELOAD) removes this"
    )
