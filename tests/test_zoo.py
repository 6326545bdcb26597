"""The torchvision zoo through the command line: one model of each kind, small inputs.

The whole zoo is swept by ``tests/benchmarks/sweep_zoo.py``; this is the subset
that keeps each code path honest (classification, segmentation, video, quantizable,
detection and optical flow whole through TorchDynamo and in part through torch.fx), plus a hand-written
model whose blocks branch on tensor values, as models from other libraries do.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import helpers
import pytest

pytestmark = pytest.mark.e2e


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    return helpers.run_cli(capsys, *args, "--once", "--runs", "1", "--warmup", "0")


def profiled_nodes(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[str, dict]:
    out_json = tmp_path / "run.json"
    code, out, err = run_cli(capsys, *args, "--json", str(out_json))
    assert code == 0, err
    data = json.loads(out_json.read_text())
    assert data["rows"], "a profiled model has nodes"
    # one run, and one more in its place when other work disturbed it
    assert all(1 <= r["count"] <= 2 for r in data["rows"])
    return out, data


@pytest.mark.parametrize(
    ("model", "shape", "root_class", "expected_type"),
    [
        ("mobilenet_v3_small", "1,3,64,64", "MobileNetV3", "Hardswish"),
        ("lraspp_mobilenet_v3_large", "1,3,64,64", "LRASPP", "interpolate"),
        ("r3d_18", "1,3,4,32,32", "VideoResNet", "Conv3d"),
        ("quantized_shufflenet_v2_x0_5", "1,3,64,64", "QuantizableShuffleNetV2", "cat"),
    ],
    ids=["classification", "segmentation", "video", "quantizable"],
)
def test_each_kind_of_model_profiles_node_by_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model: str, shape: str, root_class: str, expected_type: str
) -> None:
    out, data = profiled_nodes(tmp_path, capsys, model, "--input-shape", shape)
    assert out.startswith(f"model      {model}   inputs {shape.replace(',', '×')}")
    assert {"path": "", "class_name": root_class}.items() <= data["modules"][0].items()
    assert expected_type in {r["type_name"] for r in data["rows"]}
    assert data["metadata"]["leaf_modules"] == []  # torchvision's own code traces all the way down


@pytest.mark.parametrize(
    ("model", "submodule", "expected_input", "graphs"),
    [
        ("fasterrcnn_mobilenet_v3_large_320_fpn", "backbone", "1×3×320×320", 2),
        ("raft_small", "feature_encoder", "2×3×128×128", 1),
    ],
    ids=["detection", "optical_flow"],
)
def test_untraceable_model_profiles_whole_with_dynamo_and_its_part_with_fx(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model: str, submodule: str, expected_input: str, graphs: int
) -> None:
    out, data = profiled_nodes(tmp_path, capsys, model)
    meta = data["metadata"]
    assert meta["capture"] == "dynamo" and "symbolic_trace" in meta["capture_reason"]
    assert meta["graphs"] >= graphs and len(meta["graph_breaks"]) >= graphs - 1
    assert len(data["rows"]) > 500  # the whole model, not one part

    # torch.fx alone still says why it stops and which part it can trace.
    code, out, err = run_cli(capsys, model, "--capture", "fx")
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert "cannot be traced" in lines[0] and ".py:" in lines[0]
    assert lines[0].endswith(f"--submodule {submodule}")

    out, data = profiled_nodes(tmp_path, capsys, model, "--submodule", submodule)
    # The submodule's inputs were captured from a run of the whole model on its default input.
    assert out.startswith(f"model      {model}.{submodule}   inputs {expected_input}")
    assert data["metadata"]["model"] == f"{model}.{submodule}"
    assert data["metadata"]["capture"] == "fx"
    assert len(data["rows"]) > 20


BLOCKS = """
import torch
from torch import nn


class Gate(nn.Module):
    # Skips its work for an all-negative input: a branch on a tensor value.
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x):
        if x.max() < 0:
            return x
        return torch.relu(self.lin(x))


class Repeat(nn.Module):
    # Iterates over the rows of a tensor: torch.fx cannot unroll that.
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x):
        return torch.stack([self.lin(row) for row in x])


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(8, 16)
        self.blocks = nn.Sequential(Gate(), nn.LayerNorm(16), Repeat(), nn.GELU())
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.blocks(torch.tanh(self.stem(x))))


def make():
    return Net(), torch.randn(3, 8)
"""


def test_blocks_with_data_dependent_control_flow_become_leaves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "other_library.py"
    model.write_text(textwrap.dedent(BLOCKS))
    out, data = profiled_nodes(tmp_path, capsys, f"{model}:make", "--top", "0")
    header = out.split("\n\n", 1)[0]
    assert "leaves     kept whole (untraceable code): blocks.0, blocks.2" in header
    rows = {r["name"]: r for r in data["rows"]}
    # The untraceable blocks are one timed node each; the code around them is node by node.
    assert rows["blocks_0"]["op"] == "call_module" and rows["blocks_0"]["type_name"] == "Gate"
    assert rows["blocks_2"]["op"] == "call_module" and rows["blocks_2"]["type_name"] == "Repeat"
    assert {"stem", "tanh", "blocks_1", "blocks_3", "head"} <= set(rows)
    assert data["metadata"]["leaf_modules"] == ["blocks.0", "blocks.2"]
