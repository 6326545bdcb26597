"""Which node pays the page faults: the memory pass counts them per node, and the warning names the worst."""

from __future__ import annotations

import mmap

import pytest
import torch
from torch import nn

from fxtui.core.nodes import NodeInfo
from fxtui.core.snapshot import page_fault_warning
from fxtui.measure.analysis.memory import measure_captured_memory
from fxtui.measure.capture.captured import one_graph_model
from fxtui.measure.inputs import Inputs

pytestmark = pytest.mark.unit

PAGES = 1024


@torch.fx.wrap
def touch_fresh_memory(x: torch.Tensor) -> torch.Tensor:
    # 4 MiB mapped afresh and written page by page: each page is one first-touch fault.
    with mmap.mmap(-1, PAGES * mmap.PAGESIZE) as m:
        for page in range(PAGES):
            m[page * mmap.PAGESIZE] = 1
    return x + 1


class Toucher(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return touch_fresh_memory(torch.relu(x))


def test_the_node_that_touches_fresh_memory_is_charged_its_faults() -> None:
    captured = one_graph_model(torch.fx.symbolic_trace(Toucher()))
    found = measure_captured_memory(captured, Inputs((torch.randn(4, 4),)))
    faults = {name: m.page_faults for name, m in found.nodes.items()}
    assert faults["touch_fresh_memory"] >= PAGES
    assert faults["relu"] < PAGES // 4


def test_the_warning_names_the_nodes_that_pay_most() -> None:
    def node(name: str, faults: int | None) -> NodeInfo:
        return NodeInfo(name, 0, "call_function", name, name, "", "", page_faults=faults)

    nodes = [node("conv1", 2300), node("relu", 0), node("fc", 40), node("add", None), node("pool", 900)]
    text = page_fault_warning(5000.0, "glibc", nodes)
    assert "most by conv1 (2,300), pool (900), fc (40)" in text
    assert "most by" not in page_fault_warning(5000.0, "glibc")
    assert page_fault_warning(10.0, "glibc", nodes) == ""
