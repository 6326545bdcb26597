"""Conv → BatchNorm folding."""

from __future__ import annotations

import pytest
import torch
import torch.fx
from torch import nn

from fxtui.measure.whatif.fold_bn import find_conv_bn, fuse_conv_bn

pytestmark = pytest.mark.unit


class ConvBnNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.conv3 = nn.Conv2d(8, 4, 1)
        self.bn3 = nn.BatchNorm2d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn1(self.conv1(x)))
        x = self.bn2(self.conv2(x))
        y = self.conv3(x)
        # conv3's output has a second user, so bn3 cannot be folded into it.
        return self.bn3(y) + y.mean()


def _trained_stats(model: nn.Module) -> nn.Module:
    """Give the BatchNorms non-trivial statistics so folding changes the weights."""
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(4, 3, 8, 8) * 3 + 1)
    return model.eval()


def test_fused_graph_matches_and_has_no_foldable_batchnorm() -> None:
    torch.manual_seed(0)
    model = _trained_stats(ConvBnNet())
    gm = torch.fx.symbolic_trace(model)
    fused, pairs = fuse_conv_bn(gm)
    assert pairs == [("conv1", "bn1"), ("conv2", "bn2")]
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        assert torch.allclose(fused(x), gm(x), atol=1e-5)
    left = {n.target for n in fused.graph.nodes if n.op == "call_module"}
    assert left == {"conv1", "conv2", "conv3", "bn3"}
    # The original is untouched.
    assert sum(isinstance(m, nn.BatchNorm2d) for m in gm.modules()) == 3


def test_sequential_conv_bn_leaves_no_batchnorm() -> None:
    model = _trained_stats(nn.Sequential(nn.Conv2d(3, 6, 3), nn.BatchNorm2d(6), nn.ReLU()))
    gm = torch.fx.symbolic_trace(model)
    fused, pairs = fuse_conv_bn(gm)
    assert len(pairs) == 1
    assert not any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in fused.modules())
    x = torch.randn(1, 3, 8, 8)
    with torch.no_grad():
        assert torch.allclose(fused(x), gm(x), atol=1e-5)


def test_training_mode_is_not_folded() -> None:
    model = nn.Sequential(nn.Conv2d(3, 6, 3), nn.BatchNorm2d(6)).train()
    assert find_conv_bn(torch.fx.symbolic_trace(model)) == []
