"""How captured nodes read: their target (``Conv2d``, ``operator.add``, ``aten.convolution``) and,
for TorchDynamo and AOTAutograd graphs, a stable display name and module path per node."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

import torch
import torch.fx
from torch.fx.node import Node, _get_qualified_name

from fxtui.core.nodes import module_ancestors


def describe_target(gm: torch.fx.GraphModule, node: Node) -> tuple[str, str]:
    """Display form and short type name of a node's target.

    ``call_module`` → (``Conv2d``, ``Conv2d``); ``call_function`` →
    (``operator.add``, ``add``), an ATen operator (``aten.convolution``, ``convolution``);
    ``call_method`` → (``Tensor.view``, ``view``).
    """
    if node.op == "call_module":
        name = type(gm.get_submodule(str(node.target))).__name__
        return name, name
    if node.op == "call_function":
        if isinstance(node.target, torch._ops.OpOverload):  # AOTAutograd graphs hold ATen overloads
            packet = node.target.overloadpacket.__name__
            return f"{node.target.namespace}.{packet}", packet
        try:
            qualified = _get_qualified_name(node.target)  # type: ignore[arg-type]
        except Exception:  # builtins and odd callables have no qualified name
            qualified = getattr(node.target, "__name__", repr(node.target))
        qualified = qualified.replace("_operator.", "operator.")
        return qualified, qualified.rpartition(".")[2]
    if node.op == "call_method":
        return f"Tensor.{node.target}", str(node.target)
    if node.op == "get_attr":
        return str(node.target), "get_attr"
    if node.op == "placeholder":
        return str(node.target), "input"
    return "output", "output"


_PARAM = re.compile(r"_(?:parameters|buffers)_(?P<attr>.+?)_?$")
_INPUT = re.compile(r"^[lLgG]_(?:kwargs_|args_)?(?P<name>.+?)_?$")

#: Names a placeholder from outside the graph: ``(module path, label)``, or None to name it as usual.
PlaceholderNames = Callable[[Node], "tuple[str, str] | None"]


class Namer:
    """Stable display names and module paths for the nodes of every graph of one captured model.

    A node is named after its module and operation (``encoder.layer.0.attention.self.query ·
    linear``); a second one of the same name gets ``#2``. The module comes from the innermost
    entry of the node's module stack (``nn_module_stack``; for AOTAutograd's backward graph,
    ``fwd_nn_module_stack``: the forward module a gradient belongs to). ``prefix`` is the
    attribute under which the profiled model sits when a wrapper was compiled instead of it.
    """

    def __init__(self, root: torch.nn.Module, prefix: str = "") -> None:
        self.root = root
        self.prefix = prefix
        self.known = {n for n, _ in root.named_modules()}
        # Module stacks are keyed by the module object's id: that names the module even where the
        # source text is relative to another frame's ``self`` (a submodule's forward compiled on
        # its own after a graph break in its caller).
        self.by_id = {str(id(m)): n for n, m in root.named_modules()}
        self.paths: dict[str, str] = {}
        self.classes: dict[str, str] = {"": type(root).__name__}
        self._used: dict[str, int] = {}

    def name_graph(
        self,
        gm: torch.fx.GraphModule,
        *,
        stack: str = "nn_module_stack",
        mark: str = "",
        placeholders: PlaceholderNames | None = None,
        outside: str = "",
    ) -> list[str]:
        """One unique display name per node of ``gm``; ``mark`` prefixes operation labels (``∇`` for gradients).

        ``outside`` is the module charged with nodes that have no module stack at all (``""``: the root):
        a function outside every module's forward that TorchDynamo compiled as a frame of its own
        belongs to the module whose forward called it (:meth:`caller`).
        """
        names = []
        for node in gm.graph.nodes:
            given = placeholders(node) if placeholders is not None and node.op == "placeholder" else None
            if given is not None:
                (path, label), cls = given, ""
            elif outside and not node.meta.get(stack):
                path, cls = outside, ""
                label = self.label(gm, node)
                if node.op not in ("placeholder", "output"):
                    label = mark + label
            else:
                path, cls = self.module_of(node, stack)
                label = self.label(gm, node)
                if node.op not in ("placeholder", "output"):
                    label = mark + label
            names.append(self._unique(f"{path} · {label}" if path else label))
            self.paths[names[-1]] = path
            self._add_class(path, cls)
        return names

    def caller(self) -> str:
        """The module whose forward is running now: the innermost frame on the stack whose ``self`` is one
        of the root's modules (``""`` for the root, or when none is).

        TorchDynamo compiles a frame before it runs, so while a backend receives the graph of a function
        outside every module (``BoxCoder.decode`` after a graph break in the RPN's forward) the frames on
        the stack are its callers'.
        """
        frame = sys._getframe(1)
        by_id = self.by_id
        while frame is not None:
            owner = frame.f_locals.get("self") if "self" in frame.f_code.co_varnames else None
            if owner is not None and (path := by_id.get(str(id(owner)))) is not None:
                return path
            frame = frame.f_back  # type: ignore[assignment]
        return ""

    def module_of(self, node: Node, stack: str = "nn_module_stack") -> tuple[str, str]:
        """The module path a node runs in and the module's class name; ``("", "")`` for the root."""
        entries = node.meta.get(stack) or {}
        if not entries:
            return "", ""
        key, (source, cls) = next(reversed(entries.items()))
        found = self.by_id.get(str(key).partition("@")[0])  # "id@2": the module's third call in the graph
        if found is not None:
            return found, getattr(cls, "__name__", str(cls))
        path = module_path(str(source))
        if self.prefix:
            if path != self.prefix and not path.startswith(self.prefix + "."):
                return "", ""  # the wrapper's own code (the loss): the root
            path = path[len(self.prefix) + 1 :]
        if path not in self.known:
            return "", ""
        return path, getattr(cls, "__name__", str(cls))

    def _unique(self, base: str) -> str:
        count = self._used.get(base, 0) + 1
        self._used[base] = count
        return base if count == 1 else f"{base} #{count}"

    def _add_class(self, path: str, cls: str) -> None:
        if path not in self.classes:
            self.classes[path] = cls or _class_of(self.root, path)
        for ancestor in module_ancestors(path):
            self.classes.setdefault(ancestor, _class_of(self.root, ancestor))

    @staticmethod
    def label(gm: torch.fx.GraphModule, node: Node) -> str:
        """A node's short label: its operation, or a parameter's or input's own name."""
        if node.op == "placeholder":
            found = _PARAM.search(node.name)
            if found:
                return found.group("attr")
            found = _INPUT.match(node.name)
            return found.group("name") if found else str(node.target)
        if node.op == "get_attr":
            return str(node.target).rpartition(".")[2]
        if node.op == "output":
            return "output"
        return describe_target(gm, node)[1]


def module_path(source: str) -> str:
    """TorchDynamo's source of a module as a plain path: ``L['self'].layer[0].conv1`` → ``layer.0.conv1``."""
    path = re.sub(r"\._modules\[['\"]([^'\"]+)['\"]\]", r".\1", source)
    # A module's own forward sees itself as ``self``; a module compiled through its ``__call__`` as ``fn``.
    path = re.sub(r"^L\[['\"](?:self|fn)['\"]\]\.?", "", path)
    path = re.sub(r"\[['\"]?([^'\"\]]+)['\"]?\]", r".\1", path)
    return path.strip(".")


def _class_of(root: torch.nn.Module, path: str) -> str:
    try:
        return type(root.get_submodule(path)).__name__
    except AttributeError:
        return ""
