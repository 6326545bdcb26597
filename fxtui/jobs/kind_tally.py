"""The figures of one kind of step (training steps, evaluation calls, ``generate()`` calls) as the collector keeps them.

Every step's wall time and phases go into the kind's timeline; its sampled steps' ops into a
:class:`~fxtui.core.sample_window.SampleWindow`, one column per node and the output shapes it ran at
in a step, one value per step: a node that ran several times in a step (a module called in a loop, or
one activation module after layers of different widths) counts the sum of all its calls, whatever
their shapes, and how many calls it made. A node's row shows its most frequent shapes; steps whose
shapes differ (a last smaller batch) are listed per node (``Snapshot.shapes``), so they are never
mixed into a node's median silently.

The figures are those of a captured model, read for a program: *run* is a sampled step (timed
per node), *uninstrumented* an unsampled one; fidelity is the median of each sampled step's Σ ops ÷
the unsampled steps' median (:mod:`fxtui.jobs.step_wait`), overhead the sampled steps' median ÷ the
unsampled steps'. Warm-up steps are left out; so is the wall time (not the ops) of the sampled steps
that also noted new nodes' inputs, and the ops of sampled steps whose thread waited for a CPU beyond
the threshold (unless ``--keep-disturbed``, or too few quiet ones remain).
Memory is bounded, and at its level from a kind's first steps: the latest :data:`TIMELINE` steps and the latest
:data:`FIGURES_WINDOW` of each kind's walls are rings allocated whole at the first step (:mod:`fxtui.jobs.step_rings`),
each node's window of sampled steps is allocated whole when its column appears, and the whole run's step time is a
coarse history of at most :data:`HISTORY` points. Torch-free, numpy only.
"""

from __future__ import annotations

import statistics
from array import array
from collections import Counter
from collections.abc import Iterable

import numpy as np

from fxtui.core.nodes import Spread
from fxtui.core.op_sums import MAX_STEP_SHAPES, SHAPE_JOIN, NodeSums, step_shapes
from fxtui.core.program_run import STEP_PHASES, KindSummary, StepSummary
from fxtui.core.sample_window import SampleWindow, WindowStats
from fxtui.jobs.generate_calls import GenerationCalls
from fxtui.jobs.op_layout import OpLayout
from fxtui.jobs.step_rings import PHASES, Ring, Timeline, phase_medians
from fxtui.jobs.step_wait import StepWaits
from fxtui.jobs.thread_waits import ThreadWaits
from fxtui.wire.agent_messages import Step

#: Steps the timeline keeps: the latest, those the app's plot and the export show (a step's wall time and phases,
#: ~300 bytes; 10,000 once, the first 80 minutes of a collector of 256 ranks grew by ~770 MB with them).
TIMELINE = 300
#: Steps of each kind (sampled, unsampled) whose wall times the run figures come from.
FIGURES_WINDOW = 256
#: The whole run's step time kept coarse: at most this many points, each the median of a stretch.
HISTORY = 512
#: Different mixes of calls (forwards, backwards, optimizer steps) a kind's steps are counted by, at most.
MIXES = 16


class KindTally:
    """One kind's steps so far: counts, timeline, reference and sampled walls, and every node's window."""

    def __init__(self, kind: str, keep_disturbed: bool = False, beside: ThreadWaits | None = None) -> None:
        self.kind = kind
        self.beside = beside if beside is not None else ThreadWaits()
        """The process's other threads' wait that held its steps up (:mod:`fxtui.jobs.thread_waits`)."""
        self.keep_disturbed = keep_disturbed
        """Sampled steps that waited for a CPU stay in the node figures (``--keep-disturbed``)."""
        self.nodes: set[int] = set()
        """The nodes this kind's sampled steps ran."""
        self.reset()

    def reset(self) -> None:
        """Forget the figures so far (the nodes stay known)."""
        self.steps = self.sampled = self.warmup = 0
        self.untaken = 0
        """Sampled steps whose ops the collector left out (``add(…, ops_taken=False)``)."""
        self.aside: Counter[str] = Counter()
        """Steps the agent left unsampled on purpose, per reason: counted, their times out of every figure."""
        self.window = SampleWindow()
        self._columns: dict[tuple[int, str], int] = {}
        self._column_keys: list[tuple[int, str]] = []
        self._shape_counts: dict[int, dict[str, int]] = {}
        self._calls: dict[int, tuple[int, int]] = {}  # per column: Σ calls and steps counted, for calls per step
        # (tuples of ints, which CPython's garbage collector stops tracking: a list each was 851 tracked objects a
        # rank of a 1,000-op model, 218,000 at 256 ranks, walked by every full pass of the collector's)
        self._layout: OpLayout | None = None
        """The latest sampled step's ops' layout, and its steps not yet folded into the counts above."""
        self._node_columns: tuple[int, list[int], np.ndarray, dict[int, tuple[tuple[str, int, int], ...]]] | None = None
        """:meth:`node_columns`' latest answer, and the sampled steps and nodes it was for."""
        self.timeline = Timeline(TIMELINE)
        self._plain_times = Ring(FIGURES_WINDOW, PHASES)
        """The latest unsampled steps' phases, whose medians the figures show (however many sampled ones between)."""
        self._plain = Ring(FIGURES_WINDOW)
        self._sampled = Ring(FIGURES_WINDOW)
        self._after = Ring(FIGURES_WINDOW)
        """What each sampled step cost after its wall (:attr:`~fxtui.wire.agent_messages.Step.after_ns`)."""
        self._sampled_ops = Ring(FIGURES_WINDOW)
        self._faults = Ring(FIGURES_WINDOW)
        self._history: list[float] = []
        self._history_every = 1
        self._stretch: list[int] = []
        self.generation = GenerationCalls()
        self.holds: tuple[tuple[str, int], ...] = ()
        self._held: Counter[tuple[tuple[str, int], ...]] = Counter()
        """How many warm steps held each mix of calls (bounded: a few mixes in a program)."""
        self.trace: tuple[int, NodeSums | None] = (0, None)
        """The latest sampled step that sent raw ops, for a trace (:data:`~fxtui.core.op_sums.RAW_EVERY_S`): its start,
        and its ops (their first ones raw, :meth:`NodeSums.raw`)."""
        self.waits = StepWaits(self.keep_disturbed, self.beside)
        """Its steps as ops, Python and waiting for a CPU (:mod:`fxtui.jobs.step_wait`)."""

    # -- steps ----------------------------------------------------------------------------------

    def add(
        self, step: Step, phase_ops: tuple[int, ...] = (), ops_taken: bool = True, sums: NodeSums | None = None
    ) -> None:
        """One step of this kind, as the agent sent it (``phase_ops``: a sampled step's Σ op ns per phase;
        ``ops_taken`` False: a sampled step whose ops the collector left out, a rank outside the ranks it compares
        or a collector behind the program: a step of a sampled step's wall time, no sample of its nodes;
        ``sums``: its :meth:`~fxtui.wire.agent_messages.Step.node_sums`, when the caller has them)."""
        if step.restart:
            self.reset()
        if step.sampled and ops_taken:
            sums = sums if sums is not None else step.node_sums()
            self.nodes.update(sums.node_ids().tolist())
        if not step.warm:
            self.warmup += 1
            return
        self.steps += 1
        self.holds = step.holds or self.holds
        if step.holds and (step.holds in self._held or len(self._held) < MIXES):
            self._held[step.holds] += 1
        if step.aside:  # under the program's profiler, or partly recorded: neither a sampled nor a plain step's time
            self.aside[step.aside] += 1
            return
        self.timeline.add((step.index, step.wall_ns, int(step.sampled), *step.phases_ns))
        if not step.sampled:
            self._plain_times.add(step.phases_ns)
        self._grow_history(step.wall_ns)
        for call in step.generation:
            if step.sampled and step.describing:  # a describing step's calls are slower: no figure, only facts
                self.generation.note(call)
            else:
                self.generation.add(call, sampled=step.sampled)
        if not step.sampled:
            self._plain.add((step.wall_ns,))
            self.waits.add_plain(step.wall_ns, step.wait_ns, step.phases_ns, step.start_ns)
            return
        if not step.describing and step.after_ns > 0:
            self._after.add((step.after_ns,))
        if not ops_taken:
            self.untaken += 1
            if not step.describing:
                self._sampled.add((step.wall_ns,))
            return
        self.sampled += 1
        assert sums is not None
        waited = self.waits.add_sampled(step.wall_ns, step.wait_ns, sums.total_ns(), phase_ops, step.start_ns)
        if not step.describing:  # its ops count (each read around its own call); its wall time does not
            self._sampled.add((step.wall_ns,))
        if step.faults >= 0:
            self._faults.add((step.faults,))
        self._add_ops(sums, waited)
        if sums.sample or self.trace[1] is None:  # the latest step that carried raw ops (its agent paces them)
            self.trace = (step.start_ns, sums)

    def _add_ops(self, sums: NodeSums, disturbed: bool = False) -> None:
        """A sampled step's per-node sums: per node, the sum of all its calls' times (one sample) and their count, in
        the column of the shapes it ran at in this step (:func:`step_shapes`); a step of the same layout as the one
        before as arrays (:mod:`fxtui.jobs.op_layout`)."""
        layout = self._layout
        if layout is None or not layout.same(sums):
            self._fold()
            layout = self._layout = self._new_layout(sums)
        layout.repeats += 1
        values = sums.sums()
        self.window.add(layout.columns, values, disturbed)
        self._sampled_ops.add((int(values.sum()),))

    def _new_layout(self, sums: NodeSums) -> OpLayout:
        """The columns of a step of a new layout, made where new (node by node)."""
        columns: list[int] = []
        new = 0
        for node, shapes in zip(sums.node_ids().tolist(), sums.shape_keys(), strict=True):
            key = (node, shapes)
            column = self._columns.get(key)
            if column is None:
                column = self._columns[key] = len(self._columns)
                self._column_keys.append(key)
                new += 1
            columns.append(column)
        self.window.add_columns(new)
        return OpLayout(sums.layout, np.asarray(columns, dtype=np.int64), sums.call_counts().copy())

    def _fold(self) -> None:
        """Count the steps of the latest layout in its columns' shape and call counts (read by :meth:`node_columns`
        and :meth:`calls_per_step`)."""
        layout = self._layout
        if layout is None or not layout.repeats:
            return
        times, layout.repeats = layout.repeats, 0
        for column, n in zip(layout.columns.tolist(), layout.calls.tolist(), strict=True):
            node, shape = self._column_keys[column]
            counts = self._shape_counts.setdefault(node, {})
            counts[shape] = counts.get(shape, 0) + times
            calls, steps = self._calls.get(column, (0, 0))
            self._calls[column] = (calls + n * times, steps + times)

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

    # -- figures --------------------------------------------------------------------------------

    def node_columns(self, node_ids: list[int]) -> tuple[np.ndarray, dict[int, tuple[tuple[str, int, int], ...]]]:
        """For each node (in ``node_ids`` order), the window column of its most frequent shape (-1: never sampled),
        and for nodes seen at several shapes, each shape's (shape, steps, column). Kept until the next sampled step
        (a snapshot asks three times, and a rank's snapshot is rebuilt whether or not it sampled since); read-only."""
        kept = self._node_columns
        if kept is not None and kept[0] == self.sampled and kept[1] == node_ids:
            return kept[2], kept[3]
        self._fold()
        pick = np.full(len(node_ids), -1, dtype=np.int64)
        others: dict[int, tuple[tuple[str, int, int], ...]] = {}
        for i, node_id in enumerate(node_ids):
            counts = self._shape_counts.get(node_id)
            if not counts:
                continue
            if len(counts) == 1:  # most nodes: one shape (a thousand sorts a snapshot otherwise)
                pick[i] = self._columns[(node_id, next(iter(counts)))]
                continue
            ranked = sorted(counts.items(), key=lambda kv: -kv[1])
            pick[i] = self._columns[(node_id, ranked[0][0])]
            if len(ranked) > 1:
                others[node_id] = tuple((shape, n, self._columns[(node_id, shape)]) for shape, n in ranked)
        pick.flags.writeable = False
        self._node_columns = (self.sampled, list(node_ids), pick, others)
        return pick, others

    def column_shapes(self, column: int) -> str:
        """The output shapes (:func:`step_shapes`) of a window column's steps."""
        return self._column_keys[column][1]

    def calls_per_step(self, columns: np.ndarray) -> np.ndarray:
        """The mean number of calls per sampled step of each column (0 where never sampled)."""
        self._fold()
        out = np.zeros(len(columns))
        for i, column in enumerate(columns):
            kept = self._calls.get(int(column))
            if column >= 0 and kept and kept[1]:
                out[i] = kept[0] / kept[1]
        return out

    def stats(self) -> WindowStats:
        return self.window.stats(leave_out_disturbed=not self.keep_disturbed)

    def spreads(self) -> tuple[Spread | None, Spread | None, Spread | None, Spread | None]:
        """The sampled and unsampled steps' spreads, and overhead's and fidelity's (each step's own ratio)."""
        sampled_walls = self._sampled.column()
        plain, sampled = _spread(self._plain.column()), _spread(sampled_walls)
        base_ns = plain.median * 1e9 if plain else None
        overhead = _spread([w / base_ns for w in sampled_walls]) if base_ns else None
        # Each counted step's ops ÷ the unsampled median; the sampled steps that waited for a CPU left out as the
        # node figures leave them out, so the headline (their median) and its range are of the same steps.
        fidelity = _spread([s.ops_ns / base_ns for s in self.waits.counted()]) if base_ns else None
        return sampled, plain, overhead, fidelity

    def summary(self, node_time_s: float | None = None, phase_nodes_s: tuple[float, ...] = ()) -> KindSummary:
        """This kind at a glance (``node_time_s``: Σ of its node medians, for its fidelity; ``phase_nodes_s`` the
        same per phase)."""
        base = statistics.median(self._plain.column()) / 1e9 if self._plain else None
        sampled = statistics.median(self._sampled.column()) / 1e9 if self._sampled else None
        phases = phase_medians(self._plain_times.rows()) if self._plain_times else ()
        waiting = self.waits.waiting(base * 1e9 if base else None, [p * 1e9 for p in phases])
        if waiting is not None and waiting.ops is not None and node_time_s is not None and self.sampled:
            node_time_s = waiting.ops.median * base  # type: ignore[operator]  # the median of per-step ratios
        return KindSummary(
            kind=self.kind,
            steps=self.steps,
            warmup=self.warmup,
            sampled=self.sampled,
            step_median_s=base,
            fidelity=node_time_s / base if base and node_time_s is not None and self.sampled else None,
            overhead=sampled / base if base and sampled else None,
            holds=self._typical(),
            nodes=len(self.nodes),
            phase_median_s=phases,
            phase_nodes_s=phase_nodes_s,
            aside=tuple(sorted(self.aside.items())),
            waiting=waiting,
        )

    def step_summary(self, kinds: tuple[KindSummary, ...] = ()) -> StepSummary:
        """The steps so far: counts, phase medians (over the unsampled steps), the recent timeline."""
        recent = self.timeline.rows()
        plain = self._plain_times.rows() if self._plain_times else recent[:, 3:]
        flat = array("d", (recent[:, 3:] / 1e9).ravel().tolist())
        return StepSummary(
            kind=self.kind,
            steps=self.steps,
            warmup=self.warmup,
            sampled=self.sampled,
            phase_median_s=phase_medians(plain),
            step_median_s=statistics.median(self._plain.column()) / 1e9 if self._plain else None,
            sampled_median_s=statistics.median(self._sampled.column()) / 1e9 if self._sampled else None,
            sampled_after_s=statistics.median(self._after.column()) / 1e9 if self._after else 0.0,
            recent=flat,
            recent_sampled=recent[:, 2].astype(np.uint8).tobytes(),
            history=array("d", [*self._history, *([statistics.median(self._stretch) / 1e9] if self._stretch else [])]),
            history_every=self._history_every,
            faults_median=statistics.median(self._faults.column()) if self._faults else None,
            holds=self._typical(),
            holds_share=self._typical_share(),
            kinds=kinds,
        )

    def pace(self) -> tuple[float | None, tuple[float, ...]]:
        """Its unsampled steps' median and each phase's (seconds): a rank's pace without its ops or its timeline,
        for the ranks a large job's collector does not compare (:mod:`fxtui.jobs.rank_paces`)."""
        base = float(np.median(self._plain.rows()[:, 0])) / 1e9 if self._plain else None
        return base, phase_medians(self._plain_times.rows()) if self._plain_times else ()

    def _typical(self) -> tuple[tuple[str, int], ...]:
        """What most steps hold (the latest step's, before any is counted)."""
        return self._held.most_common(1)[0][0] if self._held else self.holds

    def _typical_share(self) -> float:
        """The share of the steps that hold what most do (1.0: every step alike)."""
        counted = sum(self._held.values())
        return self._held.most_common(1)[0][1] / counted if counted else 1.0


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


# Every phase a step's wall time splits into, for this module's readers.
__all__ = ["MAX_STEP_SHAPES", "SHAPE_JOIN", "STEP_PHASES", "KindTally", "step_shapes"]
