"""The collector: what one process's agent sends about its steps, aggregated into snapshots and a report.

It runs outside the profiled program (the headless ``fxtui run``, or a job's daemon) or, for
``fxtui.watch()``, in the caller's process. The nodes and the roots the agent names are the
program's; the figures are kept per kind of step (:class:`~fxtui.jobs.kind_tally.KindTally`:
training steps, evaluation calls, ``generate()`` calls), and a snapshot shows one kind — training
when there is any, as the header leads with it — with every kind summed up beside it.
"""

from __future__ import annotations

import numpy as np

from fxtui.core.column_table import ColumnTable, equal_tuples, float_column
from fxtui.core.generation import GENERATE_PHASES, GenerationSummary, phase_share
from fxtui.core.nodes import NodeStats
from fxtui.core.op_graph import eager_graph
from fxtui.core.op_nodes import EagerNode, RootModule
from fxtui.core.program_run import STEP_KINDS, STEP_PHASES, KindSummary, ProgramState
from fxtui.core.rollup import module_table
from fxtui.core.snapshot import GraphInfo, RunSpreads, Snapshot, State
from fxtui.jobs.generation_figures import generation_kind, generation_medians, generation_spreads
from fxtui.jobs.kind_tally import KindTally
from fxtui.jobs.op_layout import PhaseIndex
from fxtui.jobs.step_shapes import shapes_in_a_step
from fxtui.jobs.thread_waits import ThreadWaits
from fxtui.wire.agent_messages import Bye, Hello, Step


class Collector:
    """Aggregates one process's messages; :meth:`snapshot` freezes them for the app and the report."""

    def __init__(self, command: tuple[str, ...], log: str = "", warmup: int = 5, keep_disturbed: bool = False) -> None:
        self.program = ProgramState(command, log=log)
        self.hello: Hello | None = None
        self.nodes: dict[int, EagerNode] = {}
        self.roots: dict[int, RootModule] = {}
        self.beside = ThreadWaits()
        """Its other threads' wait that held its steps up, second by second (:mod:`fxtui.jobs.thread_waits`)."""
        self.kinds: dict[str, KindTally] = {kind: KindTally(kind, keep_disturbed, self.beside) for kind in STEP_KINDS}
        self._graphs: dict[str, tuple[tuple[int, int, int, int], GraphInfo]] = {}
        self._described = 0
        self.failed = ""
        self._phases = PhaseIndex()

    # -- messages ---------------------------------------------------------------------------

    def receive(self, message: object, agent: int = 0, ops_taken: bool = True) -> None:
        """Take one message from the agent (``agent``: which of the program's processes sent it; ``ops_taken``
        False: a sampled step whose ops the collector left out, :mod:`fxtui.jobs.intake_lag`)."""
        if isinstance(message, Step):
            self._step(message, ops_taken)
            if message.timer and (message.timer, message.timer_why) != (self.program.timer, self.program.timer_why):
                self._replace(timer=message.timer, timer_why=message.timer_why)
            if message.note:  # shown as the program's warning, as the agent's own failure is
                self.failed = message.note
        elif isinstance(message, Hello):
            self.hello = message
            self._replace(pid=message.pid)
        elif isinstance(message, Bye):
            self.failed = message.failed or self.failed

    def _step(self, step: Step, ops_taken: bool = True) -> None:
        for root in step.roots:
            self.roots[root.index] = root
        for node in step.nodes:
            if node.inputs or node.source:
                self._described += 1
            self.nodes[node.id] = node
        if step.dropped != self.program.dropped:
            self._replace(dropped=step.dropped)
        figures = self.kinds.get(step.kind)
        if figures is not None:
            sums = step.node_sums() if step.sampled and ops_taken else None
            figures.add(step, self._phases.sums(sums, self.nodes) if sums is not None else (), ops_taken, sums)

    def started(self, pid: int, log: str) -> None:
        """The program runs as ``pid``, its output going to ``log``."""
        self._replace(pid=pid, log=log)

    def tail(self, lines: tuple[str, ...]) -> None:
        """The program's latest output lines (its log, when the app owns the terminal)."""
        if lines != self.program.log_tail:
            self._replace(log_tail=lines)

    def reset(self) -> None:
        """Forget the figures so far (the steps are counted afresh; nodes and roots stay known)."""
        for figures in self.kinds.values():
            figures.reset()

    def ended(self, code: int) -> None:
        """The program ended with status ``code`` (``-N``: killed by signal N)."""
        note = self.program.note
        if not self.roots and not note:
            note = "no module was called: the program ran no nn.Module"
        self._replace(running=False, exit_code=code, note=note)

    def _replace(self, **changes: object) -> None:
        fields = {f: getattr(self.program, f) for f in self.program.__dataclass_fields__}
        self.program = ProgramState(**{**fields, **changes})

    @property
    def steps(self) -> int:
        """Steps after warm-up, every kind."""
        return sum(f.steps for f in self.kinds.values())

    @property
    def kind(self) -> str:
        """The kind the figures lead with: training when there is any, then evaluation, then generation."""
        for kind in STEP_KINDS:
            figures = self.kinds[kind]
            if figures.steps or figures.warmup:
                return kind
        return STEP_KINDS[0]

    # -- the description ---------------------------------------------------------------------

    def graph(self, kind: str | None = None) -> GraphInfo:
        """The nodes ``kind``'s steps ran (every node before any was sampled), as a graph description."""
        kind = kind or self.kind
        figures = self.kinds[kind]
        key = (len(self.nodes), len(self.roots), self._described, len(figures.nodes))
        cached = self._graphs.get(kind)
        if cached is not None and cached[0] == key:
            return cached[1]
        wanted = figures.nodes
        hello = self.hello
        graph = eager_graph(
            [n for n in self.nodes.values() if n.id in wanted],
            self.roots.values(),
            model=self.program.script or "program",
            threads=hello.threads if hello else 0,
            training=kind == "train",
        )
        self._graphs[kind] = (key, graph)
        return graph

    def trace(self, kind: str | None = None) -> list[tuple[str, float, float]]:
        """The latest sampled step as ``(node name, start s, duration s)``, the clock's own seconds (one clock for
        every process of a machine: ranks line up)."""
        kind = kind or self.kind
        _, sums = self.kinds[kind].trace
        if sums is None:
            return []
        names = dict(zip(sorted(self.kinds[kind].nodes), (n.name for n in self.graph(kind).nodes), strict=False))
        return [(names[node], began / 1e9, ns / 1e9) for node, ns, _shape, began in sums.raw() if node in names]

    def trace_left_out(self, kind: str | None = None) -> int:
        """The latest sampled step's ops left out of :meth:`trace` (its first :data:`~fxtui.core.op_sums.RAW_OPS`
        are drawn): 0 when the trace is the whole step."""
        _, sums = self.kinds[kind or self.kind].trace
        return sums.left_out if sums is not None else 0

    # -- snapshots ----------------------------------------------------------------------------

    def snapshot(self, state: State = State.RUNNING, message: str = "", kind: str | None = None) -> Snapshot:
        """The figures now, of ``kind`` (the one they lead with when None), every kind summed up beside them."""
        kind = kind if kind in self.kinds else self.kind
        figures = self.kinds[kind]
        graph = self.graph(kind)
        generation = figures.generation.summary()
        sampled, plain, overhead, fidelity = figures.spreads()
        nodes, shapes = self._node_stats(figures, graph, sampled.median if sampled else None, generation)
        step_shapes = shapes_in_a_step(figures, graph)
        run_s = sampled.median if sampled else (plain.median if plain else 1.0)
        modules = module_table(graph.module_plan, *graph.module_plan.totals(nodes.column("median_s")), run_s=run_s)
        summaries = tuple(self._summary(k) for k in STEP_KINDS if self.kinds[k].steps or self.kinds[k].warmup)
        program = self.program
        if self.failed and program.note != self.failed:
            self._replace(note=self.failed)
            program = self.program
        run_median_s, eager_median_s = sampled.median if sampled else None, plain.median if plain else None
        spreads = RunSpreads(run=sampled, eager=plain, overhead=overhead, fidelity=fidelity)
        if kind == "generate" and generation is not None:  # figures of the prompt and one token, as its lines
            run_median_s, eager_median_s = generation_medians(generation)
            spreads = generation_spreads()
        return Snapshot(
            graph=graph,
            state=state,
            runs=figures.sampled,
            run_median_s=run_median_s,
            eager_median_s=eager_median_s,
            nodes=nodes,
            modules=modules,
            message=message,
            spreads=spreads,
            program=program,
            steps=figures.step_summary(summaries),
            shapes=shapes,
            generation=generation,
            step_shapes=step_shapes,
        )

    def _summary(self, kind: str) -> KindSummary:
        figures = self.kinds[kind]
        if not figures.sampled:
            return figures.summary()
        stats = figures.stats()
        ids = sorted(figures.nodes)
        pick, _ = figures.node_columns(ids)
        if not len(stats.median):
            return figures.summary(0.0)
        medians = np.where(pick >= 0, stats.median[np.maximum(pick, 0)], np.nan)
        phases = np.array([STEP_PHASES.index(p) if (p := self.nodes[i].phase) in STEP_PHASES else -1 for i in ids])
        by_phase = tuple(float(np.nansum(medians[phases == i])) for i in range(len(STEP_PHASES)))
        summary = figures.summary(float(np.nansum(medians)), by_phase)
        if kind == "generate":
            return generation_kind(summary, figures.generation.summary(), float(np.nansum(medians)))
        return summary

    def _node_stats(
        self, figures: KindTally, graph: GraphInfo, run_s: float | None, generation: GenerationSummary | None
    ) -> tuple[ColumnTable[NodeStats], dict[str, tuple[tuple[str, int, float], ...]]]:
        """Each node's statistics at its most frequent shape; the other shapes' counts and medians."""
        stats = figures.stats()
        count = len(graph.nodes)
        ids = sorted(figures.nodes)
        pick, others = figures.node_columns(ids)
        shapes = {
            graph.nodes[ids.index(node)].name: tuple((shape or "?", n, float(stats.median[c])) for shape, n, c in seen)
            for node, seen in others.items()
        }
        have = pick >= 0
        col = np.where(have, pick, 0)

        def take(values: np.ndarray, missing: float = 0.0) -> np.ndarray:
            out = values[col] if len(values) else np.zeros(count)
            return np.nan_to_num(np.where(have, out, missing))

        median = take(stats.median)
        run = run_s or float(median.sum()) or 1e-12
        pct = 100.0 * median / run
        if generation is not None:  # a generate() call's nodes: a share of their own phase
            for i, node in enumerate(graph.nodes):
                if node.phase in GENERATE_PHASES:
                    pct[i] = phase_share(node.phase, float(median[i]), generation)
        width = stats.recent.shape[1] if stats.recent.ndim == 2 else 0
        flat = np.zeros((count, width))
        if width and len(stats.median):
            flat[have] = stats.recent[pick[have]]
        q25, q75 = take(stats.q25), take(stats.q75)
        table = ColumnTable.from_columns(
            NodeStats,
            [n.name for n in graph.nodes],
            {
                "count": [int(c) for c in take(stats.count.astype(np.float64))],
                "median_s": float_column(median),
                "mean_s": float_column(take(stats.mean)),
                "p90_s": float_column(take(stats.p90)),
                "min_s": float_column(take(stats.minimum)),
                "max_s": float_column(take(stats.maximum)),
                "iqr_s": float_column(q75 - q25),
                "pct": float_column(pct),
                "q25_s": float_column(q25),
                "q75_s": float_column(q75),
                "calls_per_step": float_column(np.where(have, figures.calls_per_step(pick), 0.0)),
            },
            stored={"recent": equal_tuples(float_column(flat.reshape(-1)), count, width)},
        )
        return table, shapes
