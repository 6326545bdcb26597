"""One walk over a sampled step's records: which node each op is, as ``(node id, ns, shape, start)`` in the order the
ops ran (:meth:`~fxtui.ops.namer.OpNamer.resolve` starts it; the namer names a node the first time it is seen).

* **A node is an op at a position within one call of its module.** Each module call opens a
  frame; an op's position in it is its label, the child module whose call it follows (its
  *anchor*) and how many ops of that label came since. A module called many times per step (a
  cell unrolled over time, a block applied N times, a decode loop) gives the same nodes at every
  call, and a node's time in a step is the sum over its calls: the number of nodes follows the
  model's structure, not the loop's length. Repeats of one position beyond :data:`MAX_REPEATS`
  (a loop of ops with no module call between them) fold into the last.
* **Backward ops** are charged to the forward module whose stretch made their autograd node:
  each module call notes the autograd sequence number as it enters and leaves, and the stretch
  between two notes belongs to the module on top then (gradient accumulation to the module
  owning the parameter).
* **Phases** put ops in the optimizer (under its class), data loading (``DataLoader``),
  ``generate()``'s own loop, or collectives. A ``step(closure)``'s closure is not the
  optimizer's: its forward and backward are the model's, its loss the loss's.
* **Code outside every module is named.** Ops outside every module that consume a root's output,
  or what was computed from it — the loss, ``F.cross_entropy(model(x), y)``, its ``.item()`` —
  are that root's ``(loss)`` (the recorder notes the tensors each such op reads and makes); other
  ops outside every module (making a batch, moving it) are ``(script)``. Between a root's forward
  and the backward that follows it, with no phase between (the loss, and whatever the script does
  there), ops outside every module are the forward's, as the step's wall time counts them
  (:mod:`fxtui.agent.steps`); elsewhere (after the last backward, in a step with none: an
  evaluation) they are ``other``.
* **Compiled code**: the kernels of compiled graphs (:mod:`fxtui.ops.kernels`) are charged to
  the modules their source nodes ran in; a compiled module's time outside its timed kernels is a
  node of its own, ``<compiled>``.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterable
from typing import Any, Protocol

import torch

from fxtui.core.op_nodes import OpTime
from fxtui.ops.recorder import GRADIENT
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
)

#: The node of a compiled module's (or compiled backward's) time outside its timed kernels.
COMPILED = "<compiled>"
#: The pseudo-module of ops that follow a root's forward outside every module (the loss), under that root.
LOSS = "(loss)"
#: The pseudo-module of the program's own ops outside every module and phase.
SCRIPT = "(script)"
#: Positions of one label after one anchor in one call beyond this many fold into the last (a loop of ops).
MAX_REPEATS = 16
#: Ops of one label run by one autograd node beyond this many fold into the last (a ``cat`` of N tensors' slices).
MAX_NODE_REPEATS = 4

Where = tuple[int, str]
"""(root index, module path inside it); root -1: no module (an optimizer's class, a pseudo-module)."""
OUTSIDE: Where = (-1, "")
#: The pseudo-module holding a phase's ops that run outside every module.
_PSEUDO = {"data": "DataLoader", "prefill": "generate", "decode": "generate"}
#: Phases whose ops outside every module are the model's (a closure's loss), not the phase's.
_MODEL_PHASES = {"closure", "forward"}
#: A ``generate()`` call's phases: its model's ops are in them, its own loop's ops are ``generate``'s.
_GENERATE = {"prefill", "decode"}


class Naming(Protocol):
    """What a walk asks of its namer (:class:`~fxtui.ops.namer.OpNamer`): nodes' ids, and where modules and
    parameters are."""

    described: set[int]

    def node_id(
        self, key: tuple[Any, ...], target: str, shape: str, record: OpCall | None = None, kernel: Any = None
    ) -> int: ...

    def shape_of(self, node_id: int) -> str: ...

    def call_shape(self, node_id: int, call: int) -> str: ...

    def note_call_shapes(self, calls: dict[int, list[str]]) -> None: ...

    def where(self, module: torch.nn.Module, caller: Where | None = None) -> Where: ...

    def is_loss(self, module: torch.nn.Module) -> bool: ...

    def param_owner(self, param: Any) -> Where: ...

    def param_owner_at(self, impl: int) -> Where: ...

    def kernel_where(self, kernel: Any, running: Where) -> Where: ...


@dataclasses.dataclass
class _Frame:
    """One module call in progress (or a pseudo-module's stretch): where it is, and the positions seen in it."""

    where: Where
    anchor: str = ""
    """The child whose call the next ops follow (its path's last part; ``""`` before any)."""
    counts: dict[tuple[str, str], int] = dataclasses.field(default_factory=dict)
    entered: int = 0
    kernels_at: int = 0
    compiled: bool = False

    def position(self, label: str) -> tuple[str, int]:
        """The next op of ``label``'s position in this call: (anchor, how many of ``label`` since the anchor)."""
        key = (self.anchor, label)
        n = self.counts.get(key, 0) + 1
        self.counts[key] = n
        return self.anchor, min(n, MAX_REPEATS)

    def follow(self, child: str) -> None:
        """A child's call ended: the ops after it are counted from there (a loop over children repeats them)."""
        self.anchor = child
        self.counts = {}


class StepWalk:
    """One walk over a step's records (state that lives for one :meth:`~fxtui.ops.namer.OpNamer.resolve`)."""

    def __init__(self, namer: Naming) -> None:
        self.namer = namer
        self.stack: list[_Frame] = []
        self.marks: list[int] = []  # sequence numbers where a stretch begins …
        self.owners: list[tuple[Where, str]] = []  # … and the frame (and its anchor) it belongs to
        self.phases: list[tuple[str, object, int]] = []  # (phase, owner, module depth when it began)
        self.outside: _Frame = _Frame((-1, SCRIPT))
        self.losses: dict[int, _Frame] = {}  # per root: the frame of its loss (counted afresh after each call)
        self.derived: dict[int, int] = {}  # tensor id → the root whose output it is, or was computed from
        self.stretch_counts: dict[tuple[int, int, str], int] = {}
        self.grad_nodes: dict[int, dict[int, int]] = {}  # per stretch: each autograd node's order in it
        self.out: list[OpTime] = []
        self.calls: dict[int, list[str]] = {}  # per node, the output shape of each of its calls so far in the step
        self.shaped = False  # whether an op of the step had its shape read (the dispatch mode's steps)
        self.call_counts: dict[int, int] = {}  # per node, its calls so far in a step whose shapes are not read
        self.kernel_ns = 0  # Σ of the step's compiled kernels so far
        self.call_from = 0  # … when the compiled call in progress began
        self.skipping = 0  # compiled modules on the stack
        self.loss_phase = "other"  # the phase of ops outside every module now: "forward" before a backward …
        self.after_forward = False  # … when only the script's code has run since a root's forward ended

    def run(self, records: Iterable[Record]) -> list[OpTime]:
        records = list(records)
        # A loss that a backward follows is part of the step's forward (a training step's); one computed after the
        # last backward, or in a step with none (an evaluation), is the script's phase, ``other``.
        last_grad = next(
            (i for i in range(len(records) - 1, -1, -1) if type(r := records[i]) is OpCall and r.grad_fn is not None),
            -1,
        )
        for at, record in enumerate(records):
            kind = type(record)
            if kind is OpCall:
                self.loss_phase = "forward" if self.after_forward and at < last_grad else "other"
                self.op(record)  # type: ignore[arg-type]
            elif kind is ModuleEnter:
                self.enter(record)  # type: ignore[arg-type]
            elif kind is ModuleExit:
                self.exit(record)  # type: ignore[arg-type]
            elif kind is PhaseEnter:
                self.after_forward = False
                self.phases.append((record.phase, record.owner, len(self.stack)))  # type: ignore[union-attr]
                self.outside = _Frame((-1, SCRIPT))
                # A tensor's id may be another's once it is freed: what came from a root is forgotten at a phase,
                # but for a closure (the model's forward) and a backward (its seed reads the loss, still alive).
                if record.phase not in ("closure", "backward"):  # type: ignore[union-attr]
                    self.derived.clear()
            elif kind is PhaseExit:
                self.after_forward = False
                if self.phases and self.phases.pop()[0] == "backward":
                    self.derived.clear()
                self.outside = _Frame((-1, SCRIPT))
            elif kind is KernelCall:
                self.kernel(record)  # type: ignore[arg-type]
            elif kind is CompiledCall:
                self.compiled_call(record)  # type: ignore[arg-type]
        if self.shaped:
            self.namer.note_call_shapes(self.calls)
        return self.out

    # -- module frames --------------------------------------------------------------------------

    def enter(self, record: ModuleEnter) -> None:
        caller = self.stack[-1].where if self.stack else None
        where = self.namer.where(record.module, caller)
        if caller is None and record.inputs and self.derived and self.namer.is_loss(record.module):
            root = next((self.derived[t] for t in record.inputs if t in self.derived), None)
            if root is not None:  # a loss module given a model's output (nn.BCELoss()(D(x), y)): that model's loss
                where = (root, LOSS)
        self.stack.append(_Frame(where, entered=record.t, kernels_at=self.kernel_ns, compiled=record.compiled))
        self.skipping += record.compiled
        self.marks.append(record.seq)
        self.owners.append((where, ""))

    def exit(self, record: ModuleExit) -> None:
        if not self.stack:
            return  # a call that began before recording did
        frame = self.stack.pop()
        inside = self.kernel_ns - frame.kernels_at
        if record.compiled:  # the compiled module's time outside its timed kernels
            self.skipping -= 1
            key = (self.compiled_phase(), frame.where, COMPILED, ("", 1))
            node_id = self.namer.node_id(key, "compiled", "")
            self.namer.described.add(node_id)
            self.out.append((node_id, max(record.t - frame.entered - inside, 0), "", frame.entered))
        if self.stack:
            parent = self.stack[-1]
            parent.follow(frame.where[1].rpartition(".")[2] or frame.where[1])
            self.marks.append(record.seq)
            self.owners.append((parent.where, parent.anchor))
        else:  # a root's forward ended: the ops that consume its output are its loss
            self.after_forward = True
            root = frame.where[0]
            if frame.where[1] != LOSS:
                self.losses[root] = _Frame((root, LOSS))
            for tensor in record.outputs:
                self.derived[tensor] = root
            self.marks.append(record.seq)
            self.owners.append(((root, LOSS), ""))

    # -- ops ------------------------------------------------------------------------------------

    def phase(self) -> tuple[str, object] | None:
        """The innermost phase that is not a module's own (a module called inside a phase is the module's)."""
        if not self.phases:
            return None
        phase, owner, depth = self.phases[-1]
        if len(self.stack) > depth and phase not in _GENERATE:
            return None  # a module called inside the phase: its ops are the module's
        return phase, owner

    def op(self, record: OpCall) -> None:
        func = record.op
        if func.namespace == "profiler":  # record_function's own ops (optimizers push ranges)
            return
        label = func.overloadpacket.__name__
        node = record.grad_fn
        current = self.phase()
        if func.namespace == "c10d":  # a collective (DDP's allreduce): waiting is not a module's arithmetic
            key: tuple[Any, ...] = ("comm", (-1, "collectives"), label, ("", 1))
        elif node is not None:  # run by autograd: a gradient, charged to the forward module it differentiates
            key = self.backward_key(node, GRADIENT + label)
        elif self.stack and (current is None or current[0] in _MODEL_PHASES or current[0] in _GENERATE):
            frame = self.stack[-1]
            phase = current[0] if current is not None and current[0] in _GENERATE else "forward"
            if frame.where[1] == LOSS:
                phase = self.loss_phase  # a loss module's, as a loss computed by functions is
            key = (phase, frame.where, label, frame.position(label))
        elif current is not None and current[0] == "backward":
            # autograd's own ops outside every node: the seed of a loss's gradient (``loss.backward()``'s
            # ``ones_like``) is that loss's; anything else, rare, is outside every module
            frame = self.outside_frame(record)
            if frame.where[1] != LOSS:
                frame = self.pseudo(OUTSIDE)
            key = ("backward", frame.where, GRADIENT + label, frame.position(GRADIENT + label))
        elif current is not None and current[0] not in _MODEL_PHASES:
            key = self.phase_key(current, label)
        else:
            frame = self.outside_frame(record)
            key = (self.loss_phase, frame.where, label, frame.position(label))
        shape = record.shape
        target = f"{func.namespace}.{label}"
        if shape is UNKNOWN_SHAPE:
            # The native timer reads no shapes: a node's k-th call in the step has the shape of its k-th call in the
            # step whose shapes were read first (a module reused at two shapes keeps both, as under the mode).
            node_id = self.namer.node_id(key, target, "", record)
            call = self.call_counts.get(node_id, 0)
            self.call_counts[node_id] = call + 1
            shape_text = self.namer.call_shape(node_id, call)
        else:
            shape_text = "×".join(map(str, shape)) if shape is not None else ""
            node_id = self.namer.node_id(key, target, shape_text, record)
            self.calls.setdefault(node_id, []).append(shape_text)
            self.shaped = True
        self.out.append((node_id, record.t1 - record.t0, shape_text, record.t0))

    def outside_frame(self, record: OpCall) -> _Frame:
        """An op outside every module: its root's loss if it reads what a root returned (or what was computed from
        it), else the script's own."""
        if record.flow is not None and self.derived:
            inputs, outputs = record.flow
            root = next((self.derived[t] for t in inputs if t in self.derived), None)
            if root is not None:
                for output in outputs:
                    self.derived[output] = root
                return self.losses.setdefault(root, _Frame((root, LOSS)))
            # made from nothing of a root's: what a root's output left at this tensor's id (or address) died
            for output in outputs:
                self.derived.pop(output, None)
        if self.outside.where != (-1, SCRIPT):
            self.outside = _Frame((-1, SCRIPT))
        return self.outside

    def phase_key(self, current: tuple[str, object], label: str) -> tuple[Any, ...]:
        phase, who = current
        if phase == "optimizer":
            name = who.name if isinstance(who, Named) else type(who).__name__
            frame = self.pseudo((-1, name))
            return "optimizer", frame.where, label, frame.position(label)
        frame = self.pseudo((-1, _PSEUDO.get(phase, SCRIPT)))
        return phase, frame.where, label, frame.position(label)

    def pseudo(self, where: Where) -> _Frame:
        """The frame of a pseudo-module for the phase in progress (counted from 1 at each phase)."""
        if self.outside.where != where:
            self.outside = _Frame(where)
        return self.outside

    def backward_key(self, node: Any, label: str) -> tuple[Any, ...]:
        """A gradient op's node: its forward module, the stretch of that module's call its autograd node was made in
        (the child it followed), which autograd node of that stretch it is, and which op of its label in it.

        One autograd node may run an op many times (a ``cat`` of N tensors: N slices): beyond
        :data:`MAX_NODE_REPEATS` they fold into one node, so a loop's length makes no new nodes."""
        if type(node).__name__ == "AccumulateGrad":
            impl = getattr(node, "impl", 0)  # the native timer's node: its parameter's TensorImpl address
            where = self.namer.param_owner_at(impl) if impl else self.namer.param_owner(getattr(node, "variable", None))
            anchor, stretch = "", -1
        else:
            i = bisect.bisect_right(self.marks, node._sequence_nr()) - 1
            (where, anchor), stretch = (self.owners[i], i) if i >= 0 else ((OUTSIDE, ""), -1)
        nodes = self.grad_nodes.setdefault(stretch, {})
        j = nodes.setdefault(id(node), len(nodes) + 1)
        n = self.stretch_counts.get((stretch, j, label), 0) + 1
        self.stretch_counts[(stretch, j, label)] = n
        return "backward", where, label, (anchor, min(j, MAX_REPEATS), min(n, MAX_NODE_REPEATS))

    # -- compiled code --------------------------------------------------------------------------

    def compiled_phase(self) -> str:
        """The phase of compiled forward code: a ``generate()`` call's prefill or decode step, else the forward."""
        phase = self.phases[-1][0] if self.phases else "forward"
        return phase if phase in _GENERATE else "forward"

    def kernel(self, record: KernelCall) -> None:
        running = self.stack[-1].where if self.stack else OUTSIDE
        node = record.grad_fn
        owner = self.backward_where(node) if node is not None else running
        where = self.namer.kernel_where(record.kernel, owner)
        phase, mark = ("backward", GRADIENT) if node is not None else (self.compiled_phase(), "")
        label = mark + record.kernel.label
        frame = self.stack[-1] if self.stack and node is None else self.pseudo(where)
        key = (phase, where, label, frame.position(label))
        node_id = self.namer.node_id(key, record.kernel.kernel, "", kernel=record.kernel)
        self.out.append((node_id, record.t1 - record.t0, "", record.t0))
        self.kernel_ns += record.t1 - record.t0

    def compiled_call(self, record: CompiledCall) -> None:
        node = record.grad_fn
        if node is not None or not self.skipping:
            # a compiled backward, or compiled code outside a compiled module (``model.compile()``, a compiled
            # function): its time outside its kernels (a compiled module's counts as it exits)
            running = self.stack[-1].where if self.stack else OUTSIDE
            owner = self.backward_where(node) if node is not None else running
            phase, mark = ("backward", GRADIENT) if node is not None else (self.compiled_phase(), "")
            key = (phase, owner, mark + COMPILED, ("", 1))
            node_id = self.namer.node_id(key, "compiled", "")
            self.namer.described.add(node_id)
            self.out.append((node_id, max(record.t1 - record.t0 - (self.kernel_ns - self.call_from), 0), "", record.t0))
        self.call_from = self.kernel_ns

    def backward_where(self, node: Any) -> Where:
        i = bisect.bisect_right(self.marks, node._sequence_nr()) - 1
        return self.owners[i][0] if i >= 0 else OUTSIDE
