"""The module tree's lines as data: what a branch lists under a filter, and opening and closing branches."""

from __future__ import annotations

import pytest

from fxtui.core.filters import FilterSpec
from fxtui.core.nodes import NodeInfo, module_ancestors
from fxtui.ui import view_filter
from fxtui.ui.demo.demo_source import build_graph, resnet18_graph
from fxtui.ui.widgets.tree_labels import Entry
from fxtui.ui.widgets.tree_lines import Outline

pytestmark = pytest.mark.unit


def _enclosing(nodes: list[NodeInfo]) -> set[str]:
    """The root and every module holding one of ``nodes`` in its subtree."""
    return {""} | {path for n in nodes for path in module_ancestors(n.module_path)}


def _outline(spec: FilterSpec = view_filter.DEFAULT_FILTER) -> Outline:
    graph = resnet18_graph()
    shown = [n for n in graph.nodes if view_filter.matches(n, spec)]
    return Outline(graph, _enclosing(shown), {n.name for n in shown})


def _lines(outline: Outline) -> list[tuple[Entry, tuple[bool, ...]]]:
    """Each line as (its entry, its guide flags)."""
    return list(zip(outline.entries, outline.lasts, strict=True))


def _keys(outline: Outline) -> list[str]:
    return [entry.key for entry in outline.entries]


def test_the_root_lists_graph_order_with_one_node_modules_as_their_node() -> None:
    outline = _outline()
    outline.open_all(())
    assert _keys(outline)[:7] == ["", "conv1", "bn1", "relu", "maxpool", "layer1", "layer2"]
    assert _lines(outline)[1] == (Entry("node", "conv1"), (False,))
    assert _lines(outline)[-1] == (Entry("node", "fc"), (True,))  # └─ fc


def test_opening_and_closing_a_branch_splices_its_lines() -> None:
    outline = _outline()
    outline.open_all(())
    before = _lines(outline)
    at, added = outline.expand("layer1")
    assert at == _keys(outline).index("layer1") and added == 2  # layer1.0, layer1.1
    at0, added0 = outline.expand("layer1.0")
    assert added0 == 6  # conv1 bn1 relu conv2 bn2 add; relu (called twice) is a closed branch
    assert outline.line_of(Entry("node", "layer1_0_conv1")) == at0 + 1
    assert _lines(outline)[at0 + 1][1] == (False, False, False)  # three levels below the root, not last
    assert outline.subtree_end(at) == at + added + added0
    assert outline.collapse("layer1") == (at, added + added0)
    assert _lines(outline) == before
    assert outline.is_expanded("layer1.0")  # still open inside the closed branch
    outline.expand("layer1")
    assert outline.line_of(Entry("node", "layer1_0_conv1")) is not None  # shown again, opened as it was


def test_a_filter_keeps_only_branches_with_a_visible_node() -> None:
    outline = _outline(FilterSpec(ops=view_filter.DEFAULT_FILTER.ops, path="layer2*"))
    outline.open_all({"layer2", "layer2.0"})
    keys = _keys(outline)
    assert keys[:3] == ["", "layer2", "layer2.0"]
    assert "layer1" not in keys and "conv1" not in keys
    assert outline.line_of(Entry("module", "layer3")) is None


def test_a_module_whose_first_node_is_filtered_out_moves_to_its_first_visible_node() -> None:
    # a holds nodes 1 and 4, the root holds node 2 directly: a is listed first, unless node 1 is hidden.
    rows = [
        ("x", "placeholder", "x", "input", "", "1", 0.0),
        ("a_lin", "call_module", "Linear", "Linear", "a.lin", "1", 1.0),
        ("mid", "call_function", "operator.add", "add", "", "1", 1.0),
        ("a_relu", "call_function", "torch.relu", "relu", "a", "1", 1.0),
        ("a_add", "call_function", "operator.add", "add", "a", "1", 1.0),
        ("output", "output", "output", "output", "", "1", 0.0),
    ]
    graph = build_graph(rows, model="m", inputs=("1",))
    everything = [n for n in graph.nodes if n.op not in ("placeholder", "output")]
    whole = Outline(graph, _enclosing(everything), {n.name for n in everything})
    assert whole.children("") == [Entry("module", "a"), Entry("node", "mid")]
    some = [n for n in everything if n.name != "a_lin"]
    narrowed = Outline(graph, _enclosing(some), {n.name for n in some})
    assert narrowed.children("") == [Entry("node", "mid"), Entry("module", "a")]
    only_relu = [n for n in everything if n.name in ("a_relu", "mid")]
    folded = Outline(graph, _enclosing(only_relu), {n.name for n in only_relu})
    assert folded.children("") == [Entry("node", "mid"), Entry("node", "a_relu")]  # a shown as its one node
