"""Aten operator breakdown per FX node."""

from __future__ import annotations

import sys

import pytest
import torch
import torch.fx
from torch import nn

from fxtui.measure.analysis.aten import aten_breakdown, main_kernel

pytestmark = pytest.mark.unit


def _model() -> tuple[torch.fx.GraphModule, tuple[torch.Tensor]]:
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 6 * 6, 4)).eval()
    return torch.fx.symbolic_trace(model), (torch.randn(1, 3, 8, 8),)


def test_conv_node_runs_a_convolution_op() -> None:
    gm, inputs = _model()
    ops = aten_breakdown(gm, inputs, runs=1)
    conv_ops = ops["_0"]
    assert conv_ops[0].depth == 0 and conv_ops[0].name == "aten::conv2d"
    kernel = main_kernel(conv_ops)
    assert kernel is not None and "conv" in kernel.name
    assert all(o.calls == 1 for o in conv_ops if o.depth == 0)
    # The linear layer's ops are charged to it, not to the conv.
    assert not any("addmm" in o.name or "linear" in o.name for o in conv_ops)
    assert any(o.name == "aten::linear" for o in ops["_3"])


def test_top_level_ops_add_up_to_no_more_than_the_node() -> None:
    gm, inputs = _model()
    for ops in aten_breakdown(gm, inputs, runs=2).values():
        top = [o for o in ops if o.depth == 0]
        assert 0 < sum(o.share for o in top) <= 1.0 + 1e-6
        for o in ops:
            assert 0 <= o.self_s <= o.total_s + 1e-12


def test_only_requested_nodes_are_covered() -> None:
    gm, inputs = _model()
    ops = aten_breakdown(gm, inputs, node_names=["_1"], runs=1)
    assert set(ops) == {"_1"}
    assert ops["_1"][0].name == "aten::relu"


def test_profiler_chatter_stays_off_stderr(capfd) -> None:
    gm, inputs = _model()
    aten_breakdown(gm, inputs, runs=1)
    print("still here", file=sys.stderr)
    err = capfd.readouterr().err
    assert "profiler_start" not in err
    assert "still here" in err
