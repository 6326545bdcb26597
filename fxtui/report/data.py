"""What one profile measured, as data: :class:`ReportData`, and the JSON schema it is saved in.

The report's fields are listed once, in the class. Its JSON ``metadata`` is every field but the
rows, the modules and the timeline, each under its own name unless :data:`CODECS` says how it
is written (a dataclass as a dict, the memory summary and the spreads flattened beside the
other figures); :meth:`ReportData.from_dict` reads the same table backwards, and
:meth:`ReportData.from_snapshot` takes each field from the graph or the snapshot that has it.

Text and files are the engine's (:mod:`fxtui.report.text`, :mod:`fxtui.report.export`); the
Python API's :class:`fxtui.Report` adds them to this data. Loading needs neither torch nor the
model, so ``fxtui diff`` and the app read saved reports too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, TypeVar

from fxtui.core.columns import sort_column
from fxtui.core.compilation import CompiledSummary, fused_into
from fxtui.core.errors import FxtuiError
from fxtui.core.filters import FilterSpec, NodeColumns
from fxtui.core.findings import AtenOp, Disturbance, Hint, MachinePeaks, MemorySummary, WhatIf, place_on_roofline
from fxtui.core.generation import GenerationSummary
from fxtui.core.nodes import GraphBreak, module_memory, phase_totals
from fxtui.core.program_run import ProgramState, RankSummary, StepSummary
from fxtui.core.rollup import ModulePlan
from fxtui.core.rows import ModuleRow, NodeRow, Rates
from fxtui.core.snapshot import GraphInfo, RunFigures, RunFiguresMixin, RunSpreads, Snapshot
from fxtui.report.json_schema import CODECS, NOT_METADATA, REQUIRED_DEFAULTS, SCHEMA, SCHEMA_VERSION, coerce, load_json

R = TypeVar("R", bound="ReportData")


@dataclass(frozen=True)
class ReportData(RunFiguresMixin):
    """The result of a profile: per-node rows (graph order), per-module rows, run figures and findings."""

    model: str
    inputs: tuple[str, ...]
    dtype: str
    threads: int
    runs: int
    rows: list[NodeRow]
    modules: list[ModuleRow]
    run_median_s: float | None
    """Median wall time of one profiled run."""
    eager_median_s: float | None
    """Median wall time of the same graph run uninstrumented, interleaved with the profiled runs."""
    leaf_modules: tuple[str, ...] = ()
    failures: int = 0
    last_error: str = ""
    clock_overhead_ns: int = 0
    warnings: tuple[str, ...] = ()
    timeline: list[tuple[str, float, float]] = field(default_factory=list)
    """One representative profiled run: (node name, start s, duration s), graph order."""
    timelines: dict[int, list[tuple[str, float, float]]] = field(default_factory=dict)
    """A program's latest sampled step of each rank (or of its one process, as rank 0), on one clock."""
    peaks: MachinePeaks | None = None
    """This machine's measured ceilings, against which ``bound`` is judged."""
    thread_info: tuple[str, ...] = ()
    thread_warnings: tuple[str, ...] = ()
    hints: tuple[Hint, ...] = ()
    aten: dict[str, tuple[AtenOp, ...]] = field(default_factory=dict)
    faults_per_run: float | None = None
    """Median minor page faults of the process per profiled run."""
    malloc: str = ""
    """How the process handed freed memory back: keep, glibc or system (:mod:`fxtui.core.memory_policy`)."""
    capture: str = "fx"
    """Which capture mode produced the nodes (:mod:`fxtui.core.captures`)."""
    capture_reason: str = ""
    graphs: int = 1
    breaks: tuple[GraphBreak, ...] = ()
    reference_median_s: float | None = None
    """Median of the model run uncaptured (TorchDynamo captures only): what capture itself costs."""
    late_graphs: int = 0
    training: bool = False
    """True when a run was a training step: rows carry their phase, modules forward and backward time."""
    loss: str = ""
    optimizer: str = ""
    nonfinite_steps: int = 0
    """Training steps whose loss was NaN or infinite."""
    memory: MemorySummary | None = None
    """The run's memory figures when the memory pass ran (``--memory``); rows then carry their bytes."""
    spreads: RunSpreads = field(default_factory=RunSpreads)
    """The run figures' ranges over the steps (p25–p75)."""
    disturbance: Disturbance | None = None
    """How much other work on the machine disturbed the steps."""
    what_ifs: tuple[WhatIf, ...] = ()
    """Changes measured against the model (``--what-if``, :mod:`fxtui.measure.whatif`)."""
    program: ProgramState | None = None
    """A program profiled as it ran (``fxtui run``): its command and how it ended; None for a model."""
    steps: StepSummary | None = None
    """A program's steps: counts, each phase's median and the timeline (``fxtui run``)."""
    shapes: dict[str, tuple[tuple[str, int, float], ...]] = field(default_factory=dict)
    """Nodes that ran at several output shapes: each shape, how often, its median (``fxtui run``)."""
    rank_summary: RankSummary | None = None
    """A distributed job: every rank's pace, phases, arithmetic and waiting; the rank the rows are from."""
    generation: GenerationSummary | None = None
    """``generate()`` calls (``--generate``): time to first token, per token, the KV cache; rows carry their phase."""
    compiled: CompiledSummary | None = None
    """A compiled model (``--compile``): compile time, graphs, kernels, the eager median and each module's eager
    time; rows are kernel calls (``kernel``, ``fused_nodes``), modules carry ``eager_s``, ``compiled_s`` and
    ``fused_into`` (every module with eager time has a row: one Inductor fused whole into an ancestor's kernel has
    ``compiled_s`` 0)."""

    # -- derived figures -----------------------------------------------------------

    @property
    def attributed_s(self) -> float:
        """Sum of node medians."""
        return sum(r.median_s for r in self.rows)

    @property
    def mode(self) -> str:
        """``run`` (a program profiled as it ran), ``generate``, ``train`` or ``inference``."""
        if self.program is not None:
            return "run"
        return "generate" if self.generation is not None else "train" if self.training else "inference"

    @property
    def phases(self) -> dict[str, float]:
        """In a training step: the sum of node medians of each phase (forward, backward, optimizer)."""
        return phase_totals([r.info for r in self.rows], {r.name: r.stats for r in self.rows})

    @property
    def figures(self) -> RunFigures:
        """Fidelity, overhead and the unattributed remainder."""
        return RunFigures.of(self.attributed_s, self.run_median_s, self.eager_median_s)

    # -- construction --------------------------------------------------------------

    @classmethod
    def from_snapshot(cls: type[R], snapshot: Snapshot, **extra: Any) -> R:
        """Freeze a session's snapshot into rows; ``extra`` sets fields neither the graph nor the snapshot has."""
        graph = snapshot.graph
        if graph is None:
            raise ValueError("a snapshot without a traced graph has nothing to report")
        rows = [
            NodeRow(info, stats, rates(info.flops, info.bytes_moved, stats.median_s, graph.peaks))
            for info in graph.nodes
            if (stats := snapshot.nodes.get(info.name)) is not None and stats.count  # a program's node not timed yet
        ]
        error = snapshot.error
        given: dict[str, Any] = {
            "rows": rows,
            "modules": _module_rows(graph, snapshot),
            "failures": error.runs_failed if error else 0,
            "last_error": error.message if error else "",
            "hints": snapshot.hints or (),
            "aten": dict(snapshot.aten),
            **extra,
        }
        for f in fields(cls):
            if f.name in given:
                continue
            for source in (graph, snapshot):
                if f.name in getattr(type(source), "__dataclass_fields__", {}):
                    given[f.name] = getattr(source, f.name)
                    break
        return cls(**given)

    @classmethod
    def from_dict(cls: type[R], data: Mapping[str, Any]) -> R:
        """The report :meth:`to_dict` wrote (validate it first: :func:`load_json`)."""
        meta = data["metadata"]
        given: dict[str, Any] = {
            "rows": [NodeRow.from_dict(r) for r in data["rows"]],
            "modules": [ModuleRow.from_dict(m) for m in data["modules"]],
        }
        for f in fields(cls):
            if f.name in NOT_METADATA:
                continue
            codec = CODECS.get(f.name)
            if codec is not None:
                given[f.name] = codec.decode(meta)
            elif f.name in meta:
                default = REQUIRED_DEFAULTS.get(f.name) if f.default is MISSING else f.default
                given[f.name] = coerce(default, meta[f.name])
            elif f.default is MISSING and f.default_factory is MISSING:
                given[f.name] = REQUIRED_DEFAULTS[f.name]
        return cls(**given)

    @classmethod
    def load(cls: type[R], path: str | os.PathLike[str]) -> R:
        """Read a report written by ``--json``/``--save``; FxtuiError when the file is not one."""
        data = load_json(path)
        try:
            return cls.from_dict(data)
        except (TypeError, ValueError, KeyError) as e:
            raise FxtuiError(f"{path} is damaged: {e}") from None

    def to_dict(self) -> dict[str, Any]:
        """Everything in the report as JSON-ready data, with the schema's name and version."""
        return {
            "schema": SCHEMA,
            "version": SCHEMA_VERSION,
            "metadata": self.metadata(),
            "rows": [r.to_dict() for r in self.rows],
            "modules": [m.to_dict() for m in self.modules],
        }

    def metadata(self) -> dict[str, Any]:
        """The run's settings, figures and findings as JSON-ready data (the ``metadata`` of :meth:`to_dict`)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name in NOT_METADATA:
                continue
            codec = CODECS.get(f.name)
            value = getattr(self, f.name)
            if codec is not None:
                out.update(codec.encode(value))
            else:
                out[f.name] = list(value) if isinstance(value, tuple) else value
        out.update(
            mode=self.mode,
            fidelity=self.fidelity,
            overhead=self.overhead,
            unattributed_s=self.unattributed_s,
            phases_s=self.phases,
            disturbance_line=self.disturbance.line() if self.disturbance else "",
        )
        return out

    # -- selection -------------------------------------------------------------------

    def select(self, spec: FilterSpec | None = None, sort: str = "median", top: int | None = None) -> list[NodeRow]:
        """Rows passing ``spec``, sorted by column ``sort`` (numbers largest first, text in order), at most ``top``."""
        column = sort_column(sort)
        rows = self.rows
        if spec is not None and spec.active:
            mask = NodeColumns([r.info for r in rows]).mask(spec)
            rows = [r for r, keep in zip(rows, mask.tolist(), strict=True) if keep]
        rows = sorted(rows, key=lambda r: column.sort(r.info, r.stats, r.rates), reverse=column.numeric)
        return rows[:top] if top else rows


# -- rows --------------------------------------------------------------------------------


def rates(flops: float | None, moved: float | None, median_s: float, peaks: MachinePeaks | None) -> Rates:
    """Achieved rates and roofline placement of one node."""
    if flops is None or moved is None or median_s <= 0:
        return Rates()
    placed = place_on_roofline(flops, moved, median_s, peaks) if peaks else None
    return Rates(
        gflops_s=flops / median_s / 1e9,
        gbytes_s=moved / median_s / 1e9,
        intensity=flops / moved if moved else None,
        bound=placed.bound if placed else "",
        roofline_fraction=placed.fraction if placed else None,
    )


def _module_rows(graph: GraphInfo, snapshot: Snapshot) -> list[ModuleRow]:
    plan: ModulePlan = graph.module_plan
    flops = plan.roll_up([n.flops or 0.0 for n in graph.nodes])
    counted = plan.roll_up([int(n.flops is not None) for n in graph.nodes])
    memory = module_memory(graph.nodes)
    compiled = snapshot.compiled
    out = []
    for path, m in snapshot.modules.items():
        i = plan.index.get(path)
        work = flops[i] if i is not None and counted[i] else None
        mem = memory.get(path)
        info = graph.modules[path]
        out.append(
            ModuleRow(
                path=path,
                class_name=info.class_name,
                inclusive_s=m.inclusive_s,
                self_s=m.self_s,
                pct=m.pct,
                nodes=m.nodes,
                leaf_fallback=info.leaf_fallback,
                flops=work,
                gflops_s=work / m.inclusive_s / 1e9 if work and m.inclusive_s > 0 else None,
                forward_s=m.forward_s,
                backward_s=m.backward_s,
                prefill_s=m.prefill_s,
                decode_s=m.decode_s,
                output_bytes=mem.output_bytes if mem else None,
                alloc_bytes=mem.alloc_bytes if mem else None,
                peak_live_bytes=mem.peak_live_bytes if mem else None,
                saved_bytes=mem.saved_bytes if mem and graph.training else None,
                eager_s=compiled.eager_of(path) if compiled else None,
                compiled_s=m.inclusive_s if compiled else None,
                fused_into=fused_into(info, graph.by_name) if compiled else (),
            )
        )
    return out
