"""Source locations of FX nodes."""

from __future__ import annotations

import inspect
import os

import pytest
import torch
import torch.fx
from torch import nn

from fxtui.measure.analysis.source import SourceLocation, short_path, source_of, sources_of

pytestmark = pytest.mark.unit


class Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)  # line: lin
        return torch.relu(y) + 1  # line: relu


def _line_of(marker: str) -> int:
    lines, start = inspect.getsourcelines(Tiny.forward)
    return next(start + i for i, text in enumerate(lines) if text.rstrip().endswith(marker))


def _traced(record: bool = True) -> torch.fx.GraphModule:
    model = Tiny()
    tracer = torch.fx.Tracer()
    tracer.record_stack_traces = record
    return torch.fx.GraphModule(model, tracer.trace(model))


def test_node_points_at_its_line_in_this_file() -> None:
    nodes = {n.name: n for n in _traced().graph.nodes}
    loc = source_of(nodes["relu"])
    assert loc is not None
    assert loc.file == __file__
    assert loc.line == _line_of("# line: relu")
    assert loc.code == "return torch.relu(y) + 1  # line: relu"
    assert loc.function == "forward"
    assert str(loc).endswith(f"test_analysis_source.py:{loc.line}  return torch.relu(y) + 1  # line: relu")


def test_call_module_names_the_class_and_its_forward() -> None:
    gm = _traced()
    loc = sources_of(gm)["lin"]
    assert loc.line == _line_of("# line: lin")
    assert loc.module_class == "Linear"
    assert loc.forward_file == inspect.getsourcefile(nn.Linear.forward)
    assert loc.forward_line == inspect.getsourcelines(nn.Linear.forward)[1]
    assert loc.forward.endswith(f"torch/nn/modules/linear.py:{loc.forward_line} Linear.forward")


def test_without_stack_traces_only_modules_have_a_location() -> None:
    gm = _traced(record=False)
    locs = sources_of(gm)
    assert set(locs) == {"lin"}
    assert locs["lin"].module_class == "Linear"


def test_site_packages_paths_are_shortened() -> None:
    path = "/usr/lib/python3.11/site-packages/torchvision/models/resnet.py"
    assert short_path(path) == "torchvision/models/resnet.py"
    loc = SourceLocation(path, 92, "out = self.conv1(x)")
    assert str(loc) == "torchvision/models/resnet.py:92  out = self.conv1(x)"


def test_torch_fxtui_and_generated_frames_are_skipped() -> None:
    import fxtui

    fxtui_file = os.path.join(os.path.dirname(fxtui.__file__), "engine", "tracing.py")
    node = next(n for n in _traced().graph.nodes if n.name == "relu")
    node.stack_trace = (
        'File "/home/me/model.py", line 7, in forward\n    return self.head(x)\n'
        f'  File "{fxtui_file}", line 80, in call_module\n    return super().call_module(m)\n'
        '  File "<eval_with_key>.3", line 5, in forward\n    relu = torch.relu(x)\n'
        f'  File "{torch.fx.proxy.__file__}", line 300, in create_proxy\n    node = self.create_node()\n'
    )
    loc = source_of(node)
    assert loc is not None
    assert (loc.file, loc.line, loc.code) == ("/home/me/model.py", 7, "return self.head(x)")
