"""How much work each FX node does: FLOPs, bytes moved and parameters, from one calibration pass.

The figures are counted, not timed, so they are measured once, outside the timed
runs, by a small :class:`torch.fx.Interpreter` subclass (the ``shape_prop.py``
pattern). Divided by a node's median time they say how fast the node runs
(GFLOP/s, GB/s); divided by each other they place it on the roofline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch.fx.node import Node
from torch.utils.flop_counter import FlopCounterMode

from fxtui.core.errors import NodeError
from fxtui.core.nodes import module_ancestors
from fxtui.measure.capture.captured import CapturedModel, GraphPart
from fxtui.measure.inputs import Inputs
from fxtui.measure.values import storage_block, tensors_in


@dataclass(frozen=True, slots=True)
class NodeWork:
    """The work one node does in one run of the model.

    ``bytes_read`` counts the node's tensor inputs once each, plus the parameters and
    buffers of a ``call_module`` node; ``bytes_written`` counts its tensor outputs.
    A node whose outputs are all views of its inputs moves nothing (both are 0).
    This is the traffic the operation cannot avoid if every tensor is touched once;
    caches can make the real figure lower and poor blocking higher.
    """

    flops: float
    bytes_read: int
    bytes_written: int
    params: int

    @property
    def bytes_moved(self) -> int:
        """Bytes read plus bytes written."""
        return self.bytes_read + self.bytes_written

    @property
    def intensity(self) -> float | None:
        """Arithmetic intensity in FLOPs per byte; ``None`` when the node moves no data."""
        moved = self.bytes_moved
        return self.flops / moved if moved else None

    def achieved(self, median_s: float) -> tuple[float, float]:
        """``(GFLOP/s, GB/s)`` the node reaches when one run of it takes ``median_s`` seconds."""
        if median_s <= 0:
            return 0.0, 0.0
        return self.flops / median_s / 1e9, self.bytes_moved / median_s / 1e9


@dataclass(frozen=True, slots=True)
class ModuleWork:
    """Work summed over every node at or below one module path (``""`` is the whole model)."""

    path: str
    flops: float
    bytes_read: int
    bytes_written: int
    params: int
    """Parameters summed per node: a module called twice counts its parameters twice."""
    nodes: int

    @property
    def bytes_moved(self) -> int:
        """Bytes read plus bytes written."""
        return self.bytes_read + self.bytes_written


def measure_work(gm: torch.fx.GraphModule, inputs: Sequence[Any]) -> dict[str, NodeWork]:
    """Count FLOPs, bytes and parameters of every node of ``gm`` in one run on ``inputs``.

    Runs the graph once under ``torch.inference_mode()``. FLOPs come from
    :class:`torch.utils.flop_counter.FlopCounterMode` (operators it has no formula
    for, such as element-wise ones, count as zero). Raises :class:`NodeError` naming
    the node if the model fails.
    """
    interp = _WorkInterpreter(gm)
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        interp.counter = counter
        interp.run(*inputs)
    return interp.work


def measure_captured_work(captured: CapturedModel, inputs: Inputs) -> dict[str, NodeWork]:
    """:func:`measure_work` for every graph of ``captured`` in one run of the model, keyed by display name.

    A graph that runs several times in one run adds up its calls, as its timings do.
    """
    found: dict[str, NodeWork] = {}

    def visit(part: GraphPart, args: tuple[Any, ...]) -> Any:
        interp = _WorkInterpreter(part.gm)
        # The counter is entered inside each graph call, not around the whole run: TorchDynamo
        # guards on the active dispatch modes, so a counter around the compiled model would make
        # every graph recompile, and the recompiled graphs would run past the parts uncounted.
        with FlopCounterMode(display=False) as counter:
            interp.counter = counter
            out = interp.run(*args)
        for node, name in zip(part.gm.graph.nodes, part.names, strict=True):
            work = interp.work.get(node.name)
            if work is not None:
                before = found.get(name)
                found[name] = work if before is None else _added(before, work)
        return out

    with captured.running():
        captured.run_each(inputs.fresh(), visit)
    return found


def _added(a: NodeWork, b: NodeWork) -> NodeWork:
    return NodeWork(a.flops + b.flops, a.bytes_read + b.bytes_read, a.bytes_written + b.bytes_written, a.params)


class _WorkInterpreter(torch.fx.Interpreter):
    """Runs each node once, reading the FLOP counter before and after it."""

    def __init__(self, gm: torch.fx.GraphModule) -> None:
        super().__init__(gm)
        self.counter: FlopCounterMode | None = None
        self.work: dict[str, NodeWork] = {}

    def run_node(self, n: Node) -> Any:
        assert self.counter is not None
        before = self.counter.get_total_flops()
        try:
            out = super().run_node(n)
        except Exception as e:
            raise NodeError(n.name, f"node {n.name} raised {type(e).__name__} while counting its work: {e}") from e
        flops = float(self.counter.get_total_flops() - before)
        self.work[n.name] = self._node_work(n, flops, out)
        return out

    def _node_work(self, n: Node, flops: float, out: Any) -> NodeWork:
        if n.op in ("placeholder", "output"):
            return NodeWork(0.0, 0, 0, 0)
        if n.op == "get_attr":
            # Fetching an attribute moves no data; the tensor is a parameter the node hands on.
            numel = sum(t.numel() for t in tensors_in(out))
            return NodeWork(0.0, 0, 0, numel)
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        read = _unique_tensors((args, kwargs))
        params = 0
        if n.op == "call_module":
            mod = self.fetch_attr(str(n.target))
            weights = _unique_tensors((list(mod.parameters()), list(mod.buffers())))
            params = sum(p.numel() for p in mod.parameters())
            read = _unique_tensors((read, weights))
        input_ids = {id(t) for t in read}
        input_storages = {storage_block(t)[0] for t in read}
        outputs = _unique_tensors(out)
        # A view (flatten, getitem, reshape of a contiguous tensor) shares its input's
        # memory and copies nothing; an in-place op returns the input object itself and
        # does read and write it.
        views = [t for t in outputs if id(t) not in input_ids and storage_block(t)[0] in input_storages]
        if outputs and len(views) == len(outputs):
            return NodeWork(flops, 0, 0, params)
        written = [t for t in outputs if not any(v is t for v in views)]
        return NodeWork(flops, sum(_nbytes(t) for t in read), sum(_nbytes(t) for t in written), params)


def rollup(work_by_node: Mapping[str, NodeWork], module_paths: Mapping[str, str]) -> dict[str, ModuleWork]:
    """Sum node work over each module's subtree.

    ``module_paths`` maps node name → the module path the node belongs to (``""``
    for the root). Every ancestor of a path gets an entry, the root always.
    """
    sums: dict[str, list[float]] = {"": [0.0, 0, 0, 0, 0]}
    for name, work in work_by_node.items():
        for path in module_ancestors(module_paths.get(name, "")):
            acc = sums.setdefault(path, [0.0, 0, 0, 0, 0])
            acc[0] += work.flops
            acc[1] += work.bytes_read
            acc[2] += work.bytes_written
            acc[3] += work.params
            acc[4] += 1
    return {path: ModuleWork(path, float(a[0]), int(a[1]), int(a[2]), int(a[3]), int(a[4])) for path, a in sums.items()}


def _unique_tensors(value: Any) -> list[torch.Tensor]:
    """Tensors in a nested structure, each once (a tensor passed twice is read once)."""
    seen: dict[int, torch.Tensor] = {}
    for t in tensors_in(value):
        seen.setdefault(id(t), t)
    return list(seen.values())


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()
