"""The collector: what the agent sends about a program's steps, aggregated into snapshots and a report.

It runs outside the profiled program (the headless ``fxtui run``, or the engine process of the
app). Every step's wall time and phases go into the step timeline; the sampled steps' ops into
a :class:`~fxtui.core.sample_window.SampleWindow`, one column per node and output shape. A
node's row shows its most frequent shape; the others are listed per node
(``Snapshot.shapes``), so a last smaller batch is never mixed into a node's median silently.

The figures are those of a captured model, read for a program: *run* is a sampled step (timed
per node), *uninstrumented* an unsampled one; fidelity is Σ node medians ÷ the unsampled
steps' median, overhead the sampled steps' median ÷ the unsampled steps'. Warm-up steps, and
the sampled steps that also noted new nodes' inputs and source lines, are left out.
"""

from __future__ import annotations

import statistics
from array import array
from collections import deque
from collections.abc import Iterable

import numpy as np

from fxtui.core.agent_messages import Bye, Hello, Step
from fxtui.core.column_table import ColumnTable, equal_tuples, float_column
from fxtui.core.generation import GENERATE_PHASES, GenerationSummary, phase_share
from fxtui.core.nodes import NodeStats, Spread
from fxtui.core.op_nodes import EagerNode, RootModule, eager_graph
from fxtui.core.program_run import STEP_PHASES, ProgramState, StepSummary, StepTimes, phase_medians
from fxtui.core.rollup import module_table
from fxtui.core.sample_window import SampleWindow
from fxtui.core.snapshot import GraphInfo, RunSpreads, Snapshot, State
from fxtui.jobs.generate_calls import GenerationCalls

#: Steps the timeline keeps for the app's plot and the export.
TIMELINE = 10_000
#: Steps of each kind (sampled, unsampled) whose wall times the run figures come from.
FIGURES_WINDOW = 256
#: The whole run's step time kept coarse: at most this many points, each the median of a stretch.
HISTORY = 512


class Collector:
    """Aggregates one program's messages; :meth:`snapshot` freezes them for the app and the report."""

    def __init__(self, command: tuple[str, ...], log: str = "", warmup: int = 5) -> None:
        self.program = ProgramState(command, log=log)
        self.hello: Hello | None = None
        self.kind = "call"
        self.warmup = 0
        self.nodes: dict[int, EagerNode] = {}
        self.roots: dict[int, RootModule] = {}
        self.window = SampleWindow()
        self._columns: dict[tuple[int, str], int] = {}
        self._shape_counts: dict[int, dict[str, int]] = {}
        self.timeline: deque[StepTimes] = deque(maxlen=TIMELINE)
        self._plain: deque[int] = deque(maxlen=FIGURES_WINDOW)
        self._sampled: deque[int] = deque(maxlen=FIGURES_WINDOW)
        self._sampled_ops: deque[int] = deque(maxlen=FIGURES_WINDOW)
        self._faults: deque[int] = deque(maxlen=FIGURES_WINDOW)
        self._history: list[float] = []
        self._history_every = 1
        self._stretch: list[int] = []
        self.steps = 0
        self.sampled = 0
        self.warmup_steps = warmup
        self._graph: GraphInfo | None = None
        self._graph_key: tuple[int, int, int] = (-1, -1, -1)
        self._described = 0
        self.failed = ""
        self._trace: tuple[int, list[tuple[int, int, str, int]]] = (0, [])
        """The latest sampled step's ops, for a trace: its start, and each op's node, ns, shape and start."""
        self.generation = GenerationCalls()
        """The program's ``generate()`` calls (:mod:`fxtui.agent.generate_hook`)."""

    # -- messages ---------------------------------------------------------------------------

    def receive(self, message: object, agent: int = 0) -> None:
        """Take one message from the agent (``agent``: which of the program's processes sent it)."""
        if isinstance(message, Step):
            self._step(message)
            if message.note:  # shown as the program's warning, as the agent's own failure is
                self.failed = message.note
        elif isinstance(message, Hello):
            self.hello = message
            self._replace(pid=message.pid)
        elif isinstance(message, Bye):
            self.failed = message.failed or self.failed

    def trace(self) -> list[tuple[str, float, float]]:
        """The latest sampled step as ``(node name, start s, duration s)``, the clock's own seconds (one clock for
        every process of a machine: ranks line up)."""
        _, ops = self._trace
        graph = self.graph()
        names = [n.name for n in graph.nodes]
        return [(names[node], began / 1e9, ns / 1e9) for node, ns, _shape, began in ops if node < len(names)]

    def started(self, pid: int, log: str) -> None:
        """The program runs as ``pid``, its output going to ``log``."""
        self._replace(pid=pid, log=log)

    def tail(self, lines: tuple[str, ...]) -> None:
        """The program's latest output lines (its log, when the app owns the terminal)."""
        if lines != self.program.log_tail:
            self._replace(log_tail=lines)

    def reset(self) -> None:
        """Forget the figures so far (the steps are counted afresh; nodes and roots stay known)."""
        self._reset_steps()
        self.window = SampleWindow()
        self._columns.clear()
        self._shape_counts.clear()

    def ended(self, code: int) -> None:
        """The program ended with status ``code`` (``-N``: killed by signal N)."""
        note = self.program.note
        if not self.roots and not note:
            note = "no module was called: the program ran no nn.Module"
        self._replace(running=False, exit_code=code, note=note)

    def _replace(self, **changes: object) -> None:
        fields = {f: getattr(self.program, f) for f in self.program.__dataclass_fields__}
        self.program = ProgramState(**{**fields, **changes})

    def _step(self, step: Step) -> None:
        for root in step.roots:
            self.roots[root.index] = root
        for node in step.nodes:
            if node.inputs or node.source:
                self._described += 1
            self.nodes[node.id] = node
        if step.kind != self.kind:  # the first optimizer step: the calls before were its start
            self.kind = step.kind
            self.warmup = 0
            self._reset_steps()
        if step.dropped != self.program.dropped:
            self._replace(dropped=step.dropped)
        if step.index < self.warmup_steps:
            self.warmup = max(self.warmup, step.index + 1)
            return
        self.steps += 1
        times = StepTimes(step.index, step.wall_ns, step.phases_ns, step.sampled)
        self.timeline.append(times)
        self._grow_history(step.wall_ns)
        if not (step.sampled and step.describing):  # a describing step's calls are slower still: no figure
            for call in step.generation:
                self.generation.add(call, sampled=step.sampled)
        if not step.sampled:
            self._plain.append(step.wall_ns)
            return
        if step.describing:
            return
        self.sampled += 1
        self._sampled.append(step.wall_ns)
        if step.faults >= 0:
            self._faults.append(step.faults)
        self._add_ops(step.ops)
        self._trace = (step.start_ns, step.ops)

    def _reset_steps(self) -> None:
        self.generation.reset()
        self.steps = self.sampled = 0
        self.timeline.clear()
        self._plain.clear()
        self._sampled.clear()
        self._sampled_ops.clear()
        self._faults.clear()
        self._history.clear()
        self._stretch.clear()
        self._history_every = 1

    def _add_ops(self, ops: list[tuple[int, int, str, int]]) -> None:
        columns = np.empty(len(ops), dtype=np.int64)
        ns = np.empty(len(ops), dtype=np.int64)
        new = 0
        for i, (node, duration, shape, _began) in enumerate(ops):
            key = (node, shape)
            column = self._columns.get(key)
            if column is None:
                column = self._columns[key] = len(self._columns)
                new += 1
            counts = self._shape_counts.setdefault(node, {})
            counts[shape] = counts.get(shape, 0) + 1
            columns[i] = column
            ns[i] = duration
        self.window.add_columns(new)
        self.window.add(columns, ns)
        self._sampled_ops.append(int(ns.sum()))

    def _grow_history(self, wall_ns: int) -> None:
        """The run's step time kept coarse: the median of every stretch of steps, stretches doubling as needed."""
        self._stretch.append(wall_ns)
        if len(self._stretch) < self._history_every:
            return
        self._history.append(statistics.median(self._stretch) / 1e9)
        self._stretch.clear()
        if len(self._history) >= HISTORY:
            pairs = self._history
            self._history = [(pairs[i] + pairs[i + 1]) / 2 for i in range(0, len(pairs) - 1, 2)]
            self._history_every *= 2

    # -- the description ---------------------------------------------------------------------

    def graph(self) -> GraphInfo:
        """The nodes found so far as a graph description (a new one only when they changed)."""
        key = (len(self.nodes), len(self.roots), self._described)
        if self._graph is None or key != self._graph_key:
            hello = self.hello
            self._graph = eager_graph(
                self.nodes.values(),
                self.roots.values(),
                model=self.program.script or "program",
                threads=hello.threads if hello else 0,
                training=self.kind == "train",
            )
            self._graph_key = key
        return self._graph

    # -- snapshots ----------------------------------------------------------------------------

    def snapshot(self, state: State = State.RUNNING, message: str = "") -> Snapshot:
        """The figures now."""
        graph = self.graph()
        steps = self.step_summary()
        generation = self.generation.summary()
        plain = _spread(self._plain)
        sampled = _spread(self._sampled)
        base = plain.median if plain else None
        nodes, shapes = self._node_stats(graph, sampled.median if sampled else None, generation)
        run_s = sampled.median if sampled else (base or 1.0)
        modules = module_table(graph.module_plan, *graph.module_plan.totals(nodes.column("median_s")), run_s=run_s)
        base_ns = base * 1e9 if base else None
        spreads = RunSpreads(
            run=sampled,
            eager=plain,
            overhead=_spread([w / base_ns for w in self._sampled]) if base_ns else None,
            fidelity=_spread([s / base_ns for s in self._sampled_ops]) if base_ns else None,
        )
        program = self.program
        if self.failed and program.note != self.failed:
            self._replace(note=self.failed)
            program = self.program
        return Snapshot(
            graph=graph,
            state=state,
            runs=self.sampled,
            run_median_s=sampled.median if sampled else None,
            eager_median_s=base,
            nodes=nodes,
            modules=modules,
            message=message,
            spreads=spreads,
            program=program,
            steps=steps,
            shapes=shapes,
            generation=generation,
        )

    def _node_stats(
        self, graph: GraphInfo, run_s: float | None, generation: GenerationSummary | None = None
    ) -> tuple[ColumnTable[NodeStats], dict[str, tuple[tuple[str, int, float], ...]]]:
        """Each node's statistics at its most frequent shape; the other shapes' counts and medians."""
        stats = self.window.stats()
        count = len(graph.nodes)
        pick = np.full(count, -1, dtype=np.int64)
        shapes: dict[str, tuple[tuple[str, int, float], ...]] = {}
        ids = sorted(self.nodes)
        for i, node_id in enumerate(ids):
            counts = self._shape_counts.get(node_id)
            if not counts:
                continue
            ranked = sorted(counts.items(), key=lambda kv: -kv[1])
            pick[i] = self._columns[(node_id, ranked[0][0])]
            if len(ranked) > 1:
                shapes[graph.nodes[i].name] = tuple(
                    (shape or "?", n, float(stats.median[self._columns[(node_id, shape)]])) for shape, n in ranked
                )
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
            },
            stored={"recent": equal_tuples(float_column(flat.reshape(-1)), count, width)},
        )
        return table, shapes

    def step_summary(self) -> StepSummary:
        """The steps so far: counts, phase medians (over the unsampled steps), the recent timeline."""
        recent = list(self.timeline)[-300:]
        plain = [s for s in self.timeline if not s.sampled][-FIGURES_WINDOW:] or recent
        flat = array("d", (ns / 1e9 for s in recent for ns in s.phases_ns))
        return StepSummary(
            kind=self.kind,
            steps=self.steps,
            warmup=self.warmup,
            sampled=self.sampled,
            phase_median_s=phase_medians(plain),
            step_median_s=statistics.median(self._plain) / 1e9 if self._plain else None,
            sampled_median_s=statistics.median(self._sampled) / 1e9 if self._sampled else None,
            recent=flat,
            recent_sampled=bytes(int(s.sampled) for s in recent),
            history=array("d", [*self._history, *([statistics.median(self._stretch) / 1e9] if self._stretch else [])]),
            history_every=self._history_every,
            faults_median=statistics.median(self._faults) if self._faults else None,
        )


def _spread(values: Iterable[float]) -> Spread | None:
    """Median and quartiles of ``values`` given in ns (ratios as they are), in seconds."""
    data = list(values)
    if not data:
        return None
    scale = 1e9 if isinstance(data[0], int) else 1.0
    if len(data) == 1:
        return Spread(data[0] / scale, data[0] / scale, data[0] / scale)
    q25, q50, q75 = statistics.quantiles(data, n=4, method="inclusive")
    return Spread(q50 / scale, q25 / scale, q75 / scale)


# Keep STEP_PHASES importable from here for the module's readers.
__all__ = ["STEP_PHASES", "Collector"]
