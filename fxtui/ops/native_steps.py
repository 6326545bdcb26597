"""A native step's recording resolved in time proportional to its ops, without a Python object per op.

The native timer (:mod:`fxtui.ops.native_recorder`) leaves a step as an int64 array of rows (one per op) and a
few Python records (one per module call and phase). Merged into per-op records and walked by the namer
(:meth:`~fxtui.ops.namer.OpNamer.resolve`), the step cost 3.6–5.4 µs an op after it ran: one tuple and one
frame per op. A training loop runs the same ops in the same module calls step after step, so the step is kept
as a :class:`NativeStep` and resolved here:

* its **shape** — what decides each op's node — is read from the arrays, with numpy: the ops' name ids, where
  each Python record falls among them, which rows share an autograd node (its first row), each autograd node's
  stretch among the module calls' sequence numbers, the parameter each ``AccumulateGrad`` feeds, and, for the
  few ops outside every module, which root's output each one reads (followed through the tensors they read and
  make, as the namer follows them). The Python records add what they name: each module's place, each phase and
  its owner's name;
* a step of the **same shape** as one resolved the long way (one of the last few) gets that step's node per row
  back: its ops are the array of node ids, their times one subtraction (each node's sum is then one
  ``np.bincount``: :func:`node_sums`);
* a step of **another shape** (a first step, a last smaller batch, a branch taken, compiled code) is merged and
  walked by the namer as before, and its node per row is kept for the next.

What the namer decides per op is a function of that shape alone (its rules read names, module places, phases,
the order of autograd nodes within a stretch, parameters and the equality of tensors outside modules), so both
ways name every op alike; ``tests/test_native_timer.py`` checks it on the corpus's patterns (a differential test).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fxtui.core.op_nodes import OpTime
from fxtui.core.op_sums import OpArrays
from fxtui.ops.records import (
    UNKNOWN_SHAPE,
    CompiledCall,
    KernelCall,
    ModuleEnter,
    ModuleExit,
    Named,
    OpCall,
    PhaseEnter,
    PhaseExit,
    Record,
    make,
)

COLUMNS = 7
NAME, T0, T1, NODE, SEQ, VARIABLE, FLOW = range(COLUMNS)


class NativeNode:
    """The autograd node that ran a native row, read as the namer reads one (its sequence number, its kind)."""

    __slots__ = ("__weakref__", "_seq", "impl")

    def __init__(self, seq: int, impl: int) -> None:
        self._seq = seq
        self.impl = impl
        """For an ``AccumulateGrad``: its parameter's TensorImpl address (``param._cdata``); else 0."""

    def _sequence_nr(self) -> int:
        return self._seq


class AccumulateGrad(NativeNode):
    """A parameter's gradient accumulation (named as torch's node class: the namer charges it to the parameter's
    module)."""

    __slots__ = ()
    variable = None


class NativeStep:
    """One native recording of a step, unmerged: its rows and flow (copies), its Python records, and the ops'
    names (``op(name id)``: a :class:`~fxtui.ops.native_recorder.NativeOp`)."""

    __slots__ = ("add", "flow", "op", "python", "rows")

    def __init__(
        self, rows: np.ndarray, flow: np.ndarray, python: list[Record], op: Callable[[int], Any], add: Any
    ) -> None:
        self.rows = rows
        self.flow = flow
        self.python = python
        self.op = op
        self.add = add
        """The op ``aten::add``: autograd's in-place sum of two gradients is named by it (as under the mode)."""

    def __len__(self) -> int:
        return len(self.rows) + len(self.python)

    def records(self) -> list[Record]:
        """The Python records with the rows merged in by time, as the dispatch mode would have appended them (one
        record per op: the long way)."""
        return merge(self.rows, self.flow, self.python, self.op, self.add)


def expand(records: Sequence[Any]) -> list[Record]:
    """``records`` with each :class:`NativeStep` in them merged into per-op records."""
    out: list[Record] = []
    for record in records:
        if type(record) is NativeStep:
            out += record.records()
        else:
            out.append(record)
    return out


def _at(record: Record) -> int:
    """When a Python record was appended: the clock it holds (a kernel's or compiled call's end)."""
    kind = type(record)
    if kind is KernelCall or kind is CompiledCall:
        return record.t1  # type: ignore[union-attr]
    if kind in (ModuleEnter, ModuleExit, PhaseEnter, PhaseExit):
        return record.t  # type: ignore[union-attr]
    return 0


def _where(rows: np.ndarray, python: list[Record]) -> np.ndarray:
    """For each Python record, how many rows started before it (it goes after them)."""
    times = np.fromiter((_at(r) for r in python), dtype=np.int64, count=len(python))
    if not len(rows):
        return np.zeros(len(python), dtype=np.int64)
    return np.searchsorted(rows[:, T0], times, side="left")


def merge(
    rows: np.ndarray, flow: np.ndarray, python: list[Record], op: Callable[[int], Any], add: Any = None
) -> list[Record]:
    """The Python records with the rows merged in by time (an op before the first record after its start)."""
    count = len(rows)
    where = _where(rows, python)
    nodes: dict[tuple[int, int, int], Any] = {}
    out: list[Record] = []
    at = 0
    listed = rows.tolist()
    flows = flow.tolist()
    ops = [op(i) for i in range(int(rows[:, NAME].max()) + 1)] if count else []
    for k, record in enumerate(python):
        upto = int(where[k])
        for row in listed[at:upto]:
            out.append(_op_record(row, ops, nodes, flows, add))
        at = max(at, upto)
        out.append(record)
    for row in listed[at:]:
        out.append(_op_record(row, ops, nodes, flows, add))
    return out


def _op_record(row: list[int], ops: list[Any], nodes: dict[tuple[int, int, int], Any], flow: list[int],
               add: Any) -> Record:  # fmt: skip
    name, t0, t1, node_at, seq, variable, flow_at = row
    op = ops[name]
    node: Any = None
    if node_at:
        if add is not None and op.name == "aten::add_" and not variable:
            # autograd's engine sums two gradients of one tensor in place (``add_``) unless a Python mode is on,
            # when it adds out of place (``add``): named as under the mode (AccumulateGrad's own ``+=`` is in
            # place in both)
            op = add
        key = (node_at, seq, variable)
        node = nodes.get(key)
        if node is None:
            node = nodes[key] = AccumulateGrad(seq, variable) if variable else NativeNode(seq, 0)
    flows = None
    if flow_at >= 0:
        inputs, outputs = _flow_at(flow, flow_at)
        flows = (inputs, outputs)
    return make(OpCall, (op, t0, t1, node, UNKNOWN_SHAPE, None, None, flows))


def _flow_at(flow: list[int], at: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The tensors (TensorImpl addresses) an op read and made, from its place in the flow."""
    n = flow[at]
    m = flow[at + 1 + n]
    return tuple(flow[at + 1 : at + 1 + n]), tuple(flow[at + 2 + n : at + 2 + n + m])


# -- the step's shape ------------------------------------------------------------------------------------------------


def shape_of(step: NativeStep, namer: Any) -> tuple[Any, ...] | None:
    """What decides the node of each of the step's ops (equal for two steps: the same node per row); None where
    the step holds what only the long way resolves (compiled code, a module no root holds at the top).

    The tensors ops outside every module read and make are followed as the namer follows them (which root's output
    each reads, if any): the outcome is the shape's, not the addresses, which the allocator's reuse makes differ
    from step to step while the namer's reading does not."""
    rows, python = step.rows, step.python
    where = _where(rows, python)
    flow = step.flow.tolist()  # read a few integers at a time: a list's slices, not numpy's
    flow_rows = np.flatnonzero(rows[:, FLOW] >= 0).tolist()
    derived: dict[int, int] = {}  # a tensor's address → the root whose output it is, or was computed from
    read: list[int] = []  # per op outside every module with its flow, and per root call: the root it reads (-1)
    phases: list[str] = []
    stack: list[int] = []  # the root of each module call in progress
    namespaces: dict[int, str] = {}
    at = 0

    def ops_upto(upto: int) -> None:
        nonlocal at
        while at < len(flow_rows) and flow_rows[at] < upto:
            k = flow_rows[at]
            at += 1
            name = int(rows[k, NAME])
            space = namespaces.get(name)
            if space is None:
                space = namespaces[name] = step.op(name).namespace
            if rows[k, NODE] or space in ("profiler", "c10d"):
                continue  # the namer reads no flow of these
            inputs, outputs = _flow_at(flow, int(rows[k, FLOW]))
            root = next((derived[t] for t in inputs if t in derived), -1) if derived else -1
            if root >= 0:
                for t in outputs:
                    derived[t] = root
            elif derived:
                for t in outputs:
                    derived.pop(t, None)  # as the namer: a tensor made from nothing of a root's is no root's
            read.append(root)

    tokens: list[Any] = []
    seqs: list[int] = []
    for k, record in enumerate(python):
        ops_upto(int(where[k]))
        kind = type(record)
        if kind is ModuleEnter:
            if record.compiled:  # type: ignore[union-attr]
                return None
            module = record.module  # type: ignore[union-attr]
            place = namer.known_module(module)
            if not stack:
                if place is None:
                    return None  # a root first seen here: the long way adds it
                root = place[0]
                inputs = record.inputs  # type: ignore[union-attr]
                if inputs and derived and namer.is_loss(module):
                    given = next((derived[t] for t in inputs if t in derived), -1)
                    root = given if given >= 0 else root
                    read.append(given)
                stack.append(root)
            else:
                stack.append(-1)
            tokens.append((True, place, type(module).__name__))
            seqs.append(record.seq)  # type: ignore[union-attr]
        elif kind is ModuleExit:
            if record.compiled:  # type: ignore[union-attr]
                return None
            tokens.append((False, namer.known_module(record.module), type(record.module).__name__))  # type: ignore[union-attr]
            seqs.append(record.seq)  # type: ignore[union-attr]
            if not stack:
                continue  # a call begun before the recording: the namer passes it by
            root = stack.pop()
            if not stack:
                for t in record.outputs:  # type: ignore[union-attr]
                    derived[t] = root
        elif kind is PhaseEnter:
            owner = record.owner  # type: ignore[union-attr]
            phase = record.phase  # type: ignore[union-attr]
            tokens.append((phase, owner.name if isinstance(owner, Named) else type(owner).__name__))
            phases.append(phase)
            if phase not in ("closure", "backward"):
                derived.clear()
        elif kind is PhaseExit:
            tokens.append(record.phase)  # type: ignore[union-attr]
            if phases and phases.pop() == "backward":
                derived.clear()
        else:
            return None  # a compiled kernel or call
    ops_upto(len(rows))
    marks = np.asarray(seqs, dtype=np.int64)
    if len(marks) > 1 and bool((np.diff(marks) < 0).any()):
        return None  # sequence numbers out of order: the stretches are the long way's to find
    node_rows = np.flatnonzero(rows[:, NODE])
    same_node = node_rows[_first_of_each(rows[node_rows][:, [NODE, SEQ, VARIABLE]])]
    stretch = np.searchsorted(marks, rows[node_rows, SEQ], side="right")
    return (
        rows[:, NAME].tobytes(),
        where.tobytes(),
        node_rows.tobytes(),
        same_node.tobytes(),
        stretch.tobytes(),
        rows[node_rows, VARIABLE].tobytes(),
        np.asarray(flow_rows, dtype=np.int64).tobytes(),
        tuple(read),
        tuple(tokens),
    )


def _first_of_each(keys: np.ndarray) -> np.ndarray:
    """For each row of ``keys``, the index of the first row equal to it (by a stable lexical sort, in C)."""
    if not len(keys):
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort(keys.T[::-1])  # stable: within a run of equal keys, by index
    ordered = keys[order]
    starts = np.ones(len(keys), dtype=bool)
    starts[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    run = np.cumsum(starts) - 1  # each sorted row's run of equal keys
    first = np.empty(len(keys), dtype=np.int64)
    first[order] = order[np.flatnonzero(starts)][run]
    return first


def node_sums(ops: Sequence[OpTime]) -> tuple[np.ndarray, np.ndarray]:
    """The nodes a step's ops ran and each one's Σ ns, by ``np.bincount`` (columns taken in C, not op by op)."""
    if not ops:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    nodes, ns, _shapes, _starts = zip(*ops, strict=False)
    node = np.asarray(nodes, dtype=np.int64)
    sums = np.bincount(node, weights=np.asarray(ns, dtype=np.float64))
    ran = np.flatnonzero(np.bincount(node))
    return ran, np.rint(sums[ran]).astype(np.int64)


#: Shapes of step kept with their nodes per row (a training step's, an evaluation call's, a last smaller batch's …).
KNOWN_SHAPES = 8


class _Known:
    """A step resolved the long way: each timed row's node id and shape text, and which rows are timed (None: all;
    else not the ``profiler`` ranges)."""

    __slots__ = ("kept", "node", "texts")

    def __init__(self, node: np.ndarray, texts: list[str], kept: np.ndarray | None) -> None:
        self.node = node
        self.texts = texts
        self.kept = kept


def resolve(namer: Any, step: NativeStep, walk: Callable[[list[Record]], list[OpTime]]) -> list[OpTime]:
    """``step``'s ops, one tuple each (:func:`resolve_arrays`)."""
    ops = resolve_arrays(namer, step, walk)
    if isinstance(ops, OpArrays):
        return list(zip(ops.node.tolist(), ops.ns.tolist(), ops.shapes, ops.start.tolist(), strict=True))
    return ops


def resolve_arrays(
    namer: Any, step: NativeStep, walk: Callable[[list[Record]], list[OpTime]]
) -> OpArrays | list[OpTime]:
    """``step``'s ops: from its rows, as arrays, if it has the shape of a step resolved the long way before (one of
    the last :data:`KNOWN_SHAPES`), else the long way (``walk``: the namer's walk over records), keeping its node per
    row for the next step of its shape (a training loop's steps alternate with evaluation calls)."""
    shape = shape_of(step, namer)
    shapes: dict[tuple[Any, ...], _Known] = namer.__dict__.setdefault("_native_known", {})
    known = shapes.get(shape) if shape is not None else None
    rows = step.rows
    if known is not None:
        kept = known.kept
        t0 = rows[:, T0] if kept is None else rows[kept, T0]
        ns = (rows[:, T1] if kept is None else rows[kept, T1]) - t0
        return OpArrays(known.node, ns, known.texts, t0)
    ops = walk(step.records())
    if shape is None:
        shape = shape_of(step, namer)  # a root first seen in this step is known now
    if shape is not None:
        names = np.unique(rows[:, NAME]).tolist()
        skipped = [i for i in names if step.op(i).namespace == "profiler"]
        kept = np.flatnonzero(~np.isin(rows[:, NAME], skipped)) if skipped else None
        timed = len(rows) if kept is None else len(kept)
        if len(ops) == timed:  # one op per timed row, in order (else the long way stays the way)
            node = np.fromiter((n for n, *_ in ops), dtype=np.int64, count=timed)
            if len(shapes) >= KNOWN_SHAPES:
                del shapes[next(iter(shapes))]  # the oldest
            shapes[shape] = _Known(node, [s for _, _, s, _ in ops], kept)
    return ops
