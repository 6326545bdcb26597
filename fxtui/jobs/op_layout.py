"""A sampled step's ops taken as arrays when the step ran the same ops as the one before: the intake of hundreds of
ranks.

A rank's sampled step holds ~1,000 ops (node id, ns, output shape, start). Summed per node in Python, op by op, a
step cost the collector ~2.8 ms; a collector holding 256 ranks' ops at 2 steps a second, one in 5 sampled, spent
a third of a core on that loop alone. A training loop runs the same ops at the same shapes step after step, so the
step's *layout* — which node and shape each op had, in order — is kept with what it maps to: each op's window
column, each column's calls. A step of the same layout is then summed by ``np.bincount`` over its durations, and
its columns' shape and call counts are counted once per layout (:attr:`OpLayout.repeats`), folded into the
figures when they are read. A step of another layout (a last smaller batch, a branch taken) goes the long way.
The phases of a step's ops (:class:`PhaseIndex`) are summed the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from fxtui.core.op_nodes import EagerNode
from fxtui.core.program_run import STEP_PHASES

Op = tuple[int, int, str, int]
"""(node id, ns, output shape, clock at its start), as :class:`~fxtui.wire.agent_messages.Step` holds them."""
OpColumns = tuple[tuple[int, ...], tuple[int, ...], tuple[str, ...]]
"""A step's ops as three columns: node ids, durations (ns), output shapes (:func:`split`)."""


class OpLayout:
    """The nodes and shapes of a step's ops in order, and the window columns they fill."""

    def __init__(self, nodes: tuple[int, ...], shapes: tuple[str, ...], position: np.ndarray,
                 columns: np.ndarray, calls: np.ndarray) -> None:  # fmt: skip
        self.nodes = nodes
        self.shapes = shapes
        self.position = position
        """For each op, its place in :attr:`columns`."""
        self.columns = columns
        """The window columns the step fills, in the order their nodes first ran."""
        self.calls = calls
        """Each column's calls in one step."""
        self.repeats = 0
        """Steps of this layout not yet counted in the figures' shape and call counts."""

    def same(self, nodes: tuple[int, ...], shapes: tuple[str, ...]) -> bool:
        """Whether a step whose ops ran ``nodes`` at ``shapes`` has this layout."""
        return nodes == self.nodes and shapes == self.shapes

    def sums(self, durations: Sequence[int]) -> np.ndarray:
        """Each column's Σ ns in a step of this layout (its ops' ``durations`` in order)."""
        ns = np.fromiter(durations, dtype=np.float64, count=len(durations))
        return np.rint(np.bincount(self.position, weights=ns, minlength=len(self.columns))).astype(np.int64)


def split(ops: Sequence[Op]) -> OpColumns:
    """The ops' node ids, durations and shapes, each a tuple (transposed in C, not op by op: a generator over a
    step's ops cost ~0.4 ms a pass)."""
    if not ops:
        return (), (), ()
    nodes, durations, shapes, _began = zip(*ops, strict=False)  # every op is 4 fields; strict checks cost a third
    return nodes, durations, shapes


def layout_of(
    nodes: tuple[int, ...], shapes: tuple[str, ...], column_of: Mapping[int, int], per_node_columns: Sequence[int]
) -> OpLayout:
    """The layout of a step whose ops ran ``nodes`` at ``shapes``, once its columns are known: ``column_of`` maps
    a node to its place in ``per_node_columns`` (the step's columns in the order its nodes first ran)."""
    position = np.fromiter((column_of[n] for n in nodes), dtype=np.int64, count=len(nodes))
    calls = np.bincount(position, minlength=len(per_node_columns))
    return OpLayout(nodes, shapes, position, np.asarray(per_node_columns, dtype=np.int64), calls)


class PhaseIndex:
    """A sampled step's Σ op ns in each phase of :data:`STEP_PHASES`, with the phase of each op position kept while
    the steps run the same nodes (the nodes' phases are facts: a node, once described, keeps its phase)."""

    def __init__(self) -> None:
        self._nodes: tuple[int, ...] = ()
        self._known = -1
        self._phase: np.ndarray = np.zeros(0, dtype=np.int64)

    def sums(self, ops: OpColumns, described: Mapping[int, EagerNode]) -> tuple[int, ...]:
        """The Σ ns of a step's ops (:func:`split`) per phase (0 where none ran), by the ``described`` nodes'
        phases."""
        nodes, durations, _shapes = ops
        if nodes != self._nodes or len(described) != self._known:
            index = {p: i for i, p in enumerate(STEP_PHASES)}
            self._phase = np.fromiter(
                (index.get(info.phase, -1) if (info := described.get(n)) is not None else -1 for n in nodes),
                dtype=np.int64,
                count=len(nodes),
            )
            self._nodes, self._known = nodes, len(described)
        if not nodes:
            return (0,) * len(STEP_PHASES)
        ns = np.fromiter(durations, dtype=np.float64, count=len(durations))
        sums = np.bincount(self._phase + 1, weights=ns, minlength=len(STEP_PHASES) + 1)[1:]
        return tuple(np.rint(sums).astype(np.int64).tolist())
