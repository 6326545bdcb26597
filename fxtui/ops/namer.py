"""Names what the eager capture recorded: one step's records become ``(node id, time)`` pairs, each node named once.

``resolve`` walks a step's records (:mod:`fxtui.ops.recorder`) in order: module
entries and exits keep the forward's module stack and the autograd sequence-number marks
that charge a backward op to its forward module; phase marks put ops in the optimizer,
data loading or generation; and the kernels of compiled code
(:mod:`fxtui.ops.kernels`) are charged to the modules their source nodes
ran in. Node ids, module paths and roots stay the same for the whole program.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterable
from typing import Any

import torch

from fxtui.core.compilation import common_ancestor
from fxtui.core.op_nodes import EagerNode, RootModule
from fxtui.ops.recorder import (
    CALL,
    ENTER,
    EXIT,
    GRADIENT,
    KERNEL,
    PHASE_ENTER,
    PHASE_EXIT,
    SKIP_ENTER,
    SKIP_EXIT,
)

#: The node of a compiled module's (or compiled backward's) time outside its timed kernels.
COMPILED = "<compiled>"


class OpNamer:
    """Turns one step's records into (node id, ns, shape) triples; names a node once, the first time it is seen.

    Kept for the whole program: node ids, module paths and the roots are stable across steps.
    """

    def __init__(self) -> None:
        self.roots: list[torch.nn.Module] = []
        self._by_class: dict[type, int] = {}
        self._path: dict[int, tuple[int, str]] = {}
        self._param: dict[int, tuple[int, str]] = {}
        self._ids: dict[tuple[Any, ...], int] = {}
        self.new_nodes: list[EagerNode] = []
        """Nodes first seen since the last :meth:`take_new`."""
        self.new_roots: list[RootModule] = []
        self.described: set[int] = set()

    def add_root(self, module: torch.nn.Module) -> int:
        """Know ``module`` as an outermost module (a wrapper's inner module names the paths); its index.

        A module without parameters or buffers (a loss, an activation) is known by its class: a program that makes
        a fresh ``nn.CrossEntropyLoss()`` every step has one such root, not one per step. Its modules are found
        by its class, never by their ids (a freed module's id goes to the next object made).
        """
        for i, root in enumerate(self.roots):
            if root is module:
                return i
        stateless = is_stateless(module)
        if stateless and type(module) in self._by_class:
            return self._by_class[type(module)]  # another of a class known by its class (a loss made every step)
        index = len(self.roots)
        self.roots.append(module)
        inner = _unwrapped(module)
        classes: dict[str, str] = {}
        for name, sub in inner.named_modules():
            classes.setdefault(name, type(sub).__name__)
            if stateless:
                continue
            self._path.setdefault(id(sub), (index, name))
            for param in sub.parameters(recurse=False):
                self._param.setdefault(id(param), (index, name))
        if stateless:
            self._by_class[type(module)] = index
        elif inner is not module:
            self._path[id(module)] = (index, "")
        loss = isinstance(module, torch.nn.modules.loss._Loss)
        self.new_roots.append(RootModule(index, type(inner).__name__, classes, loss))
        return index

    def by_class(self, module: torch.nn.Module) -> bool:
        """``module`` is known by its class: one without parameters or buffers, of a root's class (see
        :meth:`add_root`)."""
        return type(module) in self._by_class and is_stateless(module)

    @property
    def known(self) -> int:
        """Nodes named so far."""
        return len(self._ids)

    @property
    def undescribed(self) -> bool:
        """Some node has not had its inputs and source line noted yet."""
        return len(self.described) < len(self._ids)

    def take_new(self) -> tuple[list[EagerNode], list[RootModule]]:
        """Nodes and roots first seen since the last call."""
        nodes, roots = self.new_nodes, self.new_roots
        self.new_nodes, self.new_roots = [], []
        return nodes, roots

    def where(self, module: torch.nn.Module, caller: tuple[int, str] | None = None) -> tuple[int, str]:
        """(root index, path inside it) of a module.

        A module that belongs to no known root but runs inside ``caller``'s forward was made there (transformers'
        models make their loss function in ``forward``, a new one every call): it is a child of the caller named by
        its class, the same path every call, and is not remembered (its ``id`` goes to another object once it is
        freed). Called outside every module, an unknown module becomes a root of its own (or, without parameters
        or buffers, the root of its class: :meth:`add_root`).
        """
        found = self._path.get(id(module))
        if found is not None:
            return found
        if caller is not None:
            root, path = caller
            name = type(module).__name__
            return root, f"{path}.{name}" if path else name
        index = self.add_root(module)
        return self._path.get(id(module), (index, ""))

    def resolve(self, records: Iterable[tuple[Any, ...]]) -> list[tuple[int, int, str, int]]:
        """One step's records as ``(node id, ns, output shape, clock at its start)``, in the order the ops ran."""
        stack: list[tuple[int, str]] = []
        entered: list[int] = []
        marks: list[int] = []  # sequence numbers where a module's stretch begins …
        owners: list[tuple[int, str]] = []  # … and the module it belongs to
        phases: list[tuple[str, object]] = []
        counts: dict[tuple[Any, ...], int] = {}
        out: list[tuple[int, int, str, int]] = []
        outside = (-1, "")
        kernel_ns = 0  # Σ of the step's compiled kernels so far, …
        kernels_at: list[int] = []  # … when each module on the stack was entered
        call_from = 0  # … when the compiled call in progress began
        skipping = 0  # compiled modules on the stack
        for record in records:
            kind = record[0]
            if type(kind) is int:
                if kind in (ENTER, SKIP_ENTER):
                    stack.append(self.where(record[1], stack[-1] if stack else None))
                    entered.append(record[2])
                    kernels_at.append(kernel_ns)
                    skipping += kind == SKIP_ENTER
                    marks.append(record[3])
                    owners.append(stack[-1])
                elif kind in (EXIT, SKIP_EXIT):
                    if not stack:
                        continue
                    where = stack.pop()
                    start = entered.pop()
                    inside = kernel_ns - kernels_at.pop()
                    if kind == SKIP_EXIT:  # the compiled module's time outside its timed kernels
                        skipping -= 1
                        key = (_compiled_phase(phases), where, COMPILED)
                        node_id = self._id(key, counts, "compiled", "")
                        self.described.add(node_id)
                        out.append((node_id, max(record[2] - start - inside, 0), "", start))
                    marks.append(record[3])
                    owners.append(stack[-1] if stack else outside)
                elif kind == PHASE_ENTER:
                    phases.append((record[1], record[3]))
                elif kind == PHASE_EXIT and phases:
                    phases.pop()
                elif kind == KERNEL:
                    info, t0, t1, node = record[1:5]
                    running = stack[-1] if stack else outside
                    owner = self._owner(node, marks, owners) if node is not None else running
                    where = self._kernel_where(info, owner)
                    phase, mark = ("backward", GRADIENT) if node is not None else (_compiled_phase(phases), "")
                    node_id = self._id((phase, where, mark + info.label), counts, info.kernel, "", kernel=info)
                    out.append((node_id, t1 - t0, "", t0))
                    kernel_ns += t1 - t0
                elif kind == CALL:
                    t0, t1, node = record[1:4]
                    if node is not None or not skipping:
                        # a compiled backward, or compiled code outside a compiled module (``model.compile()``, a
                        # compiled function): its time outside its kernels (a compiled module's counts as it exits)
                        running = stack[-1] if stack else outside
                        owner = self._owner(node, marks, owners) if node is not None else running
                        phase, mark = ("backward", GRADIENT) if node is not None else (_compiled_phase(phases), "")
                        node_id = self._id((phase, owner, mark + COMPILED), counts, "compiled", "")
                        self.described.add(node_id)
                        out.append((node_id, max(t1 - t0 - (kernel_ns - call_from), 0), "", t0))
                    call_from = kernel_ns
                continue
            func, t0, t1, node, shape = record[:5]
            if func.namespace == "profiler":  # record_function's own ops (optimizers push ranges)
                continue
            label = func.overloadpacket.__name__
            if func.namespace == "c10d":  # a collective (DDP's allreduce): waiting is not a module's arithmetic
                key = ("comm", (-1, "collectives"), label)
            elif node is not None:  # run by autograd: a gradient, charged to the forward module it differentiates
                if type(node).__name__ == "AccumulateGrad":
                    owner = self._param.get(id(getattr(node, "variable", None)), outside)
                else:
                    owner = self._owner(node, marks, owners)
                key = ("backward", owner, GRADIENT + label)
            elif phases:
                phase, who = phases[-1]
                if phase == "optimizer":
                    owner_name = getattr(who, "name", None) if type(who).__name__ == "Named" else None
                    key = ("optimizer", (-1, owner_name or type(who).__name__), label)
                elif phase == "backward":
                    key = ("backward", outside, GRADIENT + label)
                elif stack:
                    key = (phase, stack[-1], label)
                else:  # a DataLoader's own work (collating, a dataset's __getitem__), generate()'s loop (choosing
                    # the token, the stopping check): a pseudo-module of its own
                    key = (phase, (-1, _PSEUDO[phase]) if phase in _PSEUDO else outside, label)
            elif stack:
                key = ("forward", stack[-1], label)
            else:
                key = ("other", outside, label)
            shape_text = "×".join(map(str, shape)) if shape is not None else ""
            node_id = self._id(key, counts, f"{func.namespace}.{func.overloadpacket.__name__}", shape_text, record)
            out.append((node_id, t1 - t0, shape_text, t0))
        return out

    @staticmethod
    def _owner(node: Any, marks: list[int], owners: list[tuple[int, str]]) -> tuple[int, str]:
        """The forward module whose stretch made autograd node ``node`` (see the eager capture's docstring)."""
        i = bisect.bisect_right(marks, node._sequence_nr()) - 1
        return owners[i] if i >= 0 else (-1, "")

    def _kernel_where(self, kernel: Any, running: tuple[int, str]) -> tuple[int, str]:
        """A compiled kernel's module: the common ancestor of its source operations' modules, in one root
        (``running``, the module the compiled code runs in, when none is known)."""
        found = [self._path[m] for m in kernel.modules if m in self._path]
        if not found or any(root != found[0][0] for root, _ in found):
            return running
        return found[0][0], common_ancestor([path for _, path in found])

    def _id(
        self,
        key: tuple[Any, ...],
        counts: dict[tuple[Any, ...], int],
        target: str,
        shape: str,
        record: tuple[Any, ...] = (),
        kernel: Any = None,
    ) -> int:
        n = counts.get(key, 0) + 1
        counts[key] = n
        full = (*key, n)
        node_id = self._ids.get(full)
        if node_id is None:
            node_id = self._ids[full] = len(self._ids)
            phase, (root, path), label = key
            if kernel is not None:
                self.described.add(node_id)
                made = EagerNode(node_id, root, path, phase, label, n, target)
                self.new_nodes.append(self._kernel_node(made, kernel))
            else:
                self.new_nodes.append(EagerNode(node_id, root, path, phase, label, n, target, shape))
        if len(record) > 5 and node_id not in self.described:
            self.described.add(node_id)
            phase, (root, path), label = key
            self.new_nodes.append(
                EagerNode(node_id, root, path, phase, label, n, target, shape, inputs=record[5], source=record[6])
            )
        return node_id

    def _kernel_node(self, node: EagerNode, kernel: Any) -> EagerNode:
        """A kernel's node with the source operations it fuses and their modules (paths in the node's root)."""
        places = [self._path.get(m, (-1, "")) for m in kernel.modules]
        paths = [path if root == node.root else "" for root, path in places]
        fused = tuple(f"{p} · {label}" if p else label for p, label in zip(paths, kernel.sources, strict=True))
        return dataclasses.replace(node, kernel=kernel.kernel, fused_nodes=fused, fused_modules=tuple(paths))


def _compiled_phase(phases: list[tuple[str, object]]) -> str:
    """The phase of compiled forward code: a ``generate()`` call's prefill or decode step, else the forward."""
    phase = phases[-1][0] if phases else "forward"
    return phase if phase in ("prefill", "decode") else "forward"


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


#: The pseudo-module holding a phase's ops that run outside every module.
_PSEUDO = {"data": "DataLoader", "prefill": "generate", "decode": "generate"}

_WRAPPERS = frozenset({"DistributedDataParallel", "DataParallel", "OptimizedModule"})
