"""Tracing: the leaf fallback, top-level failures, and each node's module path."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
import torchvision
from torch import nn

from fxtui.core.errors import FxtuiError
from fxtui.measure.capture.fx import trace_model
from fxtui.measure.targets import load_target

pytestmark = pytest.mark.e2e


class Branchy(nn.Module):
    """Control flow on a tensor value: torch.fx cannot trace this."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return self.lin(x)
        return -x


class Plain(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x)) + 1


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = Plain()
        self.blocks = nn.Sequential(Plain(), Branchy(), Plain())
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.first(x)))


class TopLevelBranch(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.backbone = Plain()
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.backbone(x)
        if y.mean() > 0:
            y = y * 2
        return self.head(y)


class Reuse(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = Plain()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(self.block(x))


def test_untraceable_block_is_kept_whole_and_the_graph_matches_eager() -> None:
    torch.manual_seed(0)
    model = Net().eval()
    traced = trace_model(model, name="net")
    assert traced.leaf_modules == ("blocks.1",)
    assert "control flow" in traced.leaf_reasons["blocks.1"]
    leaf_nodes = [n for n in traced.gm.graph.nodes if n.op == "call_module" and n.target == "blocks.1"]
    assert len(leaf_nodes) == 1
    # The blocks around the leaf are still traced through, node by node.
    assert traced.module_paths["blocks_0_lin"] == "blocks.0.lin"
    assert any(path == "blocks.2" for path in traced.module_paths.values())
    for sign in (1.0, -1.0):  # both sides of the branch
        x = sign * torch.rand(3, 4)
        torch.testing.assert_close(traced.gm(x), model(x))


def test_top_level_control_flow_names_the_line_and_suggests_submodule() -> None:
    with pytest.raises(FxtuiError) as info:
        trace_model(TopLevelBranch(), name="toplevel")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("toplevel cannot be traced: data-dependent control flow at ")
    assert "test_tracing.py:" in message
    assert "(`if y.mean() > 0:`)" in message
    assert "--submodule backbone" in message


def test_failure_reason_points_at_the_model_line_not_torch() -> None:
    traced = trace_model(Net())
    assert "(`if x.sum() > 0:`)" in traced.leaf_reasons["blocks.1"]
    assert "torch/fx" not in traced.leaf_reasons["blocks.1"]


def test_reused_module_gets_one_consistent_path() -> None:
    traced = trace_model(Reuse())
    relus = [n.name for n in traced.gm.graph.nodes if n.op == "call_function" and n.target is torch.relu]
    assert len(relus) == 2
    assert [traced.module_paths[n] for n in relus] == ["block", "block"]
    assert {p for n, p in traced.module_paths.items() if n.startswith("block_lin")} == {"block.lin"}


def test_resnet18_module_paths_and_classes() -> None:
    traced = trace_model(torchvision.models.resnet18(weights=None).eval(), name="resnet18")
    paths = traced.module_paths
    assert paths["layer1_0_conv1"] == "layer1.0.conv1"
    assert paths["add"] == "layer1.0"
    assert paths["flatten"] == ""
    assert paths["x"] == "" and paths["output"] == ""
    assert set(paths) == {n.name for n in traced.gm.graph.nodes}
    classes = traced.module_classes
    assert classes["layer1.0"] == "BasicBlock"
    assert classes["layer1"] == "Sequential"
    assert classes[""] == "ResNet"
    # Every path a node uses has a class, and so does each of its ancestors.
    for path in set(paths.values()):
        while path:
            assert classes[path]
            path = path.rpartition(".")[0]
    assert traced.leaf_modules == ()


def test_stack_traces_point_at_model_code() -> None:
    traced = trace_model(Net())
    node = next(n for n in traced.gm.graph.nodes if n.op == "call_function" and n.target is torch.relu)
    assert node.stack_trace is not None
    assert "return torch.relu(self.lin(x)) + 1" in node.stack_trace
    assert "fxtui/measure" not in node.stack_trace


def test_stack_traces_hold_every_model_frame_outermost_first_and_no_torch_frame() -> None:
    traced = trace_model(Net())
    node = next(n for n in traced.gm.graph.nodes if n.name == "blocks_2_lin")
    lines = node.stack_trace.splitlines()
    files = [line for line in lines if line.lstrip().startswith("File ")]
    assert all("test_tracing.py" in line for line in files), node.stack_trace
    # Net.forward calls blocks (torch's Sequential, dropped), which calls Plain.forward.
    assert "return self.head(self.blocks(self.first(x)))" in lines[1]
    assert lines[-1].strip() == "return torch.relu(self.lin(x)) + 1"
    placeholder = next(n for n in traced.gm.graph.nodes if n.op == "placeholder")
    assert placeholder.stack_trace is None  # made by the tracer, not by a line of the model


def test_tracing_a_small_model_does_not_pull_in_the_compiler_stack() -> None:
    # torch.fx's own stack recorder imports torch._dynamo and sympy: a second and
    # about 100 MB before the first node, for every model loaded from a file.
    code = (
        "import sys, torch\n"
        "from fxtui.measure.capture.fx import trace_model\n"
        "trace_model(torch.nn.Sequential(torch.nn.Linear(2, 2)))\n"
        "print(sorted(m for m in ('torch._dynamo', 'torch._inductor', 'sympy') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_get_attr_belongs_to_the_module_owning_the_parameter() -> None:
    class Holder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = nn.Parameter(torch.ones(4))

    class Scaled(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = Holder()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * self.inner.scale

    traced = trace_model(Scaled())
    get_attrs = [n.name for n in traced.gm.graph.nodes if n.op == "get_attr"]
    assert [traced.module_paths[n] for n in get_attrs] == ["inner"]
    assert traced.module_classes["inner"] == "Holder"


def test_detection_model_points_at_its_backbone() -> None:
    loaded = load_target("ssdlite320_mobilenet_v3_large")
    with pytest.raises(FxtuiError) as info:
        trace_model(loaded.module, name=loaded.name)
    message = str(info.value)
    assert "\n" not in message
    assert "torchvision/models/detection/" in message
    assert message.endswith("--submodule backbone")
    # Following the advice works.
    backbone = load_target("ssdlite320_mobilenet_v3_large", submodule="backbone")
    traced = trace_model(backbone.module, name=backbone.name)
    with torch.inference_mode():
        traced.gm(*backbone.inputs.args)
