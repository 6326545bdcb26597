"""Which aten operators each FX node runs, and how its time splits between them.

A ``Conv2d`` node is one line in the timing table, but inside it PyTorch dispatches
``aten::conv2d`` → ``aten::convolution`` → … → the kernel that does the work
(``aten::mkldnn_convolution`` with oneDNN, ``aten::_slow_conv2d_forward`` without).
One profiled pass with a ``record_function`` range around each node lets every
aten event be attributed to the node whose range encloses it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Collection, Iterator, Sequence
from typing import Any

import torch
import torch.fx
from torch.fx.node import Node
from torch.profiler import ProfilerActivity, profile, record_function

from fxtui.core.errors import NodeError
from fxtui.core.findings import AtenOp
from fxtui.measure.capture.captured import CapturedModel, GraphPart, one_graph_model
from fxtui.measure.inputs import Inputs

#: Prefix of the profiler ranges fxtui opens around nodes, so a node called ``conv2d``
#: is never mistaken for an operator of the same name.
RANGE_PREFIX = "fxtui::"


def aten_breakdown(
    gm: torch.fx.GraphModule,
    inputs: Sequence[Any],
    node_names: Collection[str] | None = None,
    runs: int = 3,
    *,
    quiet: bool = True,
) -> dict[str, tuple[AtenOp, ...]]:
    """Profile ``runs`` runs of ``gm`` and list the aten operators of each node.

    Covers every node with at least one aten operator, or only ``node_names``. Each
    tuple is sorted by depth, then by total time, largest first; ops of the same name
    at the same depth are merged. One warm-up run precedes the profiled ones so
    one-off initialisation is not charged to the first node that triggers it.

    The profiler's C++ backend logs status lines straight to file descriptor 2;
    ``quiet`` sends them to ``/dev/null`` while it runs. That silences the whole
    process's stderr for the moment, so pass ``quiet=False`` while a terminal UI
    is drawing on stderr (better: run the breakdown before the UI starts).
    """
    return captured_aten_breakdown(one_graph_model(gm), Inputs(tuple(inputs)), node_names, runs, quiet=quiet)


def captured_aten_breakdown(
    captured: CapturedModel,
    inputs: Inputs,
    node_names: Collection[str] | None = None,
    runs: int = 3,
    *,
    quiet: bool = True,
) -> dict[str, tuple[AtenOp, ...]]:
    """:func:`aten_breakdown` over every graph of ``captured``, keyed by display name."""
    wanted = None if node_names is None else set(node_names)
    interps = {part.index: _RangeInterpreter(part, wanted) for part in captured.parts}

    def visit(part: GraphPart, args: tuple[Any, ...]) -> Any:
        return interps[part.index].run(*args)

    with captured.running():
        captured.run_each(inputs.fresh(), visit)
        with _silenced_fd(2, quiet), profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(max(runs, 1)):
                captured.run_each(inputs.fresh(), visit)
    return _attribute(prof.events(), max(runs, 1))


@contextlib.contextmanager
def _silenced_fd(fd: int, enabled: bool) -> Iterator[None]:
    """Point ``fd`` at ``/dev/null`` inside the block (C++ code writes to the descriptor, not sys.stderr)."""
    if not enabled:
        yield
        return
    try:
        sys.stderr.flush()
        saved = os.dup(fd)
    except (OSError, ValueError):  # no real descriptor (e.g. captured by a test runner)
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), fd)
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


class _RangeInterpreter(torch.fx.Interpreter):
    """Runs each node inside a profiler range named after it."""

    def __init__(self, part: GraphPart, wanted: set[str] | None) -> None:
        super().__init__(part.gm)
        self.wanted = wanted
        self.labels = dict(zip(part.gm.graph.nodes, part.names, strict=True))

    def run_node(self, n: Node) -> Any:
        name = self.labels[n]
        try:
            if self.wanted is not None and name not in self.wanted:
                return super().run_node(n)
            with record_function(RANGE_PREFIX + name):
                return super().run_node(n)
        except Exception as e:
            raise NodeError(name, f"node {name} raised {type(e).__name__} while profiling: {e}") from e


def _attribute(events: Any, runs: int) -> dict[str, tuple[AtenOp, ...]]:
    node_us: dict[str, float] = {}
    # (node, depth, op name) -> [self µs, total µs, calls]
    acc: dict[tuple[str, int, str], list[float]] = {}
    for ev in events:
        name = ev.name
        if name.startswith(RANGE_PREFIX):
            node = name[len(RANGE_PREFIX) :]
            node_us[node] = node_us.get(node, 0.0) + ev.cpu_time_total
            continue
        found = _enclosing_node(ev)
        if found is None:
            continue
        node, depth = found
        slot = acc.setdefault((node, depth, name), [0.0, 0.0, 0.0])
        slot[0] += ev.self_cpu_time_total
        slot[1] += ev.cpu_time_total
        slot[2] += 1
    out: dict[str, list[AtenOp]] = {}
    for (node, depth, name), (self_us, total_us, calls) in acc.items():
        node_total = node_us.get(node, 0.0)
        out.setdefault(node, []).append(
            AtenOp(
                name=name,
                depth=depth,
                self_s=self_us / runs / 1e6,
                total_s=total_us / runs / 1e6,
                calls=calls / runs,
                share=total_us / node_total if node_total > 0 else 0.0,
            )
        )
    return {node: tuple(sorted(ops, key=lambda o: (o.depth, -o.total_s))) for node, ops in out.items()}


def _enclosing_node(ev: Any) -> tuple[str, int] | None:
    """The node whose range encloses ``ev`` and how many operators lie between them."""
    depth = 0
    parent = ev.cpu_parent
    while parent is not None:
        if parent.name.startswith(RANGE_PREFIX):
            return parent.name[len(RANGE_PREFIX) :], depth
        depth += 1
        parent = parent.cpu_parent
    return None


def main_kernel(ops: Sequence[AtenOp]) -> AtenOp | None:
    """The operator with the largest self time: where the node's work actually happens.

    For a ``Conv2d`` this is the backend kernel (``aten::mkldnn_convolution``), not the
    ``aten::conv2d`` entry point that merely dispatches to it.
    """
    return max(ops, key=lambda o: o.self_s, default=None)
