"""Hint rules: each fires on a model built to trigger it and stays silent otherwise.

Medians and noise are given as exact figures (no timing), so every threshold is
crossed or not by construction.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.fx
from torch import nn

from fxtui.measure.analysis.cpu_setup import thread_info
from fxtui.measure.analysis.hint_rules import Hint, suggest
from fxtui.measure.analysis.work import measure_work

pytestmark = pytest.mark.unit


def _rules(hints: tuple[Hint, ...]) -> list[str]:
    return [h.rule for h in hints]


def _runnable(gm: torch.fx.GraphModule) -> list[str]:
    return [n.name for n in gm.graph.nodes if n.op not in ("placeholder", "output", "get_attr")]


# -- Conv → BatchNorm ---------------------------------------------------------------


def test_conv_bn_fires_with_the_batchnorm_time_as_saving() -> None:
    gm = torch.fx.symbolic_trace(nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU()).eval())
    medians = {"_0": 400e-6, "_1": 100e-6, "_2": 50e-6}
    hints = suggest(gm, medians, 1e-3)
    (hint,) = [h for h in hints if h.rule == "conv-bn-fold"]
    assert hint.nodes == ("_0", "_1")
    assert hint.saving_s == pytest.approx(100e-6)
    assert hint.saving_pct == pytest.approx(10.0)
    assert "100 µs" in hint.evidence
    assert hint.what_if == "fold-bn"


@pytest.mark.parametrize(
    "model",
    [
        nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.BatchNorm2d(4)).eval(),  # not adjacent
        nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)).train(),  # batch statistics change every run
    ],
)
def test_conv_bn_silent_when_not_foldable(model: nn.Module) -> None:
    gm = torch.fx.symbolic_trace(model)
    medians = dict.fromkeys(_runnable(gm), 100e-6)
    assert "conv-bn-fold" not in _rules(suggest(gm, medians, 1e-3))


# -- slow against peers ------------------------------------------------------------


class ThreeLinears(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(64, 64)
        self.b = nn.Linear(64, 64)
        self.c = nn.Linear(64, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c(self.b(self.a(x)))


def test_slow_node_among_peers_is_named_with_its_factor() -> None:
    gm = torch.fx.symbolic_trace(ThreeLinears())
    work = measure_work(gm, (torch.randn(16, 64),))
    medians = {"a": 10e-6, "b": 10e-6, "c": 40e-6}
    hints = suggest(gm, medians, 100e-6, work=work)
    (hint,) = [h for h in hints if h.rule == "slow-vs-peers"]
    assert hint.nodes == ("c",)
    assert "4.0× slower" in hint.title
    # Running at its peers' rate, c would take 10 µs.
    assert hint.saving_s == pytest.approx(30e-6)


def test_peers_at_the_same_rate_are_not_flagged() -> None:
    gm = torch.fx.symbolic_trace(ThreeLinears())
    work = measure_work(gm, (torch.randn(16, 64),))
    medians = {"a": 10e-6, "b": 11e-6, "c": 12e-6}
    assert "slow-vs-peers" not in _rules(suggest(gm, medians, 100e-6, work=work))


# -- tiny ops ----------------------------------------------------------------------


def _elementwise_chain(x: torch.Tensor) -> torch.Tensor:
    for _ in range(10):
        x = x * 2 + 1
    return x


def test_tiny_ops_fire_when_they_are_a_notable_share() -> None:
    gm = torch.fx.symbolic_trace(_elementwise_chain)
    names = _runnable(gm)
    assert len(names) == 20
    medians = {n: (2e-6 if i == 0 else 5e-6) for i, n in enumerate(names)}
    hints = suggest(gm, medians, 200e-6)
    (hint,) = [h for h in hints if h.rule == "tiny-ops"]
    assert len(hint.nodes) == 20
    # Per-call floor (the fastest node, 2 µs) × 20 calls.
    assert hint.saving_s == pytest.approx(40e-6)
    assert hint.saving_pct == pytest.approx(20.0)
    assert hint.what_if == "compile"  # fusing them is what torch.compile does


def test_tiny_ops_silent_when_the_run_is_dominated_by_real_work() -> None:
    gm = torch.fx.symbolic_trace(_elementwise_chain)
    medians = dict.fromkeys(_runnable(gm), 5e-6)
    assert "tiny-ops" not in _rules(suggest(gm, medians, 10e-3))
    slow = dict.fromkeys(_runnable(gm), 50e-6)
    assert "tiny-ops" not in _rules(suggest(gm, slow, 1.1e-3))


# -- noisy -------------------------------------------------------------------------


def test_noisy_nodes_fire_above_a_tenth() -> None:
    gm = torch.fx.symbolic_trace(ThreeLinears())
    medians = {"a": 10e-6, "b": 10e-6, "c": 10e-6}
    hints = suggest(gm, medians, 30e-6, noise={"a": 0.05, "b": 0.3, "c": 0.02})
    (hint,) = [h for h in hints if h.rule == "noisy"]
    assert hint.nodes == ("b",)
    assert "IQR 30%" in hint.evidence
    assert hint.saving_s is None


def test_steady_nodes_are_not_noisy() -> None:
    gm = torch.fx.symbolic_trace(ThreeLinears())
    medians = {"a": 10e-6, "b": 10e-6, "c": 10e-6}
    assert "noisy" not in _rules(suggest(gm, medians, 30e-6, noise={"a": 0.05, "b": 0.1, "c": 0.0}))


# -- threads -----------------------------------------------------------------------


def test_oversubscription_fires_when_threads_exceed_cores() -> None:
    gm = torch.fx.symbolic_trace(ThreeLinears())
    medians = dict.fromkeys("abc", 10e-6)
    over = dataclasses.replace(thread_info(), intra_op=4, cores_available=2)
    (hint,) = [h for h in suggest(gm, medians, 30e-6, threads=over) if h.rule == "threads-oversubscribed"]
    assert "--threads 2" in hint.evidence
    assert hint.what_if == "threads=2"  # the what-if that measures it
    fits = dataclasses.replace(thread_info(), intra_op=2, cores_available=2)
    assert "threads-oversubscribed" not in _rules(suggest(gm, medians, 30e-6, threads=fits))


# -- channels-last -----------------------------------------------------------------


def _convnet() -> torch.fx.GraphModule:
    return torch.fx.symbolic_trace(nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Conv2d(8, 8, 3)).eval())


def test_channels_last_fires_on_a_conv_heavy_nchw_model() -> None:
    gm = _convnet()
    medians = {"_0": 400e-6, "_1": 50e-6, "_2": 400e-6}
    x = torch.randn(1, 3, 16, 16)
    (hint,) = [h for h in suggest(gm, medians, 1e-3, inputs=(x,)) if h.rule == "channels-last"]
    assert set(hint.nodes) == {"_0", "_2"}
    assert "80%" in hint.title
    assert hint.what_if == "channels-last"


def test_channels_last_silent_for_nhwc_inputs_or_light_convs() -> None:
    gm = _convnet()
    heavy = {"_0": 400e-6, "_1": 50e-6, "_2": 400e-6}
    nhwc = torch.randn(1, 3, 16, 16).to(memory_format=torch.channels_last)
    assert "channels-last" not in _rules(suggest(gm, heavy, 1e-3, inputs=(nhwc,)))
    light = {"_0": 10e-6, "_1": 500e-6, "_2": 10e-6}
    assert "channels-last" not in _rules(suggest(gm, light, 1e-3, inputs=(torch.randn(1, 3, 16, 16),)))


def test_channels_last_counts_pooling_with_the_convolutions() -> None:
    # Convolutions alone are 20% of the run, under the threshold; with the max pool they are 60%.
    gm = torch.fx.symbolic_trace(
        nn.Sequential(nn.Conv2d(3, 8, 3), nn.MaxPool2d(3, 2, 1), nn.ReLU(), nn.Conv2d(8, 8, 3)).eval()
    )
    medians = {"_0": 100e-6, "_1": 400e-6, "_2": 50e-6, "_3": 100e-6}
    x = torch.randn(1, 3, 16, 16)
    (hint,) = [h for h in suggest(gm, medians, 1e-3, inputs=(x,)) if h.rule == "channels-last"]
    assert hint.nodes[0] == "_1" and set(hint.nodes) == {"_0", "_1", "_3"}
    assert "convolutions and pooling take 60%" in hint.title
    assert "2 Conv2d nodes and 1 pooling node" in hint.evidence and "NHWC kernels" in hint.evidence


# -- all together ------------------------------------------------------------------


def test_a_balanced_model_gets_no_hints() -> None:
    gm = torch.fx.symbolic_trace(ThreeLinears())
    work = measure_work(gm, (torch.randn(16, 64),))
    medians = {"a": 100e-6, "b": 100e-6, "c": 100e-6}
    fits = dataclasses.replace(thread_info(), intra_op=1, cores_available=1)
    hints = suggest(
        gm, medians, 300e-6, noise=dict.fromkeys("abc", 0.01), work=work, threads=fits, inputs=(torch.randn(16, 64),)
    )
    assert hints == ()


def test_hints_are_ordered_by_saving() -> None:
    gm = torch.fx.symbolic_trace(nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Conv2d(4, 4, 1)).eval())
    medians = {"_0": 400e-6, "_1": 100e-6, "_2": 400e-6}
    hints = suggest(gm, medians, 1e-3, noise={"_0": 0.5}, inputs=(torch.randn(1, 3, 8, 8),))
    assert _rules(hints)[0] == "conv-bn-fold"
    assert all(h.saving_s is None for h in hints[1:])


# -- unsteady ------------------------------------------------------------------------


def test_unsteady_nodes_fire_when_their_excess_matters() -> None:
    gm = torch.fx.symbolic_trace(ThreeLinears())
    medians = {"a": 250e-6, "b": 1e-3, "c": 60e-6}
    fastest = {"a": 65e-6, "b": 0.95e-3, "c": 55e-6}
    hints = suggest(gm, medians, 1.5e-3, fastest=fastest)
    (hint,) = [h for h in hints if h.rule == "unsteady"]
    assert hint.nodes == ("a",)
    assert hint.title.startswith("1 node usually runs 2×")
    assert "a: 250 µs, fastest 65.0 µs" in hint.evidence
    assert hint.saving_s == pytest.approx(185e-6)
    assert hint.what_if == ""  # without thread facts there is no other thread count to measure
    two = dataclasses.replace(thread_info(), intra_op=2, cores_available=2)
    (threaded,) = [h for h in suggest(gm, medians, 1.5e-3, fastest=fastest, threads=two) if h.rule == "unsteady"]
    assert threaded.what_if == "threads=1"


def test_unsteady_nodes_are_silent_when_their_excess_is_a_sliver() -> None:
    gm = torch.fx.symbolic_trace(ThreeLinears())
    medians = {"a": 250e-6, "b": 1e-3, "c": 60e-6}
    fastest = {"a": 65e-6, "b": 0.95e-3, "c": 55e-6}
    assert "unsteady" not in _rules(suggest(gm, medians, 100e-3, fastest=fastest))  # 0.2% of the run
    assert "unsteady" not in _rules(suggest(gm, medians, 1.5e-3))  # no fastest runs known
