"""--capture eager on a model: nothing traced, every ATen op of a run timed and charged to its module."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import fxtui
from fxtui.core.captures import CHOICES, capture_mode

pytestmark = pytest.mark.unit


class Branchy(nn.Module):
    """Data-dependent control flow: symbolic tracing cannot follow it, the eager capture needs not."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.a(x))
        if h.sum() > 0:  # a branch on a value
            h = h * 2
        return self.b(h)


def test_a_model_no_trace_can_follow_is_timed_op_by_op_under_its_modules() -> None:
    # Disturbed steps kept: on a busy machine the profile would run more steps to get 6 quiet ones.
    report = fxtui.profile(Branchy(), torch.randn(8, 16), runs=6, warmup=1, capture="eager", keep_disturbed=True)
    assert report.capture == "eager" and "eager" in CHOICES and not capture_mode("eager").graphs
    names = {r.name for r in report.rows}
    assert {"a · linear", "b · linear", "relu", "mul"} <= names, names
    assert {r.module_path for r in report.rows if r.name.startswith("a ·")} == {"a"}
    assert all(r.count == 6 for r in report.rows)
    assert report.fidelity is not None and report.overhead is not None
    assert {m.path for m in report.modules} >= {"", "a", "b"}


def test_what_ifs_that_rewrite_call_module_nodes_say_why_not() -> None:
    report = fxtui.profile(
        nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)).eval(),
        torch.randn(1, 3, 16, 16),
        runs=3,
        warmup=1,
        capture="eager",
        what_ifs="fold-bn,threads=1",
    )
    results = {w.name: w for w in report.what_ifs}
    assert "call_module nodes, which only the fx capture keeps" in results["fold-bn"].error
    assert results["threads=1"].measured  # a thread count applies to any capture


class MakesItsLoss(nn.Module):
    """As transformers' models do: a new loss module made inside ``forward`` on every call."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return nn.CrossEntropyLoss()(self.fc(x), y)


def test_a_module_made_inside_a_forward_is_its_callers_child_the_same_every_call() -> None:
    from fxtui.ops.namer import OpNamer
    from fxtui.ops.recorder import OpRecorder

    model, namer, recorder = MakesItsLoss(), OpNamer(), OpRecorder()
    namer.add_root(model)
    x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
    known = []
    for _ in range(3):
        recorder.start()
        model(x, y)
        recorder.stop()
        namer.resolve(recorder.take())
        known.append(namer.known)
    assert known[0] == known[1] == known[2]  # no new nodes (and no new roots) call after call
    assert len(namer.roots) == 1
    nodes, _ = namer.take_new()
    assert {n.module_path for n in nodes if n.label.startswith(("_log_softmax", "nll_loss"))} == {"CrossEntropyLoss"}
