"""A sampled step's ops as they cross from the agent to the collector: per node Σ ns, calls and shapes, plus a bounded
sample of raw ops for the trace.

The agent once sent every op of a sampled step as a tuple (node id, ns, output shape, start), and the collector
summed them per node and per the shapes the node ran at in the step. A step of 100,000 ops was 100,000 tuples held
by the program's sender queue (scanned by the program's garbage collector until sent), pickled, unpickled and summed
op by op. What the collector keeps of a step is per node anyway (one sample of Σ ns per node and shapes, and its
calls), so the agent sends that: :class:`NodeSums`, a few arrays as bytes and one tuple of shape texts, whose size
grows with the step's nodes, not its ops. Only the trace export draws ops one by one; it gets the step's first
:data:`RAW_OPS` ops (as arrays too), and the count of those left out, so that it can say it is a sample.

Torch-free, numpy only: made in the program (:mod:`fxtui.agent.step_message`), read in the collector
(:mod:`fxtui.jobs.kind_tally`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fxtui.core.op_nodes import OpTime

#: Raw ops a sampled step sends for the trace export: its first ones (a trace of a step of more says it is a sample).
#: A training step of small ops runs ~1,000, all sent; a step of a million ops (an unrolled LSTM under LBFGS) sends
#: ~100 KB of them rather than ~25 MB.
RAW_OPS = 4096
#: Output shapes of one node in one step named in its column, at most (a loop over growing tensors names a few).
MAX_STEP_SHAPES = 3
#: Joins the output shapes a node ran at in one step (a module called at two shapes: ``4×64×32×32 + 4×32×32×32``).
SHAPE_JOIN = " + "
_SAMPLE_FIELDS = 4  # node, ns, start, shape's index in sample_shapes


@dataclass(frozen=True)
class NodeSums:
    """A sampled step's ops per node, in the order the nodes first ran, and the first :data:`RAW_OPS` raw ops.

    Arrays travel as bytes (int64 unless said): their pickle is one copy, not an object per element."""

    nodes: bytes = b""
    """Each node's id."""
    ns: bytes = b""
    """Each node's Σ ns over its calls in the step."""
    calls: bytes = b""
    """Each node's calls in the step."""
    keys: tuple[str, ...] = ()
    """The distinct shapes keys (:func:`step_shapes`) of the step's nodes."""
    key_of: bytes = b""
    """Each node's shapes key, as its index in :attr:`keys` (int32)."""
    sample: bytes = b""
    """The step's first ops, in the order they ran: (node id, ns, start clock, its shape's index in
    :attr:`sample_shapes`) per op."""
    sample_shapes: tuple[str, ...] = ()
    ops: int = 0
    """The step's ops (the sample holds the first :data:`RAW_OPS` of them)."""

    def node_ids(self) -> np.ndarray:
        return np.frombuffer(self.nodes, dtype=np.int64)

    def sums(self) -> np.ndarray:
        return np.frombuffer(self.ns, dtype=np.int64)

    def call_counts(self) -> np.ndarray:
        return np.frombuffer(self.calls, dtype=np.int64)

    def shape_keys(self) -> list[str]:
        """Each node's shapes key (one text per node)."""
        keys = self.keys
        return [keys[i] for i in np.frombuffer(self.key_of, dtype=np.int32).tolist()]

    def total_ns(self) -> int:
        """Σ ns of the step's ops."""
        return int(self.sums().sum())

    @property
    def layout(self) -> tuple[bytes, bytes, tuple[str, ...], bytes]:
        """What decides the collector's columns and call counts: a step of the same layout as the one before is
        folded as arrays."""
        return self.nodes, self.calls, self.keys, self.key_of

    @property
    def left_out(self) -> int:
        """The step's ops not in :meth:`raw` (0: the trace is the whole step)."""
        return self.ops - len(self.sample) // (8 * _SAMPLE_FIELDS)

    def raw(self) -> list[OpTime]:
        """The sampled raw ops as ``(node id, ns, output shape, start)`` (for the trace export, once)."""
        rows = np.frombuffer(self.sample, dtype=np.int64).reshape(-1, _SAMPLE_FIELDS)
        shapes = self.sample_shapes
        return [(n, ns, shapes[s], t) for n, ns, t, s in rows.tolist()]


EMPTY = NodeSums()


def sums_of(ops: Sequence[OpTime], raw: int = RAW_OPS) -> NodeSums:
    """``ops`` (one step's, in the order they ran) per node, with the first ``raw`` of them kept raw.

    Time proportional to the ops, in C but for one pass over the step's distinct (node, shape) pairs: the columns
    are transposed by ``zip``, the pairs made distinct by a dict, the sums taken by a sort and ``np.add.reduceat``
    (exact in int64). Nothing made per op outlives the call but the sample's bytes."""
    if not ops:
        return EMPTY
    node_t, ns_t, shape_t, start_t = zip(*ops, strict=False)  # every op is 4 fields; strict checks cost a third
    node = np.array(node_t, dtype=np.int64)
    ns = np.array(ns_t, dtype=np.int64)
    ids, inverse, counts = np.unique(node, return_inverse=True, return_counts=True)
    order = np.argsort(inverse, kind="stable")
    starts = np.zeros(len(ids), dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    sums = np.add.reduceat(ns[order], starts)
    seen: dict[int, list[str]] = {}  # node → its shapes in the order they came, in the order the nodes first ran
    for n, shape in dict.fromkeys(zip(node_t, shape_t, strict=True)):
        kept = seen.get(n)
        if kept is None:
            seen[n] = [shape]
        elif len(kept) <= MAX_STEP_SHAPES:
            kept.append(shape)
    first = np.fromiter(seen, dtype=np.int64, count=len(seen))
    at = np.searchsorted(ids, first)
    key_index: dict[str, int] = {}
    key_of = np.fromiter(
        (key_index.setdefault(step_shapes(s), len(key_index)) for s in seen.values()), dtype=np.int32, count=len(seen)
    )
    head = len(ops) if len(ops) <= raw else raw
    shape_index = {s: i for i, s in enumerate(dict.fromkeys(shape_t[:head]))}
    sample = np.empty((head, _SAMPLE_FIELDS), dtype=np.int64)
    sample[:, 0] = node[:head]
    sample[:, 1] = ns[:head]
    sample[:, 2] = np.array(start_t[:head], dtype=np.int64)
    sample[:, 3] = np.fromiter((shape_index[s] for s in shape_t[:head]), dtype=np.int64, count=head)
    return NodeSums(
        nodes=first.tobytes(),
        ns=sums[at].tobytes(),
        calls=counts[at].astype(np.int64).tobytes(),
        keys=tuple(key_index),
        key_of=key_of.tobytes(),
        sample=sample.tobytes(),
        sample_shapes=tuple(shape_index),
        ops=len(ops),
    )


def step_shapes(shapes: list[str]) -> str:
    """The text of the output shapes a node ran at in one step: one shape as it is, several joined in the order they
    came (beyond :data:`MAX_STEP_SHAPES`, the first ones and ``…``).

    A node's step is one sample whatever shapes its calls had: a module called at two shapes in every step (one
    activation after convolutions of different widths) holds the time of all its calls in one figure, while a step
    whose calls differ from the others' (a last smaller batch) is kept apart, never mixed into the node's median.
    """
    if len(shapes) == 1:
        return shapes[0]
    named = shapes[:MAX_STEP_SHAPES]
    return SHAPE_JOIN.join(named) + (SHAPE_JOIN + "…" if len(shapes) > MAX_STEP_SHAPES else "")
