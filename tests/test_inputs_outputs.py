"""Models with several inputs of different kinds and structured (dict, tuple) outputs."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

import fxtui
from fxtui.commands.cli import main

pytestmark = pytest.mark.e2e

TWO_TOWER = """
import torch
from torch import nn


class TwoTower(nn.Module):
    # An image vector and a row of token ids in; a dict holding a tensor and a tuple out.
    def __init__(self):
        super().__init__()
        self.image = nn.Linear(8, 4)
        self.text = nn.Embedding(10, 4)

    def forward(self, x, tokens):
        a = self.image(x)
        b = self.text(tokens).mean(1)
        return {"score": (a * b).sum(-1), "parts": (a, b)}


def make():
    return TwoTower(), (torch.randn(3, 8), torch.randint(0, 10, (3, 5)))
"""


class Pair(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.left = nn.Linear(6, 2)
        self.right = nn.Linear(5, 2)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        left, right = self.left(x), self.right(y)
        return left + right, {"left": left, "right": right}


@pytest.fixture
def two_tower(tmp_path: Path) -> Path:
    path = tmp_path / "two_tower.py"
    path.write_text(textwrap.dedent(TWO_TOWER))
    return path


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_factory_with_two_inputs_and_a_dict_output_through_the_cli(
    two_tower: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], dtype: str
) -> None:
    saved = tmp_path / "run.json"
    code = main([f"{two_tower}:make", "--once", "--runs", "3", "--warmup", "1", "--dtype", dtype, "--json", str(saved)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith(f"model      two_tower.py:make   inputs 3×8, 3×5   dtype {dtype}")
    rows = {r["name"]: r for r in json.loads(saved.read_text())["rows"]}
    # Both inputs are placeholders; the token ids stay integers whatever --dtype says.
    assert (rows["x"]["op"], rows["x"]["dtype"]) == ("placeholder", dtype)
    assert (rows["tokens"]["op"], rows["tokens"]["dtype"]) == ("placeholder", "int64")
    assert rows["output"]["shape_text"] == "{score: 3, parts: (3×4, 3×4)}" and rows["output"]["shape"] is None
    assert {"image", "text", "mean", "mul"} <= set(rows)
    assert len({r["count"] for r in rows.values()}) == 1  # 3 runs, up to 3 more in place of disturbed ones
    assert all(3 <= r["count"] <= 6 for r in rows.values())


def test_new_input_shapes_keep_integer_inputs_integers_in_their_range(
    two_tower: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A bigger batch and longer token rows: the ids must still index the embedding table.
    saved = tmp_path / "run.json"
    shapes = ["--input-shape", "6,8", "--input-shape", "6,40"]
    code = main([f"{two_tower}:make", "--once", "--runs", "2", "--warmup", "0", *shapes, "--json", str(saved)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "inputs 6×8, 6×40" in out
    rows = {r["name"]: r for r in json.loads(saved.read_text())["rows"]}
    assert (rows["tokens"]["dtype"], rows["tokens"]["shape"]) == ("int64", [6, 40])
    assert rows["text"]["shape"] == [6, 40, 4]


def test_two_inputs_and_a_tuple_and_dict_output_through_the_python_api() -> None:
    torch.manual_seed(0)
    report = fxtui.profile(Pair(), (torch.randn(4, 6), torch.randn(4, 5)), runs=3, warmup=1)
    assert report.inputs == ("4×6", "4×5")
    assert 3 <= report.runs <= 6 and report.failures == 0
    rows = {r.name: r for r in report.rows}
    assert [r.name for r in report.rows if r.info.op == "placeholder"] == ["x", "y"]
    assert rows["output"].info.shape == "(4×2, {left: 4×2, right: 4×2})"
    assert rows["left"].module_path == "left" and rows["right"].module_path == "right"
    assert "add" in rows and "left" in report.table(top=0)


def test_a_python_api_model_given_the_wrong_number_of_inputs_is_one_sentence() -> None:
    with pytest.raises(fxtui.FxtuiError, match=r"takes 2 input\(s\) but 1 were given"):
        fxtui.profile(Pair(), torch.randn(4, 6), runs=1, warmup=0)
