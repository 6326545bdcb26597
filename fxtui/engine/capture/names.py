"""How a node's target reads: ``Conv2d``, ``operator.add`` / ``add``, ``Tensor.view`` / ``view``."""

from __future__ import annotations

import torch
import torch.fx
from torch.fx.node import Node, _get_qualified_name


def describe_target(gm: torch.fx.GraphModule, node: Node) -> tuple[str, str]:
    """Display form and short type name of a node's target.

    ``call_module`` → (``Conv2d``, ``Conv2d``); ``call_function`` →
    (``operator.add``, ``add``); ``call_method`` → (``Tensor.view``, ``view``).
    """
    if node.op == "call_module":
        name = type(gm.get_submodule(str(node.target))).__name__
        return name, name
    if node.op == "call_function":
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
