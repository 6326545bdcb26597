"""A sampled step's per-node sums folded as arrays when the step ran the same nodes as the one before: the intake of
hundreds of ranks.

A rank's sampled step arrives as per-node sums (:class:`~fxtui.core.op_sums.NodeSums`: each node's Σ ns, calls and
the shapes it ran at). A training loop runs the same nodes at the same shapes step after step, so the step's
*layout* — its nodes in the order they first ran, their calls and shapes keys — is kept with what it maps to: each
node's window column and calls. A step of the same layout is then one array of sums into the window, and its
columns' shape and call counts are counted once per layout (:attr:`OpLayout.repeats`), folded into the figures when
they are read. A step of another layout (a last smaller batch, a branch taken) makes its columns anew. The phases of
a step's nodes (:class:`PhaseIndex`) are summed the same way.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from fxtui.core.op_nodes import EagerNode
from fxtui.core.op_sums import NodeSums
from fxtui.core.program_run import STEP_PHASES


class OpLayout:
    """The nodes, calls and shapes of a step, and the window columns they fill."""

    def __init__(self, key: tuple[object, ...], columns: np.ndarray, calls: np.ndarray) -> None:
        self.key = key
        """:attr:`NodeSums.layout` of the steps it stands for."""
        self.columns = columns
        """Each node's window column, in the order the nodes first ran."""
        self.calls = calls
        """Each column's calls in one step."""
        self.repeats = 0
        """Steps of this layout not yet counted in the figures' shape and call counts."""

    def same(self, sums: NodeSums) -> bool:
        """Whether a step of these sums has this layout."""
        return sums.layout == self.key


class PhaseIndex:
    """A sampled step's Σ op ns in each phase of :data:`STEP_PHASES`, with the phase of each of its nodes kept while
    the steps run the same nodes (the nodes' phases are facts: a node, once described, keeps its phase)."""

    def __init__(self) -> None:
        self._nodes: tuple[bytes, str] = (b"", "")
        self._known = -1
        self._phase: np.ndarray = np.zeros(0, dtype=np.int64)

    def sums(self, sums: NodeSums, described: Mapping[int, EagerNode]) -> tuple[int, ...]:
        """The Σ ns of a step's nodes per phase (0 where none ran), by the ``described`` nodes' phases."""
        if (sums.nodes, sums.node_types[0]) != self._nodes or len(described) != self._known:
            index = {p: i for i, p in enumerate(STEP_PHASES)}
            nodes = sums.node_ids().tolist()
            self._phase = np.fromiter(
                (index.get(info.phase, -1) if (info := described.get(n)) is not None else -1 for n in nodes),
                dtype=np.int64,
                count=len(nodes),
            )
            self._nodes, self._known = (sums.nodes, sums.node_types[0]), len(described)
        if not sums.nodes:
            return (0,) * len(STEP_PHASES)
        by_phase = np.zeros(len(STEP_PHASES) + 1, dtype=np.int64)
        np.add.at(by_phase, self._phase + 1, sums.sums())
        return tuple(by_phase[1:].tolist())
