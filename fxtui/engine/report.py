"""Headless results: the Python API's :class:`Report`, its table, and file exports.

Exports are written whole or not at all: to a temporary file beside the target,
then renamed over it.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import tabulate

from fxtui.engine import allocator
from fxtui.engine.errors import FxtuiError
from fxtui.engine.filters import FilterSpec, matches, path_matches
from fxtui.engine.findings import AtenOp, Hint, MachinePeaks, place_on_roofline
from fxtui.engine.snapshot import (
    GraphBreak,
    GraphInfo,
    NodeInfo,
    RunFigures,
    RunFiguresMixin,
    Snapshot,
    page_fault_warning,
)
from fxtui.engine.units import format_pct, format_ratio, format_seconds

#: Identifies fxtui's JSON files; ``version`` changes when a field changes meaning.
SCHEMA = "fxtui.report"
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class NodeRow:
    """One FX node's statistics (seconds) and description."""

    name: str
    op: str
    target: str
    type_name: str
    module_path: str
    shape: str
    dtype: str
    median_s: float
    mean_s: float
    p90_s: float
    min_s: float
    max_s: float
    iqr_s: float
    count: int
    pct: float
    """Median as a share of the profiled run's median, in percent."""
    noisy: bool
    index: int
    unsteady: bool = False
    """The median is at least twice the fastest run (see ``NodeStats.unsteady``)."""
    flops: float | None = None
    """FLOPs of one call."""
    bytes_moved: float | None = None
    """Bytes read plus written by one call."""
    params: int | None = None
    gflops_s: float | None = None
    """Achieved GFLOP/s at the median."""
    gbytes_s: float | None = None
    """Achieved GB/s at the median."""
    intensity: float | None = None
    """FLOPs per byte."""
    bound: str = ""
    """``compute-bound`` or ``memory-bound`` against this machine's measured peaks."""
    roofline_fraction: float | None = None
    """Achieved share of what the roofline allows at this intensity."""
    source: str = ""
    forward_source: str = ""


@dataclass(frozen=True)
class ModuleRow:
    """Time attributed to one module path (``""`` is the root)."""

    path: str
    class_name: str
    inclusive_s: float
    self_s: float
    pct: float
    nodes: int
    leaf_fallback: bool
    flops: float | None = None
    """FLOPs of the subtree in one run."""
    gflops_s: float | None = None
    """Subtree FLOPs over its inclusive time."""


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
    graph: GraphInfo | None = field(default=None, repr=False, compare=False)

    # -- derived figures -----------------------------------------------------------

    @property
    def attributed_s(self) -> float:
        """Sum of node medians."""
        return sum(r.median_s for r in self.rows)

    @property
    def figures(self) -> RunFigures:
        """Fidelity, overhead and the unattributed remainder."""
        return RunFigures.of(self.attributed_s, self.run_median_s, self.eager_median_s)

    # -- construction --------------------------------------------------------------

    @classmethod
    def from_snapshot(cls, snapshot: Snapshot, **extra: Any) -> Report:
        """Copy a session's snapshot into report rows."""
        graph = snapshot.graph
        if graph is None:
            raise ValueError("a snapshot without a traced graph has nothing to report")
        rows = []
        for info in graph.nodes:
            st = snapshot.nodes.get(info.name)
            if st is None:
                continue
            rows.append(
                NodeRow(
                    name=info.name,
                    op=info.op,
                    target=info.target,
                    type_name=info.type_name,
                    module_path=info.module_path,
                    shape=info.shape,
                    dtype=info.dtype,
                    median_s=st.median_s,
                    mean_s=st.mean_s,
                    p90_s=st.p90_s,
                    min_s=st.min_s,
                    max_s=st.max_s,
                    iqr_s=st.iqr_s,
                    count=st.count,
                    pct=st.pct,
                    noisy=st.noisy,
                    unsteady=st.unsteady,
                    index=info.index,
                    flops=info.flops,
                    bytes_moved=info.bytes_moved,
                    params=info.params,
                    source=info.source,
                    forward_source=info.forward_source,
                    **_efficiency(info.flops, info.bytes_moved, st.median_s, graph.peaks),
                )
            )
        flops = _subtree_flops(graph)
        modules = [
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
            )
            for path, m in snapshot.modules.items()
        ]
        error = snapshot.error
        return cls(
            model=graph.model,
            inputs=graph.inputs,
            dtype=graph.dtype,
            threads=graph.threads,
            runs=snapshot.runs,
            rows=rows,
            modules=modules,
            run_median_s=snapshot.run_median_s,
            eager_median_s=snapshot.eager_median_s,
            leaf_modules=graph.leaf_modules,
            failures=error.runs_failed if error else 0,
            last_error=error.message if error else "",
            graph=graph,
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
            **extra,
        )

    # -- presentation ----------------------------------------------------------------

    def select(self, spec: FilterSpec | None = None, sort: str = "median", top: int | None = None) -> list[NodeRow]:
        """Rows passing ``spec``, sorted by ``sort`` (descending, except name/order/path), at most ``top``."""
        rows = self.rows
        if spec is not None and spec.active:
            infos = self.graph.by_name if self.graph else {}
            rows = [r for r in rows if matches(infos.get(r.name) or _info_of(r), spec)]
        key, reverse = sort_key(sort)
        rows = sorted(rows, key=key, reverse=reverse)
        return rows[:top] if top else rows

    def header(self) -> str:
        """The lines above the table: model, inputs, threads, runs and the run figures."""
        lines = [
            f"model      {self.model}   inputs {', '.join(self.inputs)}   dtype {self.dtype}   threads {self.threads}",
            f"runs       {self.runs} profiled, each interleaved with an uninstrumented run",
            f"run        {format_seconds(self.run_median_s)} profiled median   "
            f"{format_seconds(self.eager_median_s)} uninstrumented median",
            f"fidelity   {format_ratio(self.fidelity)} (Σ node medians ÷ uninstrumented)   "
            f"overhead {format_ratio(self.overhead)} (profiled ÷ uninstrumented)",
            _unattributed_line(self.unattributed_s, self.capture),
            *capture_lines(self),
        ]
        if self.peaks:
            lines.append(
                f"machine    {self.peaks.gflops:.0f} GFLOP/s matmul, {self.peaks.gbytes_per_s:.0f} GB/s copy "
                f"at {self.peaks.threads} threads (the roofline for compute-/memory-bound)"
            )
        if self.thread_info:
            lines.append("threads    " + self.thread_info[0].removeprefix("threads: "))
        if self.leaf_modules:
            lines.append("leaves     kept whole (untraceable code): " + ", ".join(self.leaf_modules))
        if self.failures:
            lines.append(f"failures   {self.failures} runs failed; last: {self.last_error}")
        if self.malloc:
            lines.append("memory     " + allocator.describe(self.malloc))
        faults = page_fault_warning(self.faults_per_run, self.malloc)
        lines.extend(f"warning    {w}" for w in (*self.warnings, *self.thread_warnings, *([faults] if faults else [])))
        return "\n".join(lines)

    def table(
        self,
        sort: str = "median",
        top: int | None = 20,
        spec: FilterSpec | None = None,
        columns: tuple[str, ...] = (),
    ) -> str:
        """A tabulate table of the rows: op type, node, target, module path, shape, median, p90, %, calls.

        ``columns`` adds any of :data:`EXTRA_COLUMNS` (``flops``, ``gflops``, ``bound`` …).
        """
        for c in columns:
            if c not in EXTRA_COLUMNS:
                raise FxtuiError(f"no column {c!r}; choose from {', '.join(EXTRA_COLUMNS)}")
        rows = self.select(spec, sort, top)
        body = [
            [
                r.op,
                r.name,
                r.target,
                r.module_path or "(root)",
                r.shape,
                format_seconds(r.median_s),
                format_seconds(r.p90_s),
                format_pct(r.pct),
                r.count,
                *(EXTRA_COLUMNS[c][1](r) for c in columns),
                _marks(r),
            ]
            for r in rows
        ]
        headers = ["op type", "node", "target", "module path", "output shape", "median", "p90", "% of run", "calls"]
        headers += [EXTRA_COLUMNS[c][0] for c in columns] + [""]
        text = tabulate.tabulate(body, headers=headers, disable_numparse=True)
        shown = len(rows)
        total = len(self.select(spec))
        if shown < total:
            text += f"\n… {total - shown} more nodes (--top 0 shows all)"
        return text

    def module_table(self, top: int | None = 20, path: str = "") -> str:
        """Module paths by inclusive time: class, inclusive, self, % of run, nodes, GFLOP/s."""
        mods = [m for m in self.modules if path_matches(m.path, path)] if path else list(self.modules)
        mods.sort(key=lambda m: (-m.inclusive_s, m.path))
        shown = mods[:top] if top else mods
        body = [
            [
                m.path or "(root)",
                m.class_name + (" [leaf]" if m.leaf_fallback else ""),
                format_seconds(m.inclusive_s),
                format_seconds(m.self_s),
                format_pct(m.pct),
                m.nodes,
                _opt(m.gflops_s, ".1f"),
            ]
            for m in shown
        ]
        headers = ["module path", "class", "inclusive", "self", "% of run", "nodes", "GFLOP/s"]
        text = tabulate.tabulate(body, headers=headers, disable_numparse=True)
        if len(shown) < len(mods):
            text += f"\n… {len(mods) - len(shown)} more modules (--top 0 shows all)"
        return text

    def __str__(self) -> str:
        return self.header() + "\n\n" + self.table()

    # -- export ----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Everything in the report as JSON-ready data, with the schema's name and version."""
        meta = {
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
        }
        return {
            "schema": SCHEMA,
            "version": SCHEMA_VERSION,
            "metadata": meta,
            "rows": [asdict(r) for r in self.rows],
            "modules": [asdict(m) for m in self.modules],
        }

    def to_json(self) -> str:
        """The report as JSON text."""
        return json.dumps(self.to_dict(), indent=1, allow_nan=False, default=_json_default)

    def to_csv(self) -> str:
        """One CSV line per node, graph order, with a header line."""
        out = io.StringIO()
        writer = csv.writer(out)
        names = [f.name for f in fields(NodeRow)]
        writer.writerow(names)
        for r in self.rows:
            writer.writerow([getattr(r, n) for n in names])
        return out.getvalue()

    def to_chrome_trace(self) -> dict[str, Any]:
        """One representative run as nested spans (module → node) in the Chrome trace event format."""
        if not self.timeline:
            raise FxtuiError("this report has no recorded run to export as a trace")
        paths = {r.name: r.module_path for r in self.rows}
        ops = {r.name: (r.op, r.target) for r in self.rows}
        events: list[dict[str, Any]] = []
        open_spans: list[tuple[str, float]] = []  # (module path, start) from the root down
        end = 0.0

        def close_until(keep: int) -> None:
            while len(open_spans) > keep:
                path, start = open_spans.pop()
                events.append(_span(path.rpartition(".")[2] or path, "module", start, end - start, {"path": path}))

        for name, start, dur in self.timeline:
            chain = _ancestry(paths.get(name, ""))
            common = 0
            while common < min(len(chain), len(open_spans)) and open_spans[common][0] == chain[common]:
                common += 1
            close_until(common)
            for path in chain[common:]:
                open_spans.append((path, start))
            op, target = ops.get(name, ("", ""))
            events.append(_span(name, op, start, dur, {"target": target, "module": paths.get(name, "")}))
            end = max(end, start + dur)
        close_until(0)
        events.insert(0, {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": f"fxtui {self.model}"}})
        return {"traceEvents": events, "displayTimeUnit": "ms"}


def sort_key(sort: str) -> tuple[Callable[[NodeRow], Any], bool]:
    """Key function and direction for a ``--sort`` name."""
    keys: dict[str, tuple[Callable[[NodeRow], Any], bool]] = {
        "median": (lambda r: r.median_s, True),
        "mean": (lambda r: r.mean_s, True),
        "p90": (lambda r: r.p90_s, True),
        "max": (lambda r: r.max_s, True),
        "pct": (lambda r: r.pct, True),
        "iqr": (lambda r: r.iqr_s, True),
        "calls": (lambda r: r.count, True),
        "name": (lambda r: r.name, False),
        "path": (lambda r: (r.module_path, r.index), False),
        "order": (lambda r: r.index, False),
    }
    if sort not in keys:
        raise FxtuiError(f"cannot sort by {sort!r}; choose one of {', '.join(keys)}")
    return keys[sort]


def hints_text(hints: tuple[Hint, ...]) -> str:
    """Suggestions, largest estimated saving first, each with its evidence."""
    if not hints:
        return "hints      none: no rule found anything worth changing"
    lines = []
    for h in hints:
        saving = (
            f"saves about {format_seconds(h.saving_s)} ({format_pct(h.saving_pct)} of the run)"
            if (h.saving_s is not None)
            else "saving: try it and measure"
        )
        lines.append(f"• {h.title}  [{h.rule}]\n    {h.evidence}\n    {saving}")
    return "\n".join(lines)


def aten_text(aten: dict[str, tuple[AtenOp, ...]], rows: list[NodeRow]) -> str:
    """The aten operators inside each of ``rows`` (those explained), with their share of the node."""
    blocks = []
    for r in rows:
        ops = aten.get(r.name)
        if ops is None:
            continue
        body = [
            [
                "  " * op.depth + op.name,
                f"{op.calls:g}",
                format_seconds(op.total_s),
                format_seconds(op.self_s),
                f"{op.share:.0%}",
            ]
            for op in ops
        ]
        title = f"{r.name} ({r.target}, median {format_seconds(r.median_s)})"
        if not body:
            blocks.append(f"{title}: no aten operator (pure Python or a view)")
            continue
        blocks.append(
            title
            + "\n"
            + tabulate.tabulate(
                body, headers=["aten operator", "calls", "total", "self", "of node"], disable_numparse=True
            )
        )
    return "\n\n".join(blocks)


def threads_text(reports: list[Report], top: int | None = 20) -> str:
    """Side by side: the same model at several thread counts, per node and in total."""
    first = reports[0]
    heads = [f"@{r.threads} thr" for r in reports]
    total = [
        [
            "run (profiled median)",
            *[format_seconds(r.run_median_s) for r in reports],
            *[_speedup(first.run_median_s, r.run_median_s) for r in reports[1:]],
        ],
        [
            "uninstrumented median",
            *[format_seconds(r.eager_median_s) for r in reports],
            *[_speedup(first.eager_median_s, r.eager_median_s) for r in reports[1:]],
        ],
    ]
    by_name = [{row.name: row for row in r.rows} for r in reports]
    body = []
    for row in first.select(sort="median", top=top):
        medians = [m[row.name].median_s if row.name in m else None for m in by_name]
        body.append([row.name, *[format_seconds(x) for x in medians], *[_speedup(medians[0], x) for x in medians[1:]]])
    speed_heads = [f"speed-up {h}" for h in heads[1:]]
    return (
        tabulate.tabulate(total, headers=["", *heads, *speed_heads], disable_numparse=True)
        + "\n\n"
        + tabulate.tabulate(body, headers=["node", *heads, *speed_heads], disable_numparse=True)
    )


def _speedup(base: float | None, other: float | None) -> str:
    return "–" if not base or not other else f"{base / other:.2f}×"


def _opt(value: float | None, fmt: str) -> str:
    return "–" if value is None else format(value, fmt)


def capture_lines(report: Report) -> list[str]:
    """The header's lines on how the model became graphs: the capture, its graph breaks, what it costs."""
    if report.capture == "fx":
        return ["capture    fx: torch.fx symbolic tracing, one graph"]
    breaks = len(report.breaks)
    lines = [
        f"capture    dynamo: TorchDynamo, {report.graphs} graph{'s' if report.graphs != 1 else ''}, "
        f"{breaks} graph break{'s' if breaks != 1 else ''}"
        + (f" (switched from {report.capture_reason})" if report.capture_reason else "")
    ]
    for i, b in enumerate(report.breaks[:5], 1):
        lines.append(f"break {i:<4} {b.reason}" + (f" at {b.source}" if b.source else ""))
    if breaks > 5:
        lines.append(f"break      … {breaks - 5} more (--json lists them all)")
    if report.reference_median_s and report.eager_median_s:
        cost = report.eager_median_s / report.reference_median_s - 1
        lines.append(
            f"eager      the model run uncaptured: {format_seconds(report.reference_median_s)} median "
            f"(the captured graphs run {cost:+.0%} against it)"
        )
    if report.late_graphs:
        lines.append(
            f"warning    TorchDynamo compiled {report.late_graphs} more graph(s) after capture (recompiles); "
            "they run untimed, in the unattributed remainder"
        )
    return lines


def _unattributed_line(seconds: float | None, capture: str = "fx") -> str:
    """The header's line on what the node medians leave out of the uninstrumented run."""
    if seconds is not None and seconds < 0:
        # Medians of parts need not add up to the median of the whole; on a short or noisy
        # session the nodes can account for slightly more than the run.
        return (
            f"unattributed none: the node medians add up to {format_seconds(-seconds)} more than the "
            "uninstrumented median (medians of parts need not sum to the median of the whole)"
        )
    glue = "Python glue between ops" if capture == "fx" else "Python between graphs and TorchDynamo's guard checks"
    return f"unattributed {format_seconds(seconds)} of the uninstrumented run is {glue}, not charged to any node"


def _marks(row: NodeRow) -> str:
    """The table's last column: why a node's median deserves caution."""
    marks = ["noisy"] if row.noisy else []
    if row.unsteady:
        marks.append(f"min {format_seconds(row.min_s)}")
    return ", ".join(marks)


#: Columns ``table(columns=…)`` / ``--columns`` can add: name → (header, formatter).
EXTRA_COLUMNS: dict[str, tuple[str, Callable[[NodeRow], str]]] = {
    "flops": ("MFLOP", lambda r: _opt(r.flops / 1e6 if r.flops is not None else None, ".1f")),
    "gflops": ("GFLOP/s", lambda r: _opt(r.gflops_s, ".1f")),
    "gbps": ("GB/s", lambda r: _opt(r.gbytes_s, ".1f")),
    "intensity": ("FLOP/B", lambda r: _opt(r.intensity, ".1f")),
    "bound": ("bound", lambda r: r.bound.replace("-bound", "") or "–"),
    "roofline": (
        "% roofline",
        lambda r: _opt(r.roofline_fraction * 100 if r.roofline_fraction is not None else None, ".0f"),
    ),
    "params": ("params", lambda r: _opt(r.params, ",d")),
    "mean": ("mean", lambda r: format_seconds(r.mean_s)),
    "min": ("min", lambda r: format_seconds(r.min_s)),
    "max": ("max", lambda r: format_seconds(r.max_s)),
    "iqr": ("IQR", lambda r: format_seconds(r.iqr_s)),
    "source": ("source", lambda r: r.source),
}


def _efficiency(flops: float | None, moved: float | None, median_s: float, peaks: MachinePeaks | None) -> dict:
    """Achieved rates and roofline placement of one node, as NodeRow fields."""
    if flops is None or moved is None or median_s <= 0:
        return {}
    out: dict[str, Any] = {
        "gflops_s": flops / median_s / 1e9,
        "gbytes_s": moved / median_s / 1e9,
        "intensity": flops / moved if moved else None,
    }
    placed = place_on_roofline(flops, moved, median_s, peaks) if peaks else None
    if placed:
        out["bound"] = placed.bound
        out["roofline_fraction"] = placed.fraction
    return out


def _subtree_flops(graph: GraphInfo) -> dict[str, float]:
    totals: dict[str, float] = {}
    for info in graph.nodes:
        if info.flops is None:
            continue
        path = info.module_path
        while True:
            totals[path] = totals.get(path, 0.0) + info.flops
            if not path:
                break
            path = path.rpartition(".")[0]
    return totals


def _ancestry(path: str) -> list[str]:
    if not path:
        return []
    parts = path.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def _span(name: str, cat: str, start: float, dur: float, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "cat": cat, "ph": "X", "ts": start * 1e6, "dur": dur * 1e6, "pid": 1, "tid": 1, "args": args}


def _info_of(row: NodeRow) -> NodeInfo:
    return NodeInfo(
        name=row.name,
        index=row.index,
        op=row.op,
        target=row.target,
        type_name=row.type_name,
        module_path=row.module_path,
        node_text="",
    )


def _json_default(value: Any) -> Any:
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def check_writable(path: str | os.PathLike[str]) -> Path:
    """Fail early, in one sentence, when ``path`` cannot be written (before any profiling)."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise FxtuiError(f"cannot write {p}: it is a directory")
    if not parent.is_dir():
        raise FxtuiError(f"cannot write {p}: the directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise FxtuiError(f"cannot write {p}: the directory {parent} is not writable")
    if p.exists() and not os.access(p, os.W_OK):
        raise FxtuiError(f"cannot write {p}: the file is not writable")
    return p


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (temporary file, then rename)."""
    p = check_writable(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent if str(p.parent) else ".")
    try:
        # mkstemp makes the file private (0600); an export should get the mode any new
        # file gets here, or keep the mode of the file it replaces.
        os.fchmod(fd, p.stat().st_mode & 0o7777 if p.exists() else 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise FxtuiError(f"cannot write {p}: {e.strerror or e}") from e
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def export(
    report: Report, *, json_path: str | None = None, csv_path: str | None = None, trace_path: str | None = None
) -> list[str]:
    """Write the requested exports; returns the paths written."""
    written = []
    if json_path:
        write_atomic(json_path, report.to_json())
        written.append(json_path)
    if csv_path:
        write_atomic(csv_path, report.to_csv())
        written.append(csv_path)
    if trace_path:
        write_atomic(trace_path, json.dumps(report.to_chrome_trace()))
        written.append(trace_path)
    return written


def load_json(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and validate a report written by ``--json``/``--save``; FxtuiError when it is not one."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FxtuiError(f"{p} does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise FxtuiError(f"cannot read {p}: {getattr(e, 'strerror', None) or e}") from None
    except json.JSONDecodeError as e:
        raise FxtuiError(f"{p} is not valid JSON (line {e.lineno}: {e.msg})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise FxtuiError(f'{p} is not an fxtui report (no "schema": "{SCHEMA}")')
    if data.get("version") != SCHEMA_VERSION:
        raise FxtuiError(
            f"{p} is an fxtui report of version {data.get('version')!r}; this fxtui reads version {SCHEMA_VERSION}"
        )
    rows = data.get("rows")
    if not isinstance(rows, list) or not all(_valid_row(r) for r in rows):
        raise FxtuiError(f"{p} is damaged: its rows are not fxtui node rows")
    if not isinstance(data.get("metadata"), dict) or not isinstance(data.get("modules"), list):
        raise FxtuiError(f"{p} is damaged: metadata or modules are missing")
    if not all(_valid_module(m) for m in data["modules"]):
        raise FxtuiError(f"{p} is damaged: its modules are not fxtui module rows")
    return data


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _valid_module(row: object) -> bool:
    return isinstance(row, dict) and isinstance(row.get("path"), str) and _is_number(row.get("inclusive_s"))


def _valid_row(row: object) -> bool:
    return (
        isinstance(row, dict)
        and isinstance(row.get("name"), str)
        and isinstance(row.get("module_path"), str)
        and _is_number(row.get("median_s"))
    )
