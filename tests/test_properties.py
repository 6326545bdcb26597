"""Properties over large input spaces (hypothesis, derandomized so CI sees the same examples every run):
filters and globs, --input-shape and --hf-config parsing, reading arbitrary bytes as a saved report, module
roll-ups that add up to the root."""

from __future__ import annotations

import fnmatch
import json
import os
import string
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from fxtui.core.errors import FxtuiError
from fxtui.core.filters import FilterSpec, NodeColumns, matches, path_matches, select
from fxtui.core.nodes import PHASES, NodeInfo, NodeStats, build_module_tree
from fxtui.core.rollup import ModulePlan, module_stats
from fxtui.core.settings import parse_hf_config, parse_shape
from fxtui.core.snapshot import OPCODES
from fxtui.report.data import SCHEMA, SCHEMA_VERSION, ReportData

pytestmark = pytest.mark.unit

# The same examples on every run: a failure in CI is one a developer can rerun. Under mutation testing
# (tests/mutation.py sets FXTUI_MUTATION) a failure only has to be found, not shrunk to its simplest example:
# shrinking made each killed mutant cost seconds.
MUTATING = bool(os.environ.get("FXTUI_MUTATION"))
CHECKED = settings(
    derandomize=True,
    max_examples=60 if MUTATING else 150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    phases=[Phase.explicit, Phase.generate] if MUTATING else list(Phase),
)

names = st.text(string.ascii_lowercase + string.digits + "_", min_size=1, max_size=6)
paths = st.lists(st.sampled_from(["layer1", "layer2", "0", "1", "conv", "bn", "fc"]), max_size=4).map(".".join)
types = st.sampled_from(["Conv2d", "BatchNorm2d", "Linear", "add", "relu", "getattr"])


@st.composite
def graphs(draw: st.DrawFn) -> list[NodeInfo]:
    count = draw(st.integers(1, 25))
    return [
        NodeInfo(
            name=f"n{i}",
            index=i,
            op=draw(st.sampled_from(OPCODES)),
            target=draw(types),
            type_name=draw(types),
            module_path=draw(paths),
            node_text="",
            phase=draw(st.sampled_from(["", *PHASES])),
        )
        for i in range(count)
    ]


patterns = st.one_of(
    st.just(""),
    paths,
    st.text("layer12.0*?[]!bcfn", max_size=8),
    st.builds(lambda p, s: p + s, paths, st.sampled_from(["*", "?", "[12]*", "*.0", ".*"])),
)
specs = st.builds(
    FilterSpec,
    ops=st.frozensets(st.sampled_from(OPCODES), max_size=3),
    path=patterns,
    types=st.frozensets(st.one_of(types, types.map(str.upper)), max_size=2),
    phases=st.frozensets(st.sampled_from(PHASES), max_size=2),
)


@CHECKED
@given(graphs(), specs)
def test_the_array_filter_selects_exactly_the_nodes_matches_lets_through_in_order(
    nodes: list[NodeInfo], spec: FilterSpec
) -> None:
    expected = [n for n in nodes if matches(n, spec)]
    assert NodeColumns(nodes).mask(spec).tolist() == [matches(n, spec) for n in nodes]
    assert select(nodes, spec) == expected


@CHECKED
@given(paths, patterns)
@example("layer1.0.conv", "conv")  # a substring, not the whole path
@example("layer1.0.conv", "layer1*")
def test_a_path_filter_is_a_glob_with_glob_characters_and_a_substring_without(path: str, pattern: str) -> None:
    if not pattern:
        assert path_matches(path, pattern)
    elif set("*?[") & set(pattern):
        assert path_matches(path, pattern) == fnmatch.fnmatchcase(path, pattern)
    else:
        assert path_matches(path, pattern) == (pattern in path)


separators = st.sampled_from([",", "x", "×", "X", " , ", " x "])


@CHECKED
@given(st.lists(st.integers(1, 10**6), min_size=1, max_size=5), separators)
def test_a_shape_written_any_allowed_way_reads_back(sizes: list[int], sep: str) -> None:
    assert parse_shape(sep.join(map(str, sizes))) == tuple(sizes)


@CHECKED
@given(st.text(max_size=20))
def test_any_shape_text_is_a_shape_of_positive_sizes_or_one_sentence(text: str) -> None:
    try:
        shape = parse_shape(text)
    except FxtuiError as e:
        assert "\n" not in str(e) and "shape" in str(e)
    else:
        assert shape and all(isinstance(s, int) and s >= 1 for s in shape)


keys = st.text(string.ascii_letters + "_", min_size=1, max_size=12)
values = st.text(string.ascii_letters + string.digits + "._-[]", max_size=8)


@CHECKED
@given(st.lists(st.tuples(keys, values), max_size=5))
def test_hf_config_pairs_read_back(pairs: list[tuple[str, str]]) -> None:
    assert parse_hf_config(",".join(f"{k}={v}" for k, v in pairs)) == tuple(pairs)


@CHECKED
@given(st.text(max_size=30))
def test_any_hf_config_text_is_pairs_or_one_sentence(text: str) -> None:
    try:
        pairs = parse_hf_config(text)
    except FxtuiError as e:
        assert "--hf-config takes key=value pairs" in str(e)
    else:
        assert all(key and key == key.strip() and "," not in key + value for key, value in pairs)


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    return tmp_path / "report.json"


@CHECKED
@given(st.binary(max_size=200))
def test_arbitrary_bytes_are_a_report_or_one_sentence(scratch: Path, data: bytes) -> None:
    scratch.write_bytes(data)
    try:
        ReportData.load(scratch)
    except FxtuiError as e:
        assert "\n" not in str(e)


json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
fields = st.sampled_from(["name", "module_path", "median_s", "path", "inclusive_s", "runs", "model", "inputs"])


@CHECKED
@given(
    st.dictionaries(fields, json_values, max_size=4),
    st.lists(st.dictionaries(fields, json_values, max_size=5), max_size=3),
    st.lists(st.dictionaries(fields, json_values, max_size=4), max_size=3),
)
def test_a_report_shaped_file_with_any_values_loads_or_is_one_sentence(
    scratch: Path, metadata: dict, rows: list, modules: list
) -> None:
    document = {"schema": SCHEMA, "version": SCHEMA_VERSION, "metadata": metadata, "rows": rows, "modules": modules}
    scratch.write_text(json.dumps(document))
    try:
        report = ReportData.load(scratch)
    except FxtuiError as e:
        assert "\n" not in str(e)
    else:
        assert [r.name for r in report.rows] == [r["name"] for r in rows]


@st.composite
def timed_graphs(draw: st.DrawFn) -> tuple[list[NodeInfo], list[float]]:
    count = draw(st.integers(1, 30))
    nodes = [
        NodeInfo(name=f"n{i}", index=i, op="call_module", target="t", type_name="T", module_path=draw(paths),
                 node_text="", phase=draw(st.sampled_from(["forward", "backward"])))
        for i in range(count)
    ]  # fmt: skip
    medians = draw(st.lists(st.floats(0, 1.0), min_size=count, max_size=count))
    return nodes, medians


@CHECKED
@given(timed_graphs())
def test_module_roll_ups_add_up_to_the_root_and_each_module_to_itself_and_its_children(
    graph: tuple[list[NodeInfo], list[float]],
) -> None:
    nodes, medians = graph
    tree = build_module_tree(nodes, {})
    stats = {n.name: NodeStats(1, m, m, m, m, m, 0.0, 0.0) for n, m in zip(nodes, medians, strict=True)}
    table = module_stats(nodes, tree, stats, run_s=1.0)
    total = float(np.sum(medians))
    assert table[""].inclusive_s == pytest.approx(total, abs=1e-9)
    for path, info in tree.items():
        row = table[path]
        own = sum(m for n, m in zip(nodes, medians, strict=True) if n.module_path == path)
        assert row.self_s == pytest.approx(own, abs=1e-9)
        children = sum(table[c].inclusive_s for c in info.children)
        assert row.inclusive_s == pytest.approx(own + children, abs=1e-9)
        assert row.forward_s + row.backward_s == pytest.approx(row.inclusive_s, abs=1e-9)
        assert row.pct == pytest.approx(100 * row.inclusive_s)
        below = [n for n in nodes if path == "" or n.module_path == path or n.module_path.startswith(path + ".")]
        assert row.nodes == len(below)
    plan = ModulePlan(nodes, tree)
    assert list(plan.roll_up(medians)) == pytest.approx([table[p].inclusive_s for p in plan.paths], abs=1e-9)


@CHECKED
@given(timed_graphs(), st.data())
def test_a_module_holds_a_shown_node_exactly_when_one_lies_in_its_subtree(
    graph: tuple[list[NodeInfo], list[float]], data: st.DataObject
) -> None:
    nodes, _ = graph
    tree = build_module_tree(nodes, {})
    plan = ModulePlan(nodes, tree)
    shown = np.array(data.draw(st.lists(st.booleans(), min_size=len(nodes), max_size=len(nodes))), dtype=bool)
    held = plan.holding(shown)
    for i, path in enumerate(plan.paths):
        below = [n.index for n in nodes if path == "" or n.module_path == path or n.module_path.startswith(path + ".")]
        assert list(plan.subtree(path)) == below
        assert bool(held[i]) == any(shown[j] for j in below), path
