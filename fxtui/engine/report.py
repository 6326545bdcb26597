"""Headless results: the Python API's :class:`Report`, what one profile measured.

The report is data: settings of the run, node and module rows (:mod:`fxtui.core.nodes`),
run figures and findings. Turning it into text is :mod:`fxtui.engine.render`'s job, into
files :mod:`fxtui.engine.export`'s; the methods here that do either are conveniences.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from fxtui.core.errors import FxtuiError
from fxtui.core.filters import FilterSpec, matches
from fxtui.core.findings import AtenOp, Disturbance, Hint, MachinePeaks, MemorySummary, WhatIf, place_on_roofline
from fxtui.core.nodes import GraphBreak, ModuleRow, NodeRow, Rates, module_memory, phase_totals, subtree_sums
from fxtui.core.snapshot import GraphInfo, RunFigures, RunFiguresMixin, RunSpreads, Snapshot
from fxtui.engine import export, render


@dataclass(frozen=True)
class Report(RunFiguresMixin):
    """The result of a headless profile: per-node rows (graph order), per-module rows, run figures."""

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
    peaks: MachinePeaks | None = None
    """This machine's measured ceilings, against which ``bound`` is judged."""
    thread_info: tuple[str, ...] = ()
    thread_warnings: tuple[str, ...] = ()
    hints: tuple[Hint, ...] = ()
    aten: dict[str, tuple[AtenOp, ...]] = field(default_factory=dict)
    faults_per_run: float | None = None
    """Median minor page faults of the process per profiled run."""
    malloc: str = ""
    """How the process handed freed memory back: keep, glibc or system (``fxtui.engine.allocator``)."""
    capture: str = "fx"
    """Which capture produced the graphs: ``fx`` or ``dynamo`` (``fxtui.engine.capture``)."""
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
    """Changes measured against the model (``--what-if``, :mod:`fxtui.engine.whatif`)."""

    # -- derived figures -----------------------------------------------------------

    @property
    def attributed_s(self) -> float:
        """Sum of node medians."""
        return sum(r.median_s for r in self.rows)

    @property
    def mode(self) -> str:
        """``train`` or ``inference``."""
        return "train" if self.training else "inference"

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
    def from_snapshot(cls, snapshot: Snapshot, **extra: Any) -> Report:
        """Freeze a session's snapshot into rows."""
        graph = snapshot.graph
        if graph is None:
            raise ValueError("a snapshot without a traced graph has nothing to report")
        rows = [
            NodeRow(info, stats, _rates(info.flops, info.bytes_moved, stats.median_s, graph.peaks))
            for info in graph.nodes
            if (stats := snapshot.nodes.get(info.name)) is not None
        ]
        error = snapshot.error
        return cls(
            model=graph.model,
            inputs=graph.inputs,
            dtype=graph.dtype,
            threads=graph.threads,
            runs=snapshot.runs,
            rows=rows,
            modules=_module_rows(graph, snapshot),
            run_median_s=snapshot.run_median_s,
            eager_median_s=snapshot.eager_median_s,
            leaf_modules=graph.leaf_modules,
            failures=error.runs_failed if error else 0,
            last_error=error.message if error else "",
            peaks=graph.peaks,
            thread_info=graph.thread_info,
            thread_warnings=graph.thread_warnings,
            hints=snapshot.hints or (),
            aten=dict(snapshot.aten),
            faults_per_run=snapshot.faults_per_run,
            malloc=snapshot.malloc,
            capture=graph.capture,
            capture_reason=graph.capture_reason,
            graphs=graph.graphs,
            breaks=graph.breaks,
            reference_median_s=snapshot.reference_median_s,
            late_graphs=snapshot.late_graphs,
            training=graph.training,
            loss=graph.loss,
            optimizer=graph.optimizer,
            nonfinite_steps=snapshot.nonfinite_steps,
            memory=graph.memory,
            spreads=snapshot.spreads,
            disturbance=snapshot.disturbance,
            what_ifs=snapshot.what_ifs,
            **extra,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Report:
        """The report :meth:`to_dict` wrote (validated first by :func:`fxtui.engine.export.load_json`)."""
        meta = data["metadata"]
        return cls(
            model=str(meta.get("model", "")),
            inputs=tuple(meta.get("inputs", ())),
            dtype=str(meta.get("dtype", "")),
            threads=int(meta.get("threads", 0)),
            runs=int(meta.get("runs", 0)),
            rows=[NodeRow.from_dict(r) for r in data["rows"]],
            modules=[ModuleRow.from_dict(m) for m in data["modules"]],
            run_median_s=meta.get("run_median_s"),
            eager_median_s=meta.get("eager_median_s"),
            leaf_modules=tuple(meta.get("leaf_modules", ())),
            failures=int(meta.get("failures", 0)),
            last_error=str(meta.get("last_error", "")),
            clock_overhead_ns=int(meta.get("clock_overhead_ns", 0)),
            warnings=tuple(meta.get("warnings", ())),
            peaks=MachinePeaks(**meta["peaks"]) if meta.get("peaks") else None,
            thread_info=tuple(meta.get("thread_info", ())),
            thread_warnings=tuple(meta.get("thread_warnings", ())),
            hints=tuple(Hint(**h) for h in meta.get("hints", ())),
            aten={name: tuple(AtenOp(**op) for op in ops) for name, ops in meta.get("aten", {}).items()},
            faults_per_run=meta.get("faults_per_run"),
            malloc=str(meta.get("malloc", "")),
            capture=str(meta.get("capture", "fx")),
            capture_reason=str(meta.get("capture_reason", "")),
            graphs=int(meta.get("graphs", 1)),
            breaks=tuple(GraphBreak(**b) for b in meta.get("graph_breaks", ())),
            reference_median_s=meta.get("reference_median_s"),
            late_graphs=int(meta.get("late_graphs", 0)),
            training=meta.get("mode") == "train",
            loss=str(meta.get("loss", "")),
            optimizer=str(meta.get("optimizer", "")),
            nonfinite_steps=int(meta.get("nonfinite_steps", 0)),
            memory=_memory_from(meta),
            spreads=RunSpreads.from_dict(meta),
            disturbance=Disturbance(**meta["disturbance"]) if meta.get("disturbance") else None,
            what_ifs=tuple(WhatIf.from_dict(w) for w in meta.get("what_ifs", ())),
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Report:
        """Read a report written by ``--json``/``--save``; FxtuiError when the file is not one."""
        data = export.load_json(path)
        try:
            return cls.from_dict(data)
        except (TypeError, ValueError, KeyError) as e:
            raise FxtuiError(f"{path} is damaged: {e}") from None

    # -- selection -------------------------------------------------------------------

    def select(self, spec: FilterSpec | None = None, sort: str = "median", top: int | None = None) -> list[NodeRow]:
        """Rows passing ``spec``, sorted by ``sort`` (descending, except name/order/path), at most ``top``."""
        rows = self.rows
        if spec is not None and spec.active:
            rows = [r for r in rows if matches(r.info, spec)]
        key, reverse = sort_key(sort)
        rows = sorted(rows, key=key, reverse=reverse)
        return rows[:top] if top else rows

    # -- conveniences: text and files ------------------------------------------------

    def header(self) -> str:
        """The lines above the table (:func:`fxtui.engine.render.header`)."""
        return render.header(self)

    def table(
        self, sort: str = "median", top: int | None = 20, spec: FilterSpec | None = None, columns: tuple[str, ...] = ()
    ) -> str:
        """The node table (:func:`fxtui.engine.render.table`); ``columns`` adds any of ``render.EXTRA_COLUMNS``."""
        return render.table(self, sort=sort, top=top, spec=spec, columns=columns)

    def module_table(self, top: int | None = 20, path: str = "") -> str:
        """Module paths by inclusive time (:func:`fxtui.engine.render.module_table`)."""
        return render.module_table(self, top=top, path=path)

    def __str__(self) -> str:
        return self.header() + "\n\n" + self.table()

    def to_dict(self) -> dict[str, Any]:
        """Everything in the report as JSON-ready data (:func:`fxtui.engine.export.report_dict`)."""
        return export.report_dict(self)

    def to_json(self) -> str:
        """The report as JSON text."""
        return export.report_json(self)

    def to_csv(self) -> str:
        """One CSV line per node, graph order, with a header line."""
        return export.report_csv(self)

    def to_chrome_trace(self) -> dict[str, Any]:
        """One representative run as nested spans (module → node) in the Chrome trace event format."""
        return export.chrome_trace(self)

    def metadata(self) -> dict[str, Any]:
        """The run's settings, figures and findings as JSON-ready data (the ``metadata`` of :meth:`to_dict`)."""
        return {
            "peaks": asdict(self.peaks) if self.peaks else None,
            "thread_info": list(self.thread_info),
            "thread_warnings": list(self.thread_warnings),
            "faults_per_run": self.faults_per_run,
            "malloc": self.malloc,
            "hints": [asdict(h) for h in self.hints],
            "aten": {name: [asdict(op) for op in ops] for name, ops in self.aten.items()},
            "model": self.model,
            "inputs": list(self.inputs),
            "dtype": self.dtype,
            "threads": self.threads,
            "runs": self.runs,
            "run_median_s": self.run_median_s,
            "eager_median_s": self.eager_median_s,
            "fidelity": self.fidelity,
            "overhead": self.overhead,
            "unattributed_s": self.unattributed_s,
            "leaf_modules": list(self.leaf_modules),
            "failures": self.failures,
            "last_error": self.last_error,
            "clock_overhead_ns": self.clock_overhead_ns,
            "warnings": list(self.warnings),
            "capture": self.capture,
            "capture_reason": self.capture_reason,
            "graphs": self.graphs,
            "graph_breaks": [asdict(b) for b in self.breaks],
            "reference_median_s": self.reference_median_s,
            "late_graphs": self.late_graphs,
            "mode": self.mode,
            "loss": self.loss,
            "optimizer": self.optimizer,
            "phases_s": self.phases,
            "nonfinite_steps": self.nonfinite_steps,
            **_memory_metadata(self.memory),
            **self.spreads.to_dict(),
            "disturbance": asdict(self.disturbance) if self.disturbance else None,
            "disturbance_line": self.disturbance.line() if self.disturbance else "",
            "what_ifs": [w.to_dict() for w in self.what_ifs],
        }


def sort_key(sort: str) -> tuple[Callable[[NodeRow], Any], bool]:
    """Key function and direction for a ``--sort`` name."""
    keys: dict[str, tuple[Callable[[NodeRow], Any], bool]] = {
        "median": (lambda r: r.stats.median_s, True),
        "mean": (lambda r: r.stats.mean_s, True),
        "p90": (lambda r: r.stats.p90_s, True),
        "max": (lambda r: r.stats.max_s, True),
        "pct": (lambda r: r.stats.pct, True),
        "iqr": (lambda r: r.stats.iqr_s, True),
        "calls": (lambda r: r.stats.count, True),
        "name": (lambda r: r.name, False),
        "path": (lambda r: (r.module_path, r.info.index), False),
        "order": (lambda r: r.info.index, False),
        "output": (lambda r: r.info.output_bytes or 0, True),
        "alloc": (lambda r: r.info.alloc_bytes or 0, True),
        "live": (lambda r: r.info.live_bytes or 0, True),
    }
    if sort not in keys:
        raise FxtuiError(f"cannot sort by {sort!r}; choose one of {', '.join(keys)}")
    return keys[sort]


def _rates(flops: float | None, moved: float | None, median_s: float, peaks: MachinePeaks | None) -> Rates:
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
    flops = subtree_sums((n.module_path, n.flops) for n in graph.nodes if n.flops is not None)
    memory = module_memory(graph.nodes)
    return [
        ModuleRow(
            path=path,
            class_name=graph.modules[path].class_name,
            inclusive_s=m.inclusive_s,
            self_s=m.self_s,
            pct=m.pct,
            nodes=m.nodes,
            leaf_fallback=graph.modules[path].leaf_fallback,
            flops=flops.get(path),
            gflops_s=flops[path] / m.inclusive_s / 1e9 if flops.get(path) and m.inclusive_s > 0 else None,
            forward_s=m.forward_s,
            backward_s=m.backward_s,
            output_bytes=mem.output_bytes if (mem := memory.get(path)) else None,
            alloc_bytes=mem.alloc_bytes if mem else None,
            peak_live_bytes=mem.peak_live_bytes if mem else None,
            saved_bytes=mem.saved_bytes if mem and graph.training else None,
        )
        for path, m in snapshot.modules.items()
    ]


#: The memory summary's metadata keys (flat, beside the run's other figures) → its fields.
_MEMORY_KEYS = {
    "peak_live_bytes": "peak_live_bytes",
    "peak_node": "peak_node",
    "param_bytes": "param_bytes",
    "input_bytes": "input_bytes",
    "high_water_bytes": "high_water_bytes",
    "high_water_node": "high_water_node",
    "rss_bytes": "rss_bytes",
    "max_rss_bytes": "max_rss_bytes",
    "saved_for_backward_bytes": "saved_bytes",
    "forward_peak_bytes": "forward_peak_bytes",
    "backward_peak_bytes": "backward_peak_bytes",
}


def _memory_metadata(memory: MemorySummary | None) -> dict[str, Any]:
    """The summary as flat metadata keys; none at all when memory was not measured (as older files)."""
    if memory is None:
        return {}
    return {key: getattr(memory, name) for key, name in _MEMORY_KEYS.items()}


def _memory_from(meta: Mapping[str, Any]) -> MemorySummary | None:
    """The summary :func:`_memory_metadata` wrote, or None for a file without memory figures."""
    if meta.get("peak_live_bytes") is None:
        return None
    return MemorySummary(**{name: meta[key] for key, name in _MEMORY_KEYS.items() if key in meta})
