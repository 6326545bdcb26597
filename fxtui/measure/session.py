"""A profiling session: warm-up, thread settings, the rerun loop, and snapshots of it.

Each :meth:`Session.run_pair` runs the captured model twice on fresh copies of the
inputs: once with every graph under a :class:`~fxtui.measure.timing.TimingInterpreter`
and once uninstrumented (each graph's own forward, the same capture otherwise). The
order alternates from step to step, so neither kind of run systematically inherits warm
caches from the other, and the two medians are measured under the same conditions. Their
ratio is the profiler's overhead; the sum of node medians over the uninstrumented median
is its fidelity.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import statistics
import time
from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.fx

from fxtui.core.column_table import ColumnTable, equal_tuples, float_column
from fxtui.core.errors import FxtuiError, NodeError
from fxtui.core.findings import AtenOp, Disturbance, Hint, WhatIf, WhatIfOption
from fxtui.core.nodes import ModuleStats, NodeStats
from fxtui.core.nonfinite import nonfinite_warnings
from fxtui.core.rollup import module_table
from fxtui.core.sample_window import SampleWindow, WindowStats
from fxtui.core.snapshot import GraphInfo, RunError, RunSpreads, Snapshot, State
from fxtui.measure import allocator
from fxtui.measure.analysis.cpu_setup import usable_cores
from fxtui.measure.capture.captured import CapturedModel, one_graph_model
from fxtui.measure.graphinfo import build_graph_info
from fxtui.measure.inputs import Inputs
from fxtui.measure.interference import LoadProbe, RunLoad
from fxtui.measure.timing import Clock, ModelTimer
from fxtui.measure.values import describe_value

#: Runs of the uncaptured model timed for reference, one per step, in the first steps.
REFERENCE_RUNS = 5


class Session:
    """Reruns one traced model and accumulates per-node timing statistics.

    Construction runs the graph once (outside the statistics) to check that the
    inputs fit and to record every node's output shape; a model that raises there
    raises :class:`FxtuiError` naming the node.
    """

    def __init__(
        self,
        captured: CapturedModel | torch.fx.GraphModule,
        inputs: Inputs | Sequence[Any],
        *,
        model: str = "model",
        input_desc: Sequence[str] = (),
        dtype: str = "float32",
        module_paths: dict[str, str] | None = None,
        module_classes: dict[str, str] | None = None,
        leaf_modules: Sequence[str] = (),
        window: int = 256,
        clock: Clock = time.perf_counter_ns,
        clock_overhead_ns: int | None = None,
        keep_disturbed: bool = True,
    ) -> None:
        if isinstance(captured, torch.fx.GraphModule):  # a GraphModule is a one-graph captured model
            captured = one_graph_model(
                captured, module_paths=module_paths, module_classes=module_classes, leaf_modules=tuple(leaf_modules)
            )
        self.captured = captured
        self.inputs = inputs if isinstance(inputs, Inputs) else Inputs(tuple(inputs))
        make_timer = captured.timer or functools.partial(ModelTimer, captured)
        self.timer = make_timer(clock=clock, clock_overhead_ns=clock_overhead_ns)
        self.clock = clock
        with captured.running():
            try:
                returned = self.timer.run(self.inputs.fresh())
            except NodeError as e:
                raise FxtuiError(f"the model does not run on these inputs: {e}") from e
        meta = self.timer.meta or []
        placeholders = [i for i, p in enumerate(captured.nodes) if p.node.op == "placeholder" and p.part.index == 0]
        described: dict[str, Any] = dict(
            model=model,
            inputs=input_desc or tuple(meta[i].shape for i in placeholders if i < len(meta)),
            dtype=dtype,
            threads=torch.get_num_threads(),
        )
        if captured.describe is not None:
            self.graph: GraphInfo = captured.describe(self.timer, **described)
        else:
            self.graph = build_graph_info(captured, meta=meta, calls=list(self.timer.calls), **described)
        self.graph = dataclasses.replace(
            self.graph,
            value_warnings=nonfinite_warnings(self.graph.nodes, describe_value(returned, check_finite=True).nonfinite),
        )
        self.samples = SampleWindow(len(self.timer.names), window)
        self.failures = 0
        self.last_error: RunError | None = None
        self.setup_seconds = 0.0
        """Time spent capturing and checking the model (set by the pipeline)."""
        self.work: dict[str, Any] = {}
        """Per-node work (FLOPs, bytes) once measured: ``fxtui.measure.explain.analyse``."""
        self.aten: dict[str, tuple[AtenOp, ...]] = {}
        """Aten operators inside the nodes explained so far."""
        self.hints: tuple[Hint, ...] | None = None
        self.what_ifs: dict[str, WhatIf] = {}
        """Measured what-ifs by name, the latest of each (:mod:`fxtui.measure.whatif`)."""
        self.what_if_count = 0
        """What-ifs measured so far: each result's ``serial``."""
        self.what_if_progress = ""
        """What the what-if being measured is doing (``what-if bf16: pair 3 of 20``); ``""`` when none is."""
        self.what_if_options: tuple[WhatIfOption, ...] = ()
        """The what-ifs offered for this model and whether each applies, once worked out."""
        self.reference: collections.deque[int] = collections.deque(maxlen=REFERENCE_RUNS)
        """Wall times of the model run as it is, uncaptured (TorchDynamo captures only): what capture costs."""
        self._eager_first = False
        self._pending: list[Any] = [None, 0, 0]
        """The step in progress: profiled node times, profiled run time, uninstrumented run time."""
        self.nonfinite_steps = 0
        """Profiled training steps whose loss was NaN or infinite."""
        self.faults: collections.deque[int] = collections.deque(maxlen=64)
        """Minor page faults of the latest profiled runs (the process's, read around each run)."""
        self.probe = LoadProbe()
        self.keep_disturbed = keep_disturbed
        """Record steps that other work disturbed (the default here), rather than leave them out of the
        statistics; the command line, the app and :func:`fxtui.profile` leave them out unless asked."""
        self._loads: list[RunLoad | None] = [None, None]
        """What other work took from the step in progress: its profiled run, its uninstrumented run."""
        self.steps_read = 0
        self.disturbed_steps = 0
        self.lost: collections.deque[float] = collections.deque(maxlen=256)
        """Share of the time other work took from each disturbed step, latest steps."""
        self.display_lost: collections.deque[float] = collections.deque(maxlen=256)
        """The part of each of those the display (the live app, drawing) took."""

    @property
    def gm(self) -> torch.fx.GraphModule:
        """The graph of a one-graph captured model (fx capture); analyses that need one graph use it."""
        return self.captured.parts[0].gm

    # -- running -----------------------------------------------------------------

    def run_pair(self, record: bool = True) -> bool:
        """One profiled run and one uninstrumented run, in alternating order.

        A pair in which either run raises counts as one failure and is kept as
        :attr:`last_error`; its samples are dropped, and the session stays usable.
        Returns True when the pair's samples were recorded.
        """
        self._eager_first = not self._eager_first
        with self.captured.running():
            order = (self._eager, self._profiled) if self._eager_first else (self._profiled, self._eager)
            errors = [e for e in (run() for run in order) if e is not None]
        if errors:
            self.failures += 1
            error = next((e for e in errors if e.node), errors[0])  # the profiled run names the node
            self.last_error = RunError(message=str(error), node=error.node or None, runs_failed=self.failures)
            return False
        if not record:
            return True
        self.samples.add_run(self._pending[0], self._pending[1], disturbed=self._disturbed())
        self.samples.add_eager(self._pending[2])
        if len(self.reference) < REFERENCE_RUNS:
            self._time_reference()
        return True

    def _disturbed(self) -> bool:
        """Read the step's load: True when other work took more than its share from either run."""
        loads = [load for load in self._loads if load is not None]
        self.steps_read += 1
        if not any(load.disturbed for load in loads):
            return False
        self.disturbed_steps += 1
        worst = max(loads, key=lambda load: load.lost_share)
        self.lost.append(worst.lost_share)
        self.display_lost.append(worst.display_share)
        return True

    def disturbance(self, summary: WindowStats | None = None) -> Disturbance:
        """How much other work disturbed the steps so far (``summary``: the window's, when one was just made)."""
        lost = sorted(self.lost)
        return Disturbance(
            steps=self.steps_read,
            disturbed=self.disturbed_steps,
            median_lost=statistics.median(lost) if lost else 0.0,
            worst_lost=lost[-1] if lost else 0.0,
            median_display=statistics.median(self.display_lost) if self.display_lost else 0.0,
            used=summary.used if summary else 0,
            in_window=summary.disturbed if summary else 0,
            left_out=summary.left_out if summary else 0,
            keep=self.keep_disturbed,
            known=self.probe.known,
            threads=self.graph.threads,
            cores=usable_cores(),
        )

    @property
    def quiet_steps(self) -> int:
        """Steps recorded since the statistics began that no other work disturbed."""
        return self.steps_read - self.disturbed_steps

    def _time_reference(self) -> None:
        """One run of the model as it is, uncaptured: what capture itself costs, seen beside the baseline."""
        reference = self.captured.reference
        if reference is None:
            return
        inputs = self.inputs.fresh()
        # A reference that fails only loses its line.
        with contextlib.suppress(Exception), self.captured.running():
            t0 = self.clock()
            reference(inputs)
            self.reference.append(self.clock() - t0)

    @property
    def reference_median_s(self) -> float | None:
        """Median wall time of the uncaptured model (TorchDynamo captures only)."""
        return statistics.median(self.reference) / 1e9 if self.reference else None

    def warm_up(self, runs: int) -> None:
        """Warm caches, allocator and thread pools until both kinds of run have run ``runs`` times.

        Runs made before count: the check run at construction (profiled) and the capture's
        own runs (uninstrumented, TorchDynamo). Steps here are not recorded. Measured after
        construction (resnet18, mobilenet_v3_small, BERT-base), the first step already ran
        within 3% of the later ones, so the earlier runs warm as well as a step does.
        """
        earlier = min(1, self.captured.warm_runs)
        for _ in range(max(0, runs - earlier)):
            self.run_pair(record=False)
        if self.captured.notes is not None:  # what the warm-up runs noted is no figure either
            self.captured.notes.reset()

    def representative_run(self, runs: int = 5) -> list[tuple[float, float]]:
        """Start and duration (seconds) of every node in one typical profiled run.

        Runs the graph ``runs`` more times (not recorded) and keeps the run whose
        wall time is the median of them.
        """
        candidates = []
        timer = self.timer
        with self.captured.running():
            for _ in range(max(runs, 1)):
                timer.run(self.inputs.fresh())
                origin = timer.last_run_start_ns
                timeline = [
                    ((s - origin) / 1e9, max(d, 0) / 1e9)
                    for s, d in zip(timer.last_start_ns, timer.last_ns, strict=True)
                ]
                candidates.append((timer.last_run_ns, timeline))
        candidates.sort(key=lambda c: c[0])
        return candidates[len(candidates) // 2][1]

    @property
    def faults_per_run(self) -> float | None:
        """Median minor page faults per profiled run, over the latest runs."""
        return float(statistics.median(self.faults)) if self.faults else None

    def reset(self) -> None:
        """Forget every sample and failure."""
        self.faults.clear()
        self.samples.reset()
        self.lost.clear()
        self.display_lost.clear()
        self.steps_read = self.disturbed_steps = 0
        self.nonfinite_steps = 0
        self.failures = 0
        self.last_error = None
        if self.captured.notes is not None:
            self.captured.notes.reset()

    def _profiled(self) -> NodeError | None:
        inputs = self.inputs.fresh()
        before = self.probe.read()
        try:
            out = self.timer.run(inputs)
        except NodeError as e:
            return e
        load = self._loads[0] = self.probe.since(before)
        self.faults.append(load.minor_faults)
        if self.captured.training and isinstance(out, torch.Tensor) and not bool(torch.isfinite(out).all()):
            self.nonfinite_steps += 1  # the session goes on; the report says how often
        self._pending[0] = list(self.timer.last_ns)
        self._pending[1] = self.timer.last_run_ns
        return None

    def _eager(self) -> NodeError | None:
        inputs = self.inputs.fresh()
        clock = self.clock
        run = self.captured.run
        before = self.probe.read()
        try:
            t0 = clock()
            run(inputs)
            t1 = clock()
        except Exception as e:  # the profiled run names the node; here we only keep going
            first = str(e).splitlines()[0] if str(e).strip() else ""
            return NodeError("", f"the model raised {type(e).__name__}: {first}")
        self._loads[1] = self.probe.since(before)
        notes = self.captured.notes  # a mode may count a run otherwise (generate: the prompt and one token)
        self._pending[2] = notes.run_ns(t1 - t0) if notes is not None else t1 - t0
        return None

    # -- results -----------------------------------------------------------------

    def _findings(self, summary: WindowStats | None = None) -> dict[str, Any]:
        """What every snapshot carries besides the statistics: analysis results and memory facts."""
        return {
            "aten": dict(self.aten),
            "hints": self.hints,
            "what_ifs": tuple(self.what_ifs.values()),
            "what_if_progress": self.what_if_progress,
            "what_if_options": self.what_if_options,
            "faults_per_run": self.faults_per_run,
            "malloc": allocator.policy(),
            "reference_median_s": self.reference_median_s,
            "late_graphs": self.captured.late_graphs,
            "nonfinite_steps": self.nonfinite_steps,
            "disturbance": self.disturbance(summary),
            **(self.captured.notes.fields() if self.captured.notes is not None else {}),
        }

    def _module_stats(self, medians: array[float], run_s: float) -> ColumnTable[ModuleStats]:
        plan = self.graph.module_plan
        return module_table(plan, *plan.totals(np.frombuffer(medians, dtype=np.float64)), run_s=run_s)

    def snapshot(self, state: State = State.RUNNING, seq: int = 0, message: str = "") -> Snapshot:
        """Freeze the current statistics."""
        stats = self.samples.stats(leave_out_disturbed=not self.keep_disturbed)
        if stats.steps == 0:
            return Snapshot(
                self.graph,
                state,
                seq=seq,
                error=self.last_error,
                message=message,
                **self._findings(None),
            )
        median = float_column(stats.median)
        run = stats.run_median or sum(median) or 1e-12
        notes = self.captured.notes
        shares = (
            notes.shares([n.phase for n in self.graph.nodes], median)
            if notes is not None
            else [100.0 * m / run for m in median]
        )
        # As columns (fxtui.core.column_table): a record per node is made only when one is read.
        nodes = ColumnTable.from_columns(
            NodeStats,
            self.timer.names,
            {
                "count": [stats.steps] * len(median),
                "median_s": median,
                "mean_s": float_column(stats.mean),
                "p90_s": float_column(stats.p90),
                "min_s": float_column(stats.minimum),
                "max_s": float_column(stats.maximum),
                "iqr_s": float_column(stats.q75 - stats.q25),
                "pct": shares,
                "q25_s": float_column(stats.q25),
                "q75_s": float_column(stats.q75),
            },
            stored={"recent": equal_tuples(float_column(stats.recent), len(median), stats.recent.shape[1])},
        )
        return Snapshot(
            graph=self.graph,
            state=state,
            seq=seq,
            runs=stats.steps,
            run_median_s=stats.run_median,
            eager_median_s=stats.eager_median,
            spreads=RunSpreads(stats.run, stats.eager, stats.overhead, stats.fidelity),
            nodes=nodes,
            modules=self._module_stats(median, run),
            error=self.last_error,
            message=message,
            **self._findings(stats),
        )
