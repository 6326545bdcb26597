"""A captured model: one or more FX graphs whose nodes know their module path, and how to run them.

Every capture mode (:mod:`~fxtui.measure.capture.fx`, :mod:`~fxtui.measure.capture.dynamo`)
produces a :class:`CapturedModel`. Nothing downstream — timing, statistics, analysis, snapshots,
the UI — knows which mode ran: they see graphs, stable node names and module paths.

A captured model runs the whole model (``captured.run(inputs)``); each captured graph inside it
runs through its :class:`GraphPart`, whose ``executor`` can be swapped for the time of a
run (:meth:`CapturedModel.routed`): the graph's own ``forward`` for an uninstrumented run, a
timing interpreter for a profiled one, a counting interpreter for an analysis pass.
Whatever runs between graphs (the Python of a graph break, TorchDynamo's guard checks)
is never charged to a node.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
import torch.fx

from fxtui.core.captures import CaptureMode, capture_mode
from fxtui.core.nodes import GraphBreak
from fxtui.measure.inputs import Inputs

Executor = Callable[..., Any]


class GraphPart:
    """One captured FX graph: its GraphModule, the display names of its nodes, and what runs it now."""

    __slots__ = ("executor", "gm", "index", "names", "offset", "phase")

    def __init__(
        self, gm: torch.fx.GraphModule, names: Sequence[str], offset: int, index: int, phase: str = ""
    ) -> None:
        self.gm = gm
        self.names: tuple[str, ...] = tuple(names)
        """One display name per node, graph order; unique across the captured model."""
        self.offset = offset
        """Index of this graph's first node in the captured model's node list."""
        self.index = index
        self.phase = phase
        """``forward`` (with the loss), ``backward`` (AOTAutograd's gradients) or ``optimizer`` in a training
        step (:data:`fxtui.core.nodes.PHASES`); ``""`` for inference."""
        self.executor: Executor = gm.forward

    def __call__(self, *args: Any) -> Any:
        return self.executor(*args)

    def __len__(self) -> int:
        return len(self.names)


@dataclass(frozen=True, slots=True)
class CapturedNode:
    """An FX node of a captured model under its display name."""

    name: str
    node: torch.fx.Node
    part: GraphPart


class RunNotes(Protocol):
    """What a mode keeps about its runs besides node times, and how it changes their figures (``generate``)."""

    def fields(self) -> dict[str, Any]:
        """What every snapshot carries besides the statistics (``{"generation": …}``)."""
        ...

    def shares(self, phases: Sequence[str], medians: Sequence[float]) -> list[float]:
        """Each node's share (percent), given each node's phase and median (graph order)."""
        ...

    def run_ns(self, wall_ns: int) -> int:
        """What the uninstrumented run just made counts as in the run figures, given its wall time."""
        ...

    def whole_run(self) -> tuple[float, float, float] | None:
        """p25, median and p75 of the whole uninstrumented runs (seconds): what a what-if compares."""
        ...

    def reset(self) -> None:
        """Forget the runs so far."""
        ...


@dataclass
class CapturedModel:
    """The graphs a capture produced, and the call that runs the whole model through them."""

    capture: str
    """Which capture mode produced the graphs: ``fx``, ``dynamo`` or ``train``."""
    root: torch.nn.Module
    """The module that was captured."""
    call: Callable[[Inputs], Any]
    """Runs the whole model once; each captured graph inside it runs through its part."""
    parts: list[GraphPart] = field(default_factory=list)
    module_paths: dict[str, str] = field(default_factory=dict)
    """Display name → path of the module the node belongs to (``""`` is the root)."""
    module_classes: dict[str, str] = field(default_factory=dict)
    """Module path → class name, for every path a node uses, their ancestors and the root."""
    reason: str = ""
    """Why this capture ran, e.g. "symbolic_trace failed: …" when ``auto`` switched to TorchDynamo."""
    leaf_modules: tuple[str, ...] = ()
    leaf_reasons: dict[str, str] = field(default_factory=dict)
    breaks: tuple[GraphBreak, ...] = ()
    """Where TorchDynamo split the model into several graphs, and why."""
    seconds: float = 0.0
    """Wall time the capture took."""
    warm_runs: int = 0
    """Uninstrumented runs the capture itself made (TorchDynamo runs the model to capture it)."""
    late_graphs: int = 0
    """Graphs compiled after the capture was sealed (recompiles): they run untimed."""
    reference: Callable[[Inputs], Any] | None = None
    """The same work uncaptured (the plain model, or an eager training step), timed once for
    reference so the user sees what capture itself costs; None where capture costs nothing (fx)."""
    training: bool = False
    """True when a run is a training step: it runs with autograd on, not in inference mode."""
    loss: str = ""
    """How a training step's loss is made from the model's output (``cross-entropy …``)."""
    optimizer: str = ""
    """The optimizer a training step runs (``SGD(lr=0.001)``)."""
    gradients: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Forward node → the backward nodes that differentiate it (training steps)."""
    timer: Callable[..., Any] | None = None
    """``timer(clock=…, clock_overhead_ns=…)``: what times a run, for a mode that times without graphs
    (``eager``); None: a :class:`~fxtui.measure.timing.ModelTimer` over the graphs."""
    describe: Callable[..., Any] | None = None
    """``describe(timer, model=…, inputs=…, dtype=…, threads=…)``: the graph description, for a mode without
    graphs; None: :func:`~fxtui.measure.graphinfo.build_graph_info` from the graphs."""
    notes: RunNotes | None = None
    """What a mode keeps about its runs besides node times (``generate``: time to first token, per token, the
    cache); None for most modes."""
    renew: Callable[[torch.nn.Module], CapturedModel] | None = None
    """``renew(module)``: the same capture of ``module`` (this model, or a what-if's changed copy) on the same
    inputs, with notes of its own, for a mode whose runs keep notes; None: a copy of the captured model does."""

    @property
    def mode(self) -> CaptureMode:
        """The facts of the mode that produced the captured model (:mod:`fxtui.core.captures`)."""
        return capture_mode(self.capture)

    def running(self) -> contextlib.AbstractContextManager[Any]:
        """The autograd mode a run of this captured model needs: inference mode, or gradients for a training step."""
        return torch.enable_grad() if self.training else torch.inference_mode()

    @property
    def names(self) -> list[str]:
        """Every node's display name, capture order (graph by graph)."""
        return [name for part in self.parts for name in part.names]

    @property
    def nodes(self) -> list[CapturedNode]:
        """Every FX node of every graph under its display name, capture order."""
        return [
            CapturedNode(name, node, part)
            for part in self.parts
            for name, node in zip(part.names, part.gm.graph.nodes, strict=True)
        ]

    @property
    def node_count(self) -> int:
        return sum(len(p) for p in self.parts)

    def run(self, inputs: Inputs) -> Any:
        """Run the whole model once on ``inputs`` (pass fresh copies: the model may mutate them)."""
        return self.call(inputs)

    @contextlib.contextmanager
    def routed(self, make: Callable[[GraphPart], Executor]) -> Iterator[None]:
        """Run every graph through ``make(part)`` inside the block, then restore the graphs' own forward."""
        before = [p.executor for p in self.parts]
        for part in self.parts:
            part.executor = make(part)
        try:
            yield
        finally:
            for part, executor in zip(self.parts, before, strict=True):
                part.executor = executor

    def independent(self) -> CapturedModel:
        """A second handle on the same model and graphs with nothing shared: no reference timing, notes of its own."""
        if self.renew is not None:
            return self.renew(self.root)
        return dataclasses.replace(self, reference=None)

    def run_each(self, inputs: Inputs, visit: Callable[[GraphPart, tuple[Any, ...]], Any]) -> Any:
        """Run the model once with every graph call handed to ``visit(part, args)``, which must return its output."""
        with self.routed(lambda part: lambda *args: visit(part, args)):
            return self.run(inputs)


def one_graph_model(
    gm: torch.fx.GraphModule,
    *,
    module_paths: Mapping[str, str] | None = None,
    module_classes: Mapping[str, str] | None = None,
    root: torch.nn.Module | None = None,
    **extra: Any,
) -> CapturedModel:
    """A one-graph captured model whose node names are the FX node names (symbolic_trace, tests)."""
    part = GraphPart(gm, [n.name for n in gm.graph.nodes], 0, 0)

    def call(inputs: Inputs) -> Any:
        return part(*inputs.args)

    return CapturedModel(
        capture=extra.pop("capture", "fx"),
        root=root if root is not None else gm,
        call=call,
        parts=[part],
        module_paths=dict(module_paths or {}),
        module_classes=dict(module_classes or {"": type(gm).__name__}),
        **extra,
    )
