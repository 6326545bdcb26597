"""Names what the per-op timer recorded: a step's records become ``(node id, ns, shape, start)``, nodes named once.

``resolve`` walks a step's records (:mod:`fxtui.ops.records`) in order.

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

Names follow the TorchDynamo capture's rule — ``layer1.0.conv1 · convolution``,
``layer1.0.conv1 · ∇convolution_backward``, another position of the same label in the same
module ``#2`` — so the same script gives the same names in every run and ``fxtui diff`` matches
them. Node ids, module paths and the roots stay the same for the whole program. Modules are
known by weak reference: the namer keeps no module of the program's alive.
"""

from __future__ import annotations

import bisect
import dataclasses
import weakref
from collections.abc import Iterable
from typing import Any

import torch

from fxtui.core.compilation import common_ancestor
from fxtui.core.op_nodes import EagerNode, OpTime, RootModule
from fxtui.core.op_sums import OpArrays
from fxtui.ops import native_steps
from fxtui.ops.native_steps import NativeStep
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


class OpNamer:
    """Turns one step's records into (node id, ns, shape, start); names a node once, the first time it is seen.

    Kept for the whole program: node ids, module paths and the roots are stable across steps.
    """

    def __init__(self) -> None:
        self._roots: list[weakref.ref[torch.nn.Module]] = []
        self._shapes: list[tuple[str, dict[str, str]]] = []
        """Each root's class and the class of every module below it (by path)."""
        self._by_class: dict[type, int] = {}
        self._path: dict[int, tuple[weakref.ref[Any], Where]] = {}
        self._param: dict[int, tuple[weakref.ref[Any], Where]] = {}
        self._param_at: dict[int, tuple[weakref.ref[Any], Where]] = {}
        """The same, by the parameter's TensorImpl address (``param._cdata``: the native timer's rows)."""
        self._shape_of: dict[int, str] = {}
        self._ids: dict[tuple[Any, ...], int] = {}
        self._ordinals: dict[tuple[Any, ...], int] = {}
        """(phase, where, label) → positions numbered so far (the ``#n`` of a node's name)."""
        self._ordinal_of: dict[int, int] = {}
        self.new_nodes: list[EagerNode] = []
        """Nodes first seen since the last :meth:`take_new`."""
        self.new_roots: list[RootModule] = []
        self.described: set[int] = set()

    # -- roots and modules ----------------------------------------------------------------------

    def add_root(self, module: torch.nn.Module) -> int:
        """Know ``module`` as an outermost module (a wrapper's inner module names the paths); its index.

        A module without parameters or buffers (a loss, an activation) is known by its class: a program that makes
        a fresh ``nn.CrossEntropyLoss()`` every step has one such root, not one per step.
        """
        for i, ref in enumerate(self._roots):
            if ref() is module:
                return i
        stateless = is_stateless(module)
        if stateless and type(module) in self._by_class:
            return self._by_class[type(module)]  # another of a class known by its class (a loss made every step)
        inner = _unwrapped(module)
        classes: dict[str, str] = {}
        for name, sub in inner.named_modules():
            classes.setdefault(name, type(sub).__name__)
        index = self._reloaded(type(inner).__name__, classes)
        new = index is None
        if index is None:
            index = len(self._roots)
            self._roots.append(weakref.ref(module))
            self._shapes.append((type(inner).__name__, classes))
        else:
            self._roots[index] = weakref.ref(module)
        for name, sub in inner.named_modules():
            if stateless:
                continue
            self._path.setdefault(id(sub), (weakref.ref(sub), (index, name)))
            for param in sub.parameters(recurse=False):
                self._param.setdefault(id(param), (weakref.ref(param), (index, name)))
                self._param_at.setdefault(param._cdata, (weakref.ref(param), (index, name)))
        if stateless:
            self._by_class[type(module)] = index
        elif inner is not module:
            self._path[id(module)] = (weakref.ref(module), (index, ""))
        if new:
            loss = isinstance(module, torch.nn.modules.loss._Loss)
            self.new_roots.append(RootModule(index, type(inner).__name__, classes, loss))
        return index

    def _reloaded(self, class_name: str, classes: dict[str, str]) -> int | None:
        """A root the program let go of, of the same class and structure: the same model saved and loaded again
        (``model = torch.load(f)``), or made anew; it keeps the root's index, paths and nodes."""
        for index, ref in enumerate(self._roots):
            if ref() is None and self._shapes[index] == (class_name, classes):
                return index
        return None

    def known_module(self, module: torch.nn.Module) -> Where | None:
        """(root, path) of a module of a known root (a module of a root's class known by its class too); None."""
        found = self._path.get(id(module))
        if found is not None and found[0]() is module:
            return found[1]
        if type(module) in self._by_class and is_stateless(module):
            return self._by_class[type(module)], ""
        return None

    def is_loss(self, module: torch.nn.Module) -> bool:
        """``module`` computes a loss: a loss class of torch's, or a module of a class known by its class."""
        return isinstance(module, torch.nn.modules.loss._Loss) or self.by_class(module)

    def by_class(self, module: torch.nn.Module) -> bool:
        """``module`` is known by its class: one without parameters or buffers, of a root's class."""
        return type(module) in self._by_class and is_stateless(module)

    @property
    def roots(self) -> list[torch.nn.Module]:
        """The outermost modules known, in the order they were found (those the program still holds)."""
        return [m for ref in self._roots if (m := ref()) is not None]

    @property
    def known(self) -> int:
        """Nodes named so far."""
        return len(self._ids)

    @property
    def undescribed(self) -> bool:
        """Some node has not had its inputs and source line noted yet."""
        return len(self.described) < len(self._ids)

    def all_described(self, node_ids: Iterable[int]) -> bool:
        """Every one of these nodes has had its inputs and source line noted."""
        described = self.described
        return all(node in described for node in node_ids)

    def take_new(self) -> tuple[list[EagerNode], list[RootModule]]:
        """Nodes and roots first seen since the last call."""
        nodes, roots = self.new_nodes, self.new_roots
        self.new_nodes, self.new_roots = [], []
        return nodes, roots

    def where(self, module: torch.nn.Module, caller: Where | None = None) -> Where:
        """(root index, path inside it) of a module.

        A module that belongs to no known root but runs inside ``caller``'s forward was made there (transformers'
        models make their loss function in ``forward``, a new one every call): it is a child of the caller named by
        its class, the same path every call, and is not remembered. Called outside every module, an unknown module
        becomes a root of its own (or, without parameters or buffers, the root of its class: :meth:`add_root`).
        """
        found = self.known_module(module)
        if found is not None:
            return found
        if caller is not None and caller[0] >= 0:
            root, path = caller
            name = type(module).__name__
            return root, f"{path}.{name}" if path else name
        index = self.add_root(module)
        found = self.known_module(module)
        return found if found is not None else (index, "")

    def param_owner(self, param: Any) -> Where:
        found = self._param.get(id(param))
        return found[1] if found is not None and found[0]() is param else OUTSIDE

    def param_owner_at(self, impl: int) -> Where:
        """The module owning the parameter whose TensorImpl is at ``impl`` (while it lives)."""
        found = self._param_at.get(impl)
        param = found[0]() if found is not None else None
        return found[1] if found is not None and param is not None and param._cdata == impl else OUTSIDE

    def shape_of(self, node_id: int) -> str:
        """The output shape a node was first seen with."""
        return self._shape_of.get(node_id, "")

    # -- a step ----------------------------------------------------------------------------------

    def resolve(self, records: Iterable[Record]) -> list[OpTime]:
        """One step's records as ``(node id, ns, output shape, clock at its start)``, in the order the ops ran.

        A native step kept unmerged (one :class:`~fxtui.ops.native_steps.NativeStep`) is resolved from its arrays
        when it ran as the last one did (:mod:`fxtui.ops.native_steps`); several, merged first."""
        records = list(records)
        if NativeStep in map(type, records):
            if len(records) == 1:
                return native_steps.resolve(self, records[0], self._walk)  # type: ignore[arg-type]
            records = native_steps.expand(records)
        return self._walk(records)

    def resolve_arrays(self, records: Iterable[Record]) -> list[OpTime] | OpArrays:
        """:meth:`resolve`, but a native step of a shape resolved before as arrays (no tuple per op, for
        :func:`~fxtui.core.op_sums.sums_of`)."""
        records = list(records)
        if len(records) == 1 and type(records[0]) is NativeStep:
            return native_steps.resolve_arrays(self, records[0], self._walk)
        return self.resolve(records)

    def _walk(self, records: list[Record]) -> list[OpTime]:
        return _Resolution(self).run(records)

    def node_id(
        self, key: tuple[Any, ...], target: str, shape: str, record: OpCall | None = None, kernel: Any = None
    ) -> int:
        """The id of the node at ``key`` = (phase, where, label, position), named the first time it is seen."""
        node_id = self._ids.get(key)
        if node_id is None:
            phase, (root, path), label, _position = key
            family = (phase, root, path, label)
            n = self._ordinals[family] = self._ordinals.get(family, 0) + 1
            node_id = self._ids[key] = len(self._ids)
            self._ordinal_of[node_id] = n
            self._shape_of[node_id] = shape
            made = EagerNode(node_id, root, path, phase, label, n, target, shape)
            if kernel is not None:
                self.described.add(node_id)
                made = self._kernel_node(made, kernel)
            self.new_nodes.append(made)
        if record is not None and record.source is not None and node_id not in self.described:
            self.described.add(node_id)
            phase, (root, path), label, _position = key
            n = self._ordinal_of[node_id]
            self.new_nodes.append(
                EagerNode(
                    node_id,
                    root,
                    path,
                    phase,
                    label,
                    n,
                    target,
                    shape,
                    inputs=record.inputs or (),
                    source=record.source,
                )
            )
        return node_id

    def _kernel_node(self, node: EagerNode, kernel: Any) -> EagerNode:
        """A kernel's node with the source operations it fuses and their modules (paths in the node's root)."""
        places = [self._module_where(m) for m in kernel.modules]
        paths = [path if root == node.root else "" for root, path in places]
        fused = tuple(f"{p} · {label}" if p else label for p, label in zip(paths, kernel.sources, strict=True))
        return dataclasses.replace(node, kernel=kernel.kernel, fused_nodes=fused, fused_modules=tuple(paths))

    def _module_where(self, module_id: int) -> Where:
        """(root, path) of the module whose id a compiled kernel noted (while it lives)."""
        found = self._path.get(module_id)
        return found[1] if found is not None and found[0]() is not None else OUTSIDE

    def kernel_where(self, kernel: Any, running: Where) -> Where:
        """A compiled kernel's module: the common ancestor of its source operations' modules, in one root
        (``running``, the module the compiled code runs in, when none is known)."""
        found = [w for m in kernel.modules if (w := self._module_where(m)) != OUTSIDE]
        if not found or any(root != found[0][0] for root, _ in found):
            return running
        return found[0][0], common_ancestor([path for _, path in found])


class _Resolution:
    """One walk over a step's records (state that lives for one :meth:`OpNamer.resolve`)."""

    def __init__(self, namer: OpNamer) -> None:
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
        if shape is UNKNOWN_SHAPE:  # the native timer reads no shapes: the node's own, as first seen
            node_id = self.namer.node_id(key, target, "", record)
            shape_text = self.namer.shape_of(node_id)
        else:
            shape_text = "×".join(map(str, shape)) if shape is not None else ""
            node_id = self.namer.node_id(key, target, shape_text, record)
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


def is_stateless(module: torch.nn.Module) -> bool:
    """A module with no parameters and no buffers (a loss function, an activation): one is as good as another."""
    return next(iter(module.parameters()), None) is None and next(iter(module.buffers()), None) is None


def _unwrapped(module: torch.nn.Module) -> torch.nn.Module:
    """The user's own module inside a wrapper that adds no layers of its own (DDP, DataParallel, torch.compile)."""
    inner = module
    for _ in range(4):
        nxt = getattr(inner, "module", None) or getattr(inner, "_orig_mod", None)
        if not isinstance(nxt, torch.nn.Module) or type(inner).__name__ not in _WRAPPERS:
            break
        inner = nxt
    return inner


_WRAPPERS = frozenset({"DistributedDataParallel", "DataParallel", "OptimizedModule"})
