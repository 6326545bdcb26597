"""Functions outside every module's forward belong to the module that called them, not the root.

TorchDynamo compiles what a graph break leaves behind as frames of their own (the rest of a
module's forward, functions it calls such as torchvision's ``BoxCoder.decode`` or ``box_area``),
and their nodes carry no module stack. The module whose forward was running charges them.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fxtui.measure.capture import capture
from fxtui.measure.inputs import Inputs

pytestmark = pytest.mark.unit


def decode(x: torch.Tensor) -> torch.Tensor:
    """Outside every module, like BoxCoder.decode."""
    return (x.exp() * 2).clamp(max=10) + 1


class Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        if y.sum().item() > -1e9:  # a graph break: the rest of this forward is a frame of its own
            y = y * 2
        return decode(torch.sigmoid(y))


class Detector(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.head = Head()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.head(x.relu())
        if z.sum().item() > -1e9:
            z = z - 1
        return decode(z)  # called by the root's own forward: the root's


def test_a_function_a_module_calls_after_a_graph_break_is_charged_to_that_module() -> None:
    captured = capture(Detector(), Inputs((torch.randn(4, 32),)), mode="dynamo", name="m")
    paths = captured.module_paths
    by_path: dict[str, list[str]] = {}
    for name, path in paths.items():
        by_path.setdefault(path, []).append(name)
    head = [n for n in by_path.get("head", []) if "·" in n]
    # the rest of Head.forward after its break (mul, sigmoid) and decode's exp, mul, clamp, add
    for label in ("sigmoid", "exp", "clamp"):
        assert any(n.endswith(f"· {label}") for n in head), (label, by_path)
    ops = {n.name: n.node.op for n in captured.nodes}
    root_ops = {n for n in by_path.get("", []) if ops[n] in ("call_function", "call_method")}
    # what the root's own forward runs stays at the root: its relu, the subtraction and its own decode
    assert {"relu", "sub", "exp", "clamp"} <= root_ops, root_ops
    assert not any(n.startswith("sigmoid") for n in root_ops)
