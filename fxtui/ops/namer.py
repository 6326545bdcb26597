"""Names what the per-op timer recorded: a step's records become ``(node id, ns, shape, start)``, nodes named once.

``resolve`` walks a step's records (:mod:`fxtui.ops.records`) in order, by the rules of :mod:`fxtui.ops.step_walk`
(which node an op is: its position in its module's call, a backward op's forward module, phases, the loss and the
script, compiled code). The namer keeps what lasts the whole program: node ids and names, module paths, the roots.

Names follow the TorchDynamo capture's rule — ``layer1.0.conv1 · convolution``,
``layer1.0.conv1 · ∇convolution_backward``, another position of the same label in the same
module ``#2`` — so the same script gives the same names in every run and ``fxtui diff`` matches
them. Node ids, module paths and the roots stay the same for the whole program. Modules are
known by weak reference: the namer keeps no module of the program's alive.
"""

from __future__ import annotations

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
from fxtui.ops.records import OpCall, Record
from fxtui.ops.step_walk import OUTSIDE, StepWalk, Where

#: Calls of a node whose shapes are kept for the native timer's steps (past them, the last one's).
CALL_SHAPES = 4096


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
        self._call_shapes: dict[int, list[str]] = {}
        """Per node, the output shape of each of its calls in the first step whose shapes were read (the dispatch
        mode's): what the native timer, which reads none, gives its calls in order."""
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
                with torch._C.DisableTorchFunction():  # a torch function the program's own mode would count
                    impl = param._cdata
                self._param_at.setdefault(impl, (weakref.ref(param), (index, name)))
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
        if found is None or param is None:
            return OUTSIDE
        with torch._C.DisableTorchFunction():  # a torch function the program's own mode would count
            return found[1] if param._cdata == impl else OUTSIDE

    def shape_of(self, node_id: int) -> str:
        """The output shape a node was first seen with."""
        return self._shape_of.get(node_id, "")

    def call_shape(self, node_id: int, call: int) -> str:
        """The output shape of a node's ``call``-th call in a step (from 0), as the first step whose shapes were read
        saw it (its last call's past those; the node's first shape when no such step saw it)."""
        shapes = self._call_shapes.get(node_id)
        if not shapes:
            return self._shape_of.get(node_id, "")
        return shapes[min(call, len(shapes) - 1)]

    def note_call_shapes(self, calls: dict[int, list[str]]) -> None:
        """A step whose shapes were read: each node's calls' shapes, in order, kept for the nodes that have none and
        ran at more than one (one shape is the node's own: :meth:`shape_of`). At most :data:`CALL_SHAPES` calls a
        node, each distinct text kept once (an unrolled cell's node is called thousands of times a step)."""
        for node_id, shapes in calls.items():
            if node_id in self._call_shapes or len(shapes) < 2:
                continue
            distinct = {shape: shape for shape in shapes[:CALL_SHAPES]}
            if len(distinct) > 1:
                self._call_shapes[node_id] = [distinct[shape] for shape in shapes[:CALL_SHAPES]]

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
        return StepWalk(self).run(records)

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
