"""Work counting (FLOPs, bytes, parameters), roll-up and roofline placement."""

from __future__ import annotations

import pytest
import torch
import torch.fx
from torch import nn

from fxtui.measure.analysis.roofline import MachinePeaks, classify
from fxtui.measure.analysis.work import NodeWork, measure_work, rollup

pytestmark = pytest.mark.unit


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.conv(x))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = Block()
        self.fc = nn.Linear(64, 32)

    def forward(self, x: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.block(x), self.fc(v)


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


@pytest.fixture(scope="module")
def traced() -> tuple[torch.fx.GraphModule, tuple[torch.Tensor, torch.Tensor]]:
    torch.manual_seed(0)
    return torch.fx.symbolic_trace(Net().eval()), (torch.randn(2, 3, 8, 8), torch.randn(8, 64))


def test_linear_flops_bytes_and_params(traced) -> None:
    gm, inputs = traced
    work = measure_work(gm, inputs)
    fc = work["fc"]
    assert fc.flops == 2 * 8 * 64 * 32
    assert fc.params == 64 * 32 + 32
    assert fc.bytes_read == (8 * 64 + 64 * 32 + 32) * 4
    assert fc.bytes_written == 8 * 32 * 4


def test_conv_bytes_are_input_output_weight_and_bias(traced) -> None:
    gm, inputs = traced
    work = measure_work(gm, inputs)
    conv = gm.get_submodule("block.conv")
    x = inputs[0]
    out = conv(x)
    assert work["block_conv"].bytes_read == _nbytes(x) + _nbytes(conv.weight) + _nbytes(conv.bias)
    assert work["block_conv"].bytes_written == _nbytes(out)
    assert work["block_conv"].params == 8 * 3 * 3 * 3 + 8
    # One multiply-add per output element per weight of its filter.
    assert work["block_conv"].flops == 2 * out.numel() * 3 * 3 * 3


def test_nodes_without_tensors_or_flops(traced) -> None:
    gm, inputs = traced
    work = measure_work(gm, inputs)
    assert work["x"] == NodeWork(0.0, 0, 0, 0)
    relu = work["block_act"]
    assert relu.flops == 0 and relu.params == 0
    assert relu.bytes_read == relu.bytes_written == 2 * 8 * 8 * 8 * 4


def test_a_tensor_passed_twice_is_read_once() -> None:
    gm = torch.fx.symbolic_trace(lambda x: x * x)
    work = measure_work(gm, (torch.randn(10),))
    assert work["mul"].bytes_read == 40 and work["mul"].bytes_written == 40


def test_get_attr_counts_the_tensor_as_parameters() -> None:
    class WithConst(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = nn.Parameter(torch.ones(5, 7))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * self.scale

    work = measure_work(torch.fx.symbolic_trace(WithConst()), (torch.randn(5, 7),))
    assert work["scale"].params == 35
    assert work["scale"].bytes_moved == 0


def test_rollup_sums_each_subtree(traced) -> None:
    gm, inputs = traced
    work = measure_work(gm, inputs)
    paths = {"x": "", "v": "", "block_conv": "block.conv", "block_act": "block.act", "fc": "fc", "output": ""}
    mods = rollup(work, paths)
    assert mods["block"].flops == work["block_conv"].flops
    assert mods["block"].params == work["block_conv"].params
    assert mods["block"].nodes == 2
    assert mods[""].params == sum(p.numel() for p in gm.parameters())
    assert mods[""].bytes_read == sum(w.bytes_read for w in work.values())


def test_achieved_and_intensity() -> None:
    work = NodeWork(flops=4e9, bytes_read=1_000_000_000, bytes_written=1_000_000_000, params=0)
    assert work.intensity == 2.0
    assert work.achieved(2.0) == (2.0, 1.0)
    assert NodeWork(0.0, 0, 0, 0).intensity is None


def test_classify_by_ridge_point() -> None:
    peaks = MachinePeaks(gflops=100.0, gbytes_per_s=10.0, threads=1)  # ridge at 10 FLOPs/byte
    heavy = NodeWork(flops=100e9, bytes_read=1_000_000_000, bytes_written=0, params=0)  # 100 FLOPs/byte
    light = NodeWork(flops=1e9, bytes_read=1_000_000_000, bytes_written=0, params=0)  # 1 FLOP/byte
    r = classify(heavy, 2.0, peaks)
    assert r is not None and r.bound == "compute-bound"
    assert r.fraction == pytest.approx(0.5)  # 50 GFLOP/s of 100
    r = classify(light, 0.25, peaks)
    assert r is not None and r.bound == "memory-bound"
    assert r.fraction == pytest.approx(0.4)  # 4 GB/s of 10
    assert r.ceiling_gflops == pytest.approx(10.0)
    assert classify(NodeWork(0.0, 0, 0, 0), 1.0, peaks) is None


def test_measure_peaks_restores_the_thread_setting() -> None:
    from fxtui.measure.analysis.roofline import measure_peaks

    before = torch.get_num_threads()
    peaks = measure_peaks(1, matmul_n=64, copy_mb=1, reps=1)
    assert peaks.threads == 1
    assert peaks.gflops > 0 and peaks.gbytes_per_s > 0
    assert torch.get_num_threads() == before


def test_views_move_nothing_but_in_place_ops_do() -> None:
    class Reshapes(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.act = nn.ReLU(inplace=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.flatten(x, 1)
            return self.act(y).contiguous()

    work = measure_work(torch.fx.symbolic_trace(Reshapes()), (torch.randn(4, 3, 5),))
    assert work["flatten"].bytes_moved == 0
    assert work["act"].bytes_read == work["act"].bytes_written == 4 * 15 * 4
