"""``--train``: a whole training step — forward, loss, backward, optimizer — timed per node.

Models are tiny and built here; nothing is downloaded.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

from fxtui.commands.cli import main
from fxtui.core.errors import FxtuiError
from fxtui.measure.capture.train import choose_loss
from fxtui.measure.inputs import Inputs
from fxtui.measure.pipeline import make_report, run_profile, session_for_module
from fxtui.measure.targets import LoadedModel
from fxtui.report.api import Report

pytestmark = pytest.mark.e2e


class TinyCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.bn(self.conv(x)).relu()
        return self.fc(y.mean((2, 3)))


class CostlyBackward(nn.Module):
    """Two branches: an embedding lookup costs little forward, but its gradient is a dense 50 MB table."""

    def __init__(self) -> None:
        super().__init__()
        self.costly = nn.Embedding(200_000, 64)
        self.cheap = nn.Linear(64, 64)

    def forward(self, ids: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return self.costly(ids).sum(0) + self.cheap(x).sum(0)


def trained(module: nn.Module, inputs: Inputs, runs: int = 4, optimizer: str = "sgd"):  # type: ignore[no-untyped-def]
    loaded = LoadedModel(module=module, inputs=inputs, name=type(module).__name__, dtype="float32")
    # every step recorded as it comes (on a busy machine the default would add steps to replace disturbed ones)
    session = session_for_module(loaded, analyse=False, train=True, optimizer=optimizer, keep_disturbed=True)
    run_profile(session, runs, 1)
    return session, make_report(session, timeline=True)


def test_a_training_step_is_timed_per_node_in_three_phases() -> None:
    model = TinyCNN()
    before = model.fc.weight.detach().clone()
    _, report = trained(model, Inputs((torch.randn(4, 3, 16, 16),)))
    phases = {r.info.phase for r in report.rows}
    assert phases == {"forward", "backward", "optimizer"}
    assert report.training and report.capture == "train" and report.mode == "train"
    assert "cross-entropy" in report.loss and report.optimizer.startswith("SGD(")
    # The optimizer's step and zero_grad are rows of their own, not part of the remainder.
    optimizer_rows = {r.name for r in report.rows if r.info.phase == "optimizer" and r.info.op == "call_module"}
    assert optimizer_rows == {"SGD.step", "zero_grad"}
    assert all(r.median_s > 0 for r in report.rows if r.name in optimizer_rows)
    # Backward nodes are charged to the forward module they differentiate.
    conv_grad = [r for r in report.rows if r.info.phase == "backward" and r.info.target == "aten.convolution_backward"]
    assert [r.module_path for r in conv_grad] == ["conv"] and conv_grad[0].name.startswith("conv · ∇")
    # A forward node names its backward nodes.
    conv = next(r for r in report.rows if r.info.phase == "forward" and r.info.target == "aten.convolution")
    assert conv_grad[0].name in conv.info.gradients
    # Parameters really change from step to step.
    assert not torch.equal(before, model.fc.weight.detach())
    assert model.training
    modules = {m.path: m for m in report.modules}
    assert modules["conv"].forward_s > 0 and modules["conv"].backward_s > 0
    assert report.phases["backward"] > 0 and report.fidelity is not None


def test_backward_time_goes_to_the_module_whose_gradient_costs_it() -> None:
    ids = torch.randint(0, 200_000, (8,), generator=torch.Generator().manual_seed(0))
    _, report = trained(CostlyBackward(), Inputs((ids, torch.randn(8, 64))), runs=5)
    modules = {m.path: m for m in report.modules}
    costly = modules["costly"]
    assert costly.inclusive_s == pytest.approx(costly.forward_s + costly.backward_s)
    dense = next(r for r in report.rows if r.info.target == "aten.embedding_dense_backward")
    assert dense.module_path == "costly" and dense.info.phase == "backward"
    # The dense gradient is charged to the module it differentiates: its backward time is the sum of its
    # backward nodes' medians, the dense one among them (how much slower it is than the lookup is a measurement).
    mine = [r for r in report.rows if r.module_path == "costly"]
    assert costly.backward_s == pytest.approx(sum(r.median_s for r in mine if r.info.phase == "backward"))
    assert costly.forward_s == pytest.approx(sum(r.median_s for r in mine if r.info.phase == "forward"))
    cheap = [r for r in report.rows if r.module_path == "cheap" and r.info.phase == "backward"]
    assert cheap and modules["cheap"].backward_s == pytest.approx(sum(r.median_s for r in cheap))


def test_adamw_steps_are_their_own_rows() -> None:
    _, report = trained(TinyCNN(), Inputs((torch.randn(2, 3, 8, 8),)), runs=2, optimizer="adamw")
    assert "AdamW.step" in {r.name for r in report.rows} and report.optimizer.startswith("AdamW(")


def test_the_report_round_trips_through_json_with_phases(tmp_path: Path) -> None:
    _, report = trained(TinyCNN(), Inputs((torch.randn(2, 3, 8, 8),)), runs=2)
    path = tmp_path / "train.json"
    path.write_text(report.to_json())
    loaded = Report.load(path)
    assert loaded.training and loaded.optimizer == report.optimizer
    assert [r.info.phase for r in loaded.rows] == [r.info.phase for r in report.rows]
    assert {m.path: m.backward_s for m in loaded.modules} == {m.path: m.backward_s for m in report.modules}
    meta = json.loads(path.read_text())["metadata"]
    assert meta["mode"] == "train" and set(meta["phases_s"]) == {"forward", "backward", "optimizer"}
    trace = report.to_chrome_trace()["traceEvents"]
    assert {e["name"] for e in trace if e.get("cat") == "phase"} == {"forward", "backward", "optimizer"}


@pytest.mark.parametrize(
    ("output", "kind"),
    [
        (torch.randn(4, 10), "cross-entropy"),
        ({"loss": torch.tensor(1.0), "logits": torch.randn(4, 10)}, "output.loss"),
        (torch.randn(4, 10, 3), "mean"),
        ((torch.zeros(2, dtype=torch.long), torch.randn(3)), "mean"),
    ],
)
def test_the_loss_suits_the_output(output: object, kind: str) -> None:
    assert choose_loss(output, "m").kind == kind


def test_an_output_without_floats_cannot_make_a_loss() -> None:
    with pytest.raises(FxtuiError, match="no floating-point output"):
        choose_loss(torch.zeros(3, dtype=torch.long), "m")


def test_a_nan_loss_is_a_warning_and_the_session_goes_on() -> None:
    class Diverges(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(x) * float("nan")

    _, report = trained(Diverges(), Inputs((torch.randn(2, 3, 4),)), runs=3)
    assert report.runs == 3
    assert any("loss was NaN or infinite in 3 of 3" in w for w in report.warnings)


# -- the command line ------------------------------------------------------------------------


MODELS = """
import torch

class Frozen(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4).requires_grad_(False)

    def forward(self, x):
        return self.fc(x)

class Ints(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x).argmax(-1)

def frozen():
    return Frozen(), torch.randn(2, 4)

def ints():
    return Ints(), torch.randn(2, 4)

def tiny():
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)), torch.randn(5, 4)
"""


@pytest.fixture
def models(tmp_path: Path) -> Path:
    path = tmp_path / "models.py"
    path.write_text(textwrap.dedent(MODELS))
    return path


@pytest.mark.parametrize(
    ("attr", "extra", "fragment"),
    [
        ("frozen", [], "no parameter that requires grad"),
        ("ints", [], "no floating-point output"),
        ("tiny", ["--capture", "fx"], "--capture fx cannot"),
        ("tiny", ["--optimizer", "lion"], "invalid choice: 'lion'"),
        ("tiny", ["--phase", "sideways"], "unknown phase 'sideways'"),
    ],
)
def test_bad_training_input_is_one_sentence_and_exit_2(
    models: Path, capsys: pytest.CaptureFixture[str], attr: str, extra: list[str], fragment: str
) -> None:
    code = main([f"{models}:{attr}", "--train", *extra, "--once", "--runs", "2", "--warmup", "0"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert fragment in err, err


def test_the_command_line_prints_phases_and_module_split(models: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main([f"{models}:tiny", "--train", "--once", "--runs", "3", "--warmup", "1", "--modules"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "training steps" in out and "phases     forward" in out and "backward ÷ forward" in out
    assert "cross-entropy against fixed random labels (3 classes)" in out
    header = next(line for line in out.splitlines() if line.startswith("module path"))
    assert "forward" in header and "backward" in header


def test_phase_filter_keeps_one_phase(models: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main([f"{models}:tiny", "--train", "--once", "--runs", "2", "--phase", "backward", "--top", "0"])
    out, _ = capsys.readouterr()
    rows = [line for line in out.splitlines() if line.startswith(("forward ", "backward ", "optimizer "))]
    assert code == 0 and rows and all(line.startswith("backward ") for line in rows)
    code = main([f"{models}:tiny", "--once", "--phase", "backward"])
    assert code == 2 and "add --train" in capsys.readouterr().err


@pytest.mark.slow
def test_a_tiny_transformer_trains_per_node(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("transformers")
    config = "num_hidden_layers=2,hidden_size=64,num_attention_heads=2,intermediate_size=128,vocab_size=512"
    code = main(["hf:bert", "--hf-config", config, "--input-shape", "1,16", "--train", "--once", "--runs", "2"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "the mean of the first floating-point output" in out
    # Backward rows, each named after the encoder module it differentiates and marked ∇.
    assert re.search(r"^backward\s+call_function\s+encoder\.layer\.[01]\.[\w.]+ · ∇\w+", out, re.MULTILINE), out


def test_the_python_api_profiles_a_training_step() -> None:
    import fxtui

    report = fxtui.profile(TinyCNN(), torch.randn(2, 3, 8, 8), runs=2, warmup=1, train=True, optimizer="adamw")
    assert report.training and report.optimizer.startswith("AdamW(")
    assert {r.info.phase for r in report.rows} == {"forward", "backward", "optimizer"}
    assert "phases     forward" in report.header()
