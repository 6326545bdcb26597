"""What one profile measured, as data: :class:`ReportData`, the snapshot it was made from with its rows.

The report *holds* the session's last :class:`~fxtui.core.snapshot.Snapshot` (and through it the
:class:`~fxtui.core.snapshot.GraphInfo`) and adds only what a report has of its own: the rows (each
node's facts, statistics and rates), the module rows, every other rank's rows, the representative run
and the warnings the run printed. Every field of the snapshot and of the graph reads as the report's
own (``report.model``, ``report.steps``, ``report.loss``), so a field added to either is in the report,
its JSON and its loading at once (:mod:`fxtui.report.json_schema` writes them by their types).

Why it holds them rather than copying their fields, or being one type with the snapshot (counted
before the change: ``ReportData`` had 43 fields, 37 of them copied by matching names from the
snapshot's 29 and the graph's 20; now it has 7, none copied):

* copying by name gave a renamed field a silent default and made every new figure three Optional
  fields; holding the snapshot names each field once, and a rename fails where it is read;
* one type would put the report's rows and rates into every snapshot a live session publishes several
  times a second, or recompute them from a loaded file — where a compiled model's module rows (what
  each module's kernels fused) cannot be rebuilt from the rows. The five live-only fields a snapshot
  has (state, sequence, status message, what-if progress and options) are left out of the file
  instead (:data:`~fxtui.report.json_schema.LEFT_OUT`).

Text and files are the engine's (:mod:`fxtui.report.text`, :mod:`fxtui.report.export`); the Python
API's :class:`fxtui.Report` adds them to this data. Loading needs neither torch nor the model, so
``fxtui diff``, ``fxtui.load`` and the app read saved reports too.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from fxtui.core.columns import sort_column
from fxtui.core.compilation import fused_into
from fxtui.core.errors import FxtuiError
from fxtui.core.filters import FilterSpec, NodeColumns
from fxtui.core.findings import Hint, MachinePeaks, place_on_roofline
from fxtui.core.nodes import ModuleStats, build_module_tree, module_memory, phase_totals
from fxtui.core.program_figures import lead_waiting, program_figures
from fxtui.core.rollup import ModulePlan
from fxtui.core.rows import ModuleRow, NodeRow, Rates
from fxtui.core.snapshot import GraphInfo, RunSummary, RunSummaryMixin, Snapshot, State
from fxtui.report.json_rows import module_row_from_json, module_row_json, node_row_from_json, node_row_json
from fxtui.report.json_schema import SCHEMA, SCHEMA_VERSION, checked, fields_from_metadata, load_json, metadata_json
from fxtui.report.json_values import encode
from fxtui.report.waiting_text import waiting_json

R = TypeVar("R", bound="ReportData")

#: The snapshot's and the graph's fields, which read as the report's own (the snapshot's first).
_SNAPSHOT_FIELDS = frozenset(f.name for f in fields(Snapshot))
_GRAPH_FIELDS = frozenset(f.name for f in fields(GraphInfo))


#: The ATen ops a loss ends in, and the loss they make (the first found, in this order, names it).
_LOSS_OPS = (
    ("binary_cross_entropy_with_logits", "binary cross-entropy with logits"),
    ("binary_cross_entropy", "binary cross-entropy"),
    ("nll_loss_forward", "NLL"),
    ("nll_loss2d_forward", "NLL"),
    ("mse_loss", "MSE"),
    ("smooth_l1_loss", "smooth L1"),
    ("huber_loss", "Huber"),
    ("l1_loss", "L1"),
    ("kl_div", "KL divergence"),
    ("cosine_embedding_loss", "cosine embedding"),
    ("margin_ranking_loss", "margin ranking"),
)


def loss_name(ops: set[str]) -> str:
    """The loss a program's ``(loss)`` ops make: ``cross-entropy`` (a log-softmax then NLL), ``MSE`` …; ``computed by
    the script`` when they end in no op a loss is known by; ``""`` when there are none."""
    if not ops:
        return ""
    for op, name in _LOSS_OPS:
        if op in ops:
            return "cross-entropy" if name == "NLL" and "_log_softmax" in ops else name
    return "computed by the script"


@dataclass(frozen=True)
class ReportData(RunSummaryMixin):
    """The result of a profile: the snapshot it was made from, per-node rows (graph order) and per-module rows.

    Every field of the snapshot and of its graph reads as the report's own: ``report.runs``,
    ``report.eager_median_s``, ``report.steps``, ``report.model``, ``report.training`` …
    (:class:`~fxtui.core.snapshot.Snapshot`, :class:`~fxtui.core.snapshot.GraphInfo`).
    """

    snapshot: Snapshot
    """What the session measured, with its graph (:attr:`graph`)."""
    rows: list[NodeRow]
    """One per node that ran, graph order: its facts, statistics and rates (a distributed job: the shown rank's)."""
    modules: list[ModuleRow]
    """One per module path, root (``""``) first."""
    rank_rows: Mapping[int, list[NodeRow]] = field(default_factory=dict)
    """A distributed job's other ranks: each one's rows (``rank_summary.shown`` is the rank of :attr:`rows`)."""
    warnings: tuple[str, ...] = ()
    """What the run warned of (a NaN loss, a non-finite output)."""
    clock_overhead_ns: int = 0
    """What reading the clock costs, subtracted from each node's time (0: not measured)."""
    timeline: list[tuple[str, float, float]] = field(default_factory=list)
    """One representative profiled run: (node name, start s, duration s), graph order (for a trace; not saved)."""

    def __post_init__(self) -> None:
        if self.snapshot.graph is None:
            raise ValueError("a snapshot without a traced graph has nothing to report")

    def __getattr__(self, name: str) -> Any:
        """The snapshot's fields, then the graph's, read as the report's own."""
        snapshot = self.__dict__.get("snapshot")
        if snapshot is None:  # not set yet (while unpickling): nothing to read through
            raise AttributeError(name)
        if name in _SNAPSHOT_FIELDS:
            return getattr(snapshot, name)
        if name in _GRAPH_FIELDS:
            return getattr(snapshot.graph, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute {name!r}")

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *_SNAPSHOT_FIELDS, *_GRAPH_FIELDS})

    @property
    def graph(self) -> GraphInfo:
        """What was profiled: the model (or program), its inputs, nodes and module tree, how it was captured."""
        assert self.snapshot.graph is not None  # __post_init__
        return self.snapshot.graph

    # -- derived figures -----------------------------------------------------------

    @property
    def hints(self) -> tuple[Hint, ...]:
        """Suggestions, when they were asked for (none otherwise)."""
        return self.snapshot.hints or ()

    @property
    def failures(self) -> int:
        """Runs that raised inside the model."""
        return self.snapshot.error.runs_failed if self.snapshot.error else 0

    @property
    def last_error(self) -> str:
        """The latest failure inside the model (``""``: none)."""
        return self.snapshot.error.message if self.snapshot.error else ""

    @property
    def optimizer(self) -> str:
        """The optimizer a training step runs: a model's (``SGD(lr=0.001)``, ``--train``), or the class a program's
        steps call (``AdamW``: what its steps hold); ``""`` when none is known."""
        if self.graph.optimizer:
            return self.graph.optimizer
        holds = self.snapshot.steps.holds if self.snapshot.steps is not None else ()
        return ", ".join(name.removeprefix("optimizer:") for name, _ in holds if name.startswith("optimizer:"))

    @property
    def loss(self) -> str:
        """How a training step's loss is made: a model's (``--train``: ``cross-entropy against fixed random labels``),
        or, for a program, what its ``(loss)`` computes (``cross-entropy``, ``MSE``); ``""`` when none is known."""
        if self.graph.loss or self.snapshot.program is None:
            return self.graph.loss
        ops = {r.info.target.removeprefix("aten.") for r in self.rows if r.info.module_path.endswith("(loss)")}
        return loss_name(ops)

    @property
    def attributed_s(self) -> float:
        """Sum of node medians."""
        return sum(r.median_s for r in self.rows)

    @property
    def mode(self) -> str:
        """``run`` (a program profiled as it ran), ``generate``, ``train`` or ``inference``."""
        if self.snapshot.program is not None:
            return "run"
        return "generate" if self.snapshot.generation is not None else "train" if self.graph.training else "inference"

    @property
    def phases(self) -> dict[str, float]:
        """In a training step: the sum of node medians of each phase (forward, backward, optimizer)."""
        return phase_totals([r.info for r in self.rows], {r.name: r.stats for r in self.rows})

    @property
    def figures(self) -> RunSummary:
        """Fidelity, overhead and the unattributed remainder. A program's fidelity is the median of its sampled
        steps' own ratios (each one's ops ÷ the unsampled median), so it lies inside the range printed with it."""
        figures = RunSummary.of(self.attributed_s, self.snapshot.run_median_s, self.snapshot.eager_median_s)
        return program_figures(self.snapshot, figures)

    @property
    def applies(self) -> frozenset[str]:
        """What kind of profile this is, for the fields that apply only to some (:data:`~fxtui.report.json_rows.
        APPLIES_ONLY`): ``distributed``, ``phases``, ``generating``, ``program``."""
        kinds = {
            "distributed": self.snapshot.rank_summary is not None,
            "phases": self.graph.training or self.snapshot.program is not None,
            "generating": self.snapshot.generation is not None or self.graph.generating,
            "program": self.snapshot.program is not None,
        }
        return frozenset(kind for kind, holds in kinds.items() if holds)

    def replace(self: R, **changes: Any) -> R:
        """A copy with ``changes``, each to the report, its snapshot or its graph, whichever has the field."""
        own = {f.name for f in fields(self)}
        unknown = set(changes) - own - _SNAPSHOT_FIELDS - _GRAPH_FIELDS
        if unknown:
            raise TypeError(f"a report has no field {', '.join(sorted(unknown))}")
        graph_changes = {k: v for k, v in changes.items() if k in _GRAPH_FIELDS and k not in _SNAPSHOT_FIELDS}
        snapshot_changes = {k: v for k, v in changes.items() if k in _SNAPSHOT_FIELDS and k not in own}
        snapshot = changes.get("snapshot", self.snapshot)
        if graph_changes:
            snapshot_changes["graph"] = dataclasses.replace(snapshot.graph, **graph_changes)
        if snapshot_changes:
            snapshot = dataclasses.replace(snapshot, **snapshot_changes)
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if k in own}, snapshot=snapshot)

    # -- construction --------------------------------------------------------------

    @classmethod
    def from_snapshot(cls: type[R], snapshot: Snapshot, **extra: Any) -> R:
        """Freeze a session's snapshot into rows; ``extra`` sets the report's own fields (``warnings``,
        ``timeline``, ``clock_overhead_ns``) or changes the snapshot's or the graph's."""
        graph = snapshot.graph
        if graph is None:
            raise ValueError("a snapshot without a traced graph has nothing to report")
        report = cls(
            snapshot=snapshot,
            rows=node_rows(graph, snapshot),
            modules=_module_rows(graph, snapshot),
            rank_rows=_rank_rows(snapshot),
        )
        return report.replace(**extra) if extra else report

    @classmethod
    def from_dict(cls: type[R], data: Mapping[str, Any]) -> R:
        """The report :meth:`to_dict` wrote (or a report file of an older version this fxtui reads)."""
        return cls._from_checked(checked(data, "the report"))

    @classmethod
    def _from_checked(cls: type[R], data: Mapping[str, Any]) -> R:
        meta = data["metadata"]
        rows = [node_row_from_json(r) for r in data["rows"]]
        modules = [module_row_from_json(m) for m in data["modules"]]
        snapshot_fields = fields_from_metadata(Snapshot, meta)
        graph_fields = fields_from_metadata(GraphInfo, meta)
        summary = snapshot_fields.get("rank_summary")
        own, by_rank = rows, dict[int, list[NodeRow]]()
        if summary is not None:  # a distributed job: the shown rank's rows, then every other rank's
            own = [r for r in rows if r.stats.rank in (summary.shown, -1)]
            for row in rows:
                if row.stats.rank not in (summary.shown, -1):
                    by_rank.setdefault(row.stats.rank, []).append(row)
        graph = GraphInfo(
            **{**graph_fields, "nodes": tuple(r.info for r in own), "modules": _module_tree(own, modules, graph_fields)}
        )
        snapshot = Snapshot(
            **{
                **snapshot_fields,
                "graph": graph,
                "state": State.DONE,
                "nodes": {r.name: r.stats for r in own},
                "modules": {m.path: _module_stats(m) for m in modules},
            }
        )
        return cls(
            snapshot=snapshot,
            rows=own,
            modules=modules,
            rank_rows=by_rank,
            warnings=tuple(str(w) for w in meta.get("warnings") or ()),
            clock_overhead_ns=int(meta.get("clock_overhead_ns") or 0),
        )

    @classmethod
    def load(cls: type[R], path: str | os.PathLike[str]) -> R:
        """Read a report written by ``--json``/``--save``; FxtuiError when the file is not one."""
        data = load_json(path)
        try:
            return cls._from_checked(data)
        except (TypeError, ValueError, KeyError, AttributeError, IndexError) as e:
            raise FxtuiError(f"{path} is damaged: {e}") from None

    def to_dict(self) -> dict[str, Any]:
        """Everything in the report as JSON-ready data, with the schema's name and version."""
        return {
            "schema": SCHEMA,
            "version": SCHEMA_VERSION,
            "metadata": self.metadata(),
            "rows": self.row_records(),
            "modules": self.module_records(),
        }

    def row_records(self) -> list[dict[str, Any]]:
        """Every rank's node rows as the JSON's ``rows``: one flat record each (:mod:`fxtui.report.json_rows`)."""
        applies = self.applies
        return [node_row_json(r, applies) for r in self.all_rows()]

    def module_records(self) -> list[dict[str, Any]]:
        """The module rows as the JSON's ``modules``: one record each."""
        applies = self.applies
        return [module_row_json(m, applies) for m in self.modules]

    def metadata(self) -> dict[str, Any]:
        """The run's settings, figures and findings as JSON-ready data (the ``metadata`` of :meth:`to_dict`)."""
        return {
            **metadata_json(self.graph),
            **metadata_json(self.snapshot),
            "optimizer": self.optimizer or None,
            "loss": self.loss or None,
            "warnings": list(self.warnings),
            "clock_overhead_ns": self.clock_overhead_ns or None,
            "mode": self.mode,
            "fidelity": encode(self.fidelity),
            "overhead": encode(self.overhead),
            "unattributed_s": encode(self.unattributed_s),
            "phases_s": encode(self.phases),
            "disturbance_line": (self.snapshot.disturbance.line() or None) if self.snapshot.disturbance else None,
            **waiting_json(lead_waiting(self.snapshot)),
        }

    # -- selection -------------------------------------------------------------------

    def all_rows(self) -> list[NodeRow]:
        """Every rank's rows: the shown rank's (:attr:`rows`) first, then each other rank's in order."""
        return [*self.rows, *(row for rank in sorted(self.rank_rows) for row in self.rank_rows[rank])]

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


def node_rows(graph: GraphInfo, snapshot: Snapshot) -> list[NodeRow]:
    """A row for each node of ``graph`` that ``snapshot`` timed, graph order (a program's node not timed yet has
    none)."""
    return [
        NodeRow(info, stats, rates(info.flops, info.bytes_moved, stats.median_s, graph.peaks))
        for info in graph.nodes
        if (stats := snapshot.nodes.get(info.name)) is not None and stats.count
    ]


def _rank_rows(snapshot: Snapshot) -> dict[int, list[NodeRow]]:
    """Each other rank's rows, from its own snapshot, with the spread over the ranks the shown rank's rows have."""
    out: dict[int, list[NodeRow]] = {}
    nodes = {r.rank: r.node for r in snapshot.rank_summary.ranks} if snapshot.rank_summary is not None else {}
    for rank, other in sorted(snapshot.other_ranks.items()):
        if other.graph is None:
            continue
        rows = []
        for row in node_rows(other.graph, other):
            spread = snapshot.nodes.get(row.name)
            stats = dataclasses.replace(
                row.stats,
                rank=rank,
                rank_min_s=spread.rank_min_s if spread else row.stats.median_s,
                rank_max_s=spread.rank_max_s if spread else row.stats.median_s,
                slowest_rank=spread.slowest_rank if spread else rank,
                node=nodes.get(rank, -1),
            )
            rows.append(dataclasses.replace(row, stats=stats))
        out[rank] = rows
    return out


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


def _module_tree(rows: list[NodeRow], modules: list[ModuleRow], graph_fields: Mapping[str, Any]) -> dict[str, Any]:
    """A loaded report's module tree: every saved module path with its class, holding the rows' nodes."""
    leaves = (*graph_fields.get("leaf_modules", ()), *(m.path for m in modules if m.leaf_fallback))
    classes = {m.path: m.class_name for m in modules}
    return build_module_tree([r.info for r in rows], classes, leaves, extra=classes)


def _module_stats(row: ModuleRow) -> ModuleStats:
    return ModuleStats(
        path=row.path, inclusive_s=row.inclusive_s, self_s=row.self_s, pct=row.pct, nodes=row.nodes,
        forward_s=row.forward_s, backward_s=row.backward_s, prefill_s=row.prefill_s, decode_s=row.decode_s,
    )  # fmt: skip
