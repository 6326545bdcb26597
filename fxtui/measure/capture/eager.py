"""``--capture eager``: a model run as it is, every ATen op of each run timed and charged to its module.

The same timer ``fxtui run`` uses inside a user's program (:mod:`fxtui.ops.recorder`),
on a model fxtui builds and reruns: nothing is traced, so a model no capture can follow runs
whole (data-dependent code, shapes that change inside a run, a ``generate()`` loop), and the
uninstrumented run is the model itself. The nodes are the ops of the first (checking) run;
an op a later run adds is timed in no node and counted (``late_graphs``: what the status
line calls recompiles for TorchDynamo, new code paths here). The graph passes (FLOPs, memory,
aten, source lines from the trace) have no graph to walk: each node already is an ATen op,
its inputs and the user's source line are noted on the first run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from fxtui.core.op_graph import eager_graph
from fxtui.core.op_nodes import EagerNode, RootModule
from fxtui.core.snapshot import GraphInfo
from fxtui.measure.capture.captured import CapturedModel
from fxtui.measure.inputs import Inputs
from fxtui.measure.values import ValueMeta
from fxtui.ops.namer import OpNamer
from fxtui.ops.recorder import OpRecorder

Clock = Callable[[], int]


class EagerTimer:
    """Times one run of the model per ATen op (the :class:`~fxtui.measure.timing.ModelTimer` interface)."""

    capture = "eager"
    """The capture mode its graph description names."""

    def __init__(
        self, captured: CapturedModel, clock: Clock = time.perf_counter_ns, clock_overhead_ns: int | None = None
    ):
        self.captured = captured
        self.clock = clock
        self.clock_overhead_ns = clock_overhead_ns if clock_overhead_ns is not None else clock_overhead()
        self.recorder = OpRecorder()
        self.namer = OpNamer()
        self.namer.add_root(captured.root)
        self.names: list[str] = []
        self.nodes: list[EagerNode] = []
        self.roots: list[RootModule] = []
        self.last_ns: list[int] = []
        self.last_start_ns: list[int] = []
        self.last_run_ns = 0
        self.last_run_start_ns = 0
        self.calls: list[int] = [1]
        self.meta: list[ValueMeta] | None = None

    def run(self, inputs: Inputs) -> Any:
        """Run the model once on ``inputs``, timing every op. Returns the model's output."""
        first = self.meta is None
        self.recorder.start(stacks=first)
        start = self.clock()
        try:
            out = inputs.call(self.captured.root)
        finally:
            self.last_run_ns = self.clock() - start
            self.recorder.stop()
        self.last_run_start_ns = start
        ops = self.namer.resolve(self.recorder.take())
        if first:
            self._name_nodes()
        known = len(self.names)
        ns, starts = [0] * known, [start] * known
        overhead = self.clock_overhead_ns
        for node, duration, _shape, began in ops:
            if node < known:
                ns[node] += max(duration - overhead, 0)
                starts[node] = began
            else:
                self.captured.late_graphs += 1  # a code path the first run did not take: timed in no node
        self.last_ns, self.last_start_ns = ns, starts
        return out

    def _name_nodes(self) -> None:
        """The nodes of the first run, in the order they ran, described once (inputs, source line)."""
        found, roots = self.namer.take_new()
        latest = {n.id: n for n in found}  # a node's described version comes after its first sighting
        self.nodes = [latest[i] for i in sorted(latest)]
        self.roots = roots
        graph = eager_graph(self.nodes, roots, model="model", capture=self.capture)
        self.names = [n.name for n in graph.nodes]
        self.meta = [ValueMeta(n.shape, "") for n in self.nodes]


def clock_overhead(pairs: int = 2000) -> int:
    """Two clock readings' own cost, which every op's time includes once."""
    clock = time.perf_counter_ns
    samples = []
    for _ in range(pairs):
        t0 = clock()
        samples.append(clock() - t0)
    samples.sort()
    return samples[len(samples) // 2]


def _describe(timer: EagerTimer, *, model: str, inputs: tuple[str, ...], dtype: str, threads: int) -> GraphInfo:
    return eager_graph(timer.nodes, timer.roots, model=model, inputs=inputs, dtype=dtype, threads=threads)


def capture_eager(module: torch.nn.Module, inputs: Inputs, *, name: str = "model", reason: str = "") -> CapturedModel:
    """The model captured eagerly: its runs are the model's own calls, each op timed by an :class:`EagerTimer`."""
    started = time.perf_counter()
    captured = CapturedModel(
        capture="eager",
        root=module,
        call=lambda given: given.call(module),
        reason=reason,
        timer=lambda **kwargs: EagerTimer(captured, **kwargs),
        describe=_describe,
        module_classes={"": type(module).__name__},
    )
    captured.seconds = time.perf_counter() - started
    return captured
