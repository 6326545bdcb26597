"""A sampled step's ops as they cross from the agent to the collector: per node Σ ns, calls and shapes, plus a bounded
sample of raw ops for the trace.

The agent once sent every op of a sampled step as a tuple (node id, ns, output shape, start), and the collector
summed them per node and per the shapes the node ran at in the step. A step of 100,000 ops was 100,000 tuples held
by the program's sender queue (scanned by the program's garbage collector until sent), pickled, unpickled and summed
op by op. What the collector keeps of a step is per node anyway (one sample of Σ ns per node and shapes, and its
calls), so the agent sends that: :class:`NodeSums`, a few arrays as bytes and one tuple of shape texts, whose size
grows with the step's nodes, not its ops. Only the trace export draws ops one by one; it gets the step's first
:data:`RAW_OPS` ops (as arrays too), and the count of those left out, so that it can say it is a sample.

Torch-free, numpy only: made in the program (:meth:`fxtui.agent.agent.Agent._emit`), read in the collector
(:mod:`fxtui.jobs.kind_tally`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from fxtui.core.op_nodes import OpTime

#: Raw ops a sampled step sends for the trace export: its first ones (a trace of a step of more says it is a sample).
#: A training step of small ops runs ~1,000, all sent; a step of a million ops (an unrolled LSTM under LBFGS) sends
#: ~100 KB of them rather than ~25 MB.
RAW_OPS = 4096
#: Seconds between the sampled steps of one kind that carry raw ops, at least (the kind's first always does). The
#: collector keeps one step's raw ops for the trace, so the steps between send their sums alone: a sampled step of
#: ~1,000 ops is then ~8 kB rather than ~22 kB, against ~19 kB as one tuple an op.
RAW_EVERY_S = 5.0
#: Output shapes of one node in one step named in its column, at most (a loop over growing tensors names a few).
MAX_STEP_SHAPES = 3
#: Joins the output shapes a node ran at in one step (a module called at two shapes: ``4×64×32×32 + 4×32×32×32``).
SHAPE_JOIN = " + "
_SPARSE = 1 << 20  # node ids spread wider than this (never the namer's: it counts from 0) are made dense first


@dataclass(frozen=True)
class NodeSums:
    """A sampled step's ops per node, in the order the nodes first ran, and its first :data:`RAW_OPS` raw ops.

    Arrays travel as bytes: their pickle is one copy, not an object per element."""

    nodes: bytes = b""
    """Each node's id (in :attr:`node_types`' first type)."""
    ns: bytes = b""
    """Each node's Σ ns over its calls in the step (its second)."""
    calls: bytes = b""
    """Each node's calls in the step (its third)."""
    keys: tuple[str, ...] = ()
    """The distinct shapes keys (:func:`step_shapes`) of the step's nodes."""
    key_of: bytes = b""
    """Each node's shapes key, as its index in :attr:`keys` (in :attr:`node_types`' fourth type)."""
    sample: tuple[bytes, ...] = ()
    """The step's first ops, in the order they ran, as four columns: node id, ns, start clock − :attr:`sample_base`,
    output shape's index in :attr:`sample_shapes`; each in the narrowest integer type that holds it
    (:attr:`sample_types`): ~14 bytes an op where tuples pickled to ~19."""
    sample_types: tuple[str, ...] = ()
    sample_base: int = 0
    sample_shapes: tuple[str, ...] = ()
    ops: int = 0
    """The step's ops (the sample holds the first :data:`RAW_OPS` of them)."""
    node_types: tuple[str, str, str, str] = ("<i8", "<i8", "<i8", "<i4")
    """The integer types :attr:`nodes`, :attr:`ns`, :attr:`calls` and :attr:`key_of` travel in: each the narrowest
    that holds its values (a 1,000-op step's per-node arrays took 24 kB as int64 and int32, 7 kB narrowed); read
    back as int64."""

    def node_ids(self) -> np.ndarray:
        return _wide(self.nodes, self.node_types[0])

    def sums(self) -> np.ndarray:
        return _wide(self.ns, self.node_types[1])

    def call_counts(self) -> np.ndarray:
        return _wide(self.calls, self.node_types[2])

    def shape_keys(self) -> list[str]:
        """Each node's shapes key (one text per node)."""
        keys = self.keys
        return [keys[i] for i in np.frombuffer(self.key_of, dtype=self.node_types[3]).tolist()]

    def total_ns(self) -> int:
        """Σ ns of the step's ops."""
        return int(self.sums().sum())

    @property
    def layout(self) -> tuple[bytes, bytes, tuple[str, ...], bytes, tuple[str, str, str, str]]:
        """What decides the collector's columns and call counts: a step of the same layout as the one before is
        folded as arrays."""
        return self.nodes, self.calls, self.keys, self.key_of, self.node_types

    def _columns(self) -> list[np.ndarray]:
        return [np.frombuffer(b, dtype=t) for b, t in zip(self.sample, self.sample_types, strict=True)]

    @property
    def left_out(self) -> int:
        """The step's ops not in :meth:`raw` (0: the trace is the whole step)."""
        return self.ops - (len(self._columns()[0]) if self.sample else 0)

    def raw(self) -> list[OpTime]:
        """The sampled raw ops as ``(node id, ns, output shape, start)`` (for the trace export, once)."""
        if not self.sample:
            return []
        node, ns, start, shape = (c.tolist() for c in self._columns())
        shapes, base = self.sample_shapes, self.sample_base
        return [(n, d, shapes[s], base + t) for n, d, t, s in zip(node, ns, start, shape, strict=True)]


EMPTY = NodeSums()


@dataclass(frozen=True)
class OpArrays:
    """A step's ops as columns, in the order they ran: what the native timer's rows resolve to when the step ran as
    one before it (:func:`fxtui.ops.native_steps.resolve_arrays`), summed by :func:`sums_of` with no tuple per op."""

    node: np.ndarray
    ns: np.ndarray
    shapes: Sequence[str]
    start: np.ndarray

    def __len__(self) -> int:
        return len(self.node)


def sums_of(ops: Sequence[OpTime] | OpArrays, raw: int = RAW_OPS) -> NodeSums:
    """``ops`` (one step's, in the order they ran; node ids ≥ 0) per node, with the first ``raw`` of them kept raw.

    Time proportional to the ops, in C: each field taken by ``itemgetter`` into an array (``zip(*ops)`` took 50 ms
    for 100,000 ops, transposing through as many iterators), sums and calls by ``np.add.at``/``np.bincount`` over the
    node ids, each node's first op by ``np.minimum.at``. A node's shapes key is its first op's shape unless one of its
    ops ran at another (an array comparison finds those; only they are walked in Python). Nothing made per op
    outlives the call: the message is bytes, a tuple of keys and the sample's shapes."""
    n = len(ops)
    if not n:
        return EMPTY
    head = min(n, raw)
    if isinstance(ops, OpArrays):
        node, ns, shape_list = ops.node.astype(np.int64), ops.ns.astype(np.int64), ops.shapes
        start = ops.start[:head].astype(np.int64)
    else:
        node = np.fromiter(map(itemgetter(0), ops), dtype=np.int64, count=n)
        ns = np.fromiter(map(itemgetter(1), ops), dtype=np.int64, count=n)
        shape_list = list(map(itemgetter(2), ops))
        start = np.fromiter(map(itemgetter(3), ops[:head]), dtype=np.int64, count=head)
    shape = np.empty(n, dtype=object)
    shape[:] = shape_list
    low, high = int(node.min()), int(node.max())
    if high - low > _SPARSE:
        ids, idx = np.unique(node, return_inverse=True)
    else:
        ids, idx = np.arange(low, high + 1, dtype=np.int64), node - low
    size = len(ids)
    first = np.full(size, n, dtype=np.int64)
    np.minimum.at(first, idx, np.arange(n, dtype=np.int64))
    ran = np.flatnonzero(first < n)
    ran = ran[np.argsort(first[ran], kind="stable")]  # the nodes in the order they first ran
    sums = np.zeros(size, dtype=np.int64)
    np.add.at(sums, idx, ns)  # exact in int64
    calls = np.bincount(idx, minlength=size)
    firsts = np.empty(size, dtype=object)
    firsts[ran] = shape[first[ran]]
    several: dict[int, list[str]] = {}  # node (dense) → its shapes in the order they came, where more than one
    for i in np.flatnonzero(shape != firsts[idx]).tolist():
        at, its = int(idx[i]), shape_list[i]
        kept = several.setdefault(at, [firsts[at]])
        if its not in kept and len(kept) <= MAX_STEP_SHAPES:
            kept.append(its)
    key_index: dict[str, int] = {}
    key_of = np.fromiter(
        (
            key_index.setdefault(step_shapes(several[at]) if at in several else firsts[at], len(key_index))
            for at in ran.tolist()
        ),
        dtype=np.int32,
        count=len(ran),
    )
    base = int(start.min()) if head else 0
    shape_index = {s: i for i, s in enumerate(dict.fromkeys(shape_list[:head]))}
    codes = np.fromiter(map(shape_index.__getitem__, shape_list[:head]), dtype=np.int64, count=head)
    sample = [_narrow(c) for c in (node[:head], ns[:head], start - base, codes)] if head else []
    per_node = [_narrow(c) for c in (ids[ran], sums[ran], calls[ran], key_of)]
    return NodeSums(
        nodes=per_node[0].tobytes(),
        ns=per_node[1].tobytes(),
        calls=per_node[2].tobytes(),
        keys=tuple(key_index),
        key_of=per_node[3].tobytes(),
        sample=tuple(c.tobytes() for c in sample),
        sample_types=tuple(c.dtype.str for c in sample),
        sample_base=base,
        sample_shapes=tuple(shape_index),
        ops=n,
        node_types=(per_node[0].dtype.str, per_node[1].dtype.str, per_node[2].dtype.str, per_node[3].dtype.str),
    )


def _wide(data: bytes, kind: str) -> np.ndarray:
    """An array sent in type ``kind`` as int64 (read-only when it already was)."""
    values = np.frombuffer(data, dtype=kind)
    return values if values.dtype == np.int64 else values.astype(np.int64)


def _narrow(values: np.ndarray) -> np.ndarray:
    """``values`` in the narrowest of int8, int16, int32, int64 that holds them all."""
    low, high = int(values.min()), int(values.max())
    for kind in (np.int8, np.int16, np.int32):
        info = np.iinfo(kind)
        if info.min <= low and high <= info.max:
            return values.astype(kind)
    return values.astype(np.int64)


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
