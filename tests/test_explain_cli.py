"""Explaining hotspots from the command line: columns, aten, hints with the what-if, thread comparison."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from fxtui.cli import main

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
    assert "what-if    fold 1 BatchNorm(s)" in out and "outputs differ by at most" in out


def test_thread_settings_side_by_side(capsys: pytest.CaptureFixture[str], target: str) -> None:
    out = run(capsys, target, "--threads", "1,2")
    assert "@1 thr" in out and "@2 thr" in out and "speed-up @2 thr" in out
    assert "uninstrumented median" in out


def test_comparing_threads_needs_headless_mode(capsys: pytest.CaptureFixture[str], target: str) -> None:
    from fxtui.cli import _live, build_parser

    with pytest.raises(Exception, match="--once"):
        _live(build_parser().parse_args([target, "--threads", "1,2"]))
