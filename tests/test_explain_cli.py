"""Explaining hotspots from the command line: columns, aten, hints, what-ifs, thread comparison."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from fxtui.commands.cli import main

pytestmark = pytest.mark.e2e

MODEL = """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        return self.fc(x.mean(dim=(2, 3)))

def make():
    return Net(), torch.randn(2, 3, 16, 16)
"""


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("explain") / "net.py"
    path.write_text(textwrap.dedent(MODEL))
    return f"{path}:make"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code = main([*args, "--once", "--runs", "4", "--warmup", "1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_efficiency_columns_and_export(capsys: pytest.CaptureFixture[str], target: str, tmp_path: Path) -> None:
    out = run(capsys, target, "--columns", "flops,gflops,bound,params", "--json", str(tmp_path / "r.json"))
    assert "MFLOP" in out and "GFLOP/s" in out and "bound" in out
    assert "machine" in out and "GFLOP/s matmul" in out  # the measured roofline is stated
    rows = {r["name"]: r for r in json.loads((tmp_path / "r.json").read_text())["rows"]}
    fc = rows["fc"]
    assert fc["flops"] == 2 * 2 * 8 * 4  # batch 2, Linear(8, 4)
    assert fc["params"] == 8 * 4 + 4
    assert fc["gflops_s"] == pytest.approx(fc["flops"] / fc["median_s"] / 1e9)
    assert rows["conv"]["bound"] in ("compute-bound", "memory-bound")
    assert "net.py" in rows["conv"]["source"]


def test_unknown_column_is_one_sentence(capsys: pytest.CaptureFixture[str], target: str) -> None:
    assert main([target, "--once", "--columns", "speed"]) == 2
    assert "--columns" in capsys.readouterr().err


def test_aten_names_the_kernels_of_the_top_nodes(capsys: pytest.CaptureFixture[str], target: str) -> None:
    out = run(capsys, target, "--aten", "1", "--type", "Conv2d")
    assert "aten operator" in out and "conv" in out.split("aten operator", 1)[1]


def test_hints_suggest_folding_and_measure_it(capsys: pytest.CaptureFixture[str], target: str) -> None:
    out = run(capsys, target, "--hints")
    assert "[conv-bn-fold]" in out
    assert "measured (what-if fold-bn): " in out  # the hint shows the measured change, not the estimate
    assert "what-if    fold-bn: fold 1 BatchNorm layer into the convolution before it" in out
    assert "max rel diff" in out and "4 interleaved pairs" in out


def test_what_ifs_print_a_table_each_and_one_that_cannot_apply_says_why(
    capsys: pytest.CaptureFixture[str], target: str, tmp_path: Path
) -> None:
    out = run(capsys, target, "--what-if", "channels-last,threads=1", "--json", str(tmp_path / "r.json"))
    block = out.split("what-if    channels-last:", 1)[1]
    assert "run        " in block and "(p25–p75 " in block and "uninstrumented medians, 4 interleaved pairs" in block
    assert "outputs    max abs diff" in block and "max|a−b| ÷ max|a| per floating output" in block
    assert "after ÷ before" in block and "module path" in block
    assert "what-if    threads=1:" in out
    saved = json.loads((tmp_path / "r.json").read_text())["metadata"]["what_ifs"]
    assert [w["name"] for w in saved] == ["channels-last", "threads=1"]
    assert set(saved[0]["nodes"]) >= {"conv", "bn", "fc"}


def test_a_what_if_that_cannot_apply_is_one_line_and_the_others_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "mlp.py"
    path.write_text(
        "import torch\nfrom torch import nn\n\n"
        "def make():\n    return nn.Sequential(nn.Linear(8, 8), nn.ReLU()), torch.randn(2, 8)\n"
    )
    out = run(capsys, f"{path}:make", "--what-if", "fold-bn,int8-dynamic")
    assert "what-if    fold-bn: " in out and "cannot apply: the model has no Conv→BatchNorm pair to fold" in out
    assert "what-if    int8-dynamic: dynamic int8 quantization of 1 nn.Linear layer" in out
    assert "outputs    max abs diff" in out.split("int8-dynamic", 1)[1]


def test_an_unknown_what_if_lists_the_valid_ones_before_the_model_loads(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["no/such/file.py:make", "--once", "--what-if", "channels-last,fp16"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "fxtui: --what-if: no what-if 'fp16'; choose from channels-last, bf16, fold-bn, threads=N, compile, "
        "int8-dynamic (see fxtui model --help)"
    ]


def test_more_thread_counts_are_measured_as_what_ifs(capsys: pytest.CaptureFixture[str], target: str) -> None:
    out = run(capsys, target, "--threads", "1,2")
    assert "threads 1" in out.splitlines()[0]  # profiled at the first count
    assert "what-if    threads=2: 2 intra-op threads instead of 1" in out


def test_the_app_checks_what_if_names_before_the_screen_is_taken_over(target: str) -> None:
    from fxtui.commands.model import model_settings
    from fxtui.commands.parser import command_parser
    from fxtui.core.errors import FxtuiError

    with pytest.raises(FxtuiError, match="no what-if 'nope'"):
        model_settings(command_parser("model").parse_args([target, "--what-if", "nope"]))
