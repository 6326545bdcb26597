"""Headless report: table, filters, exports read back, written whole or not at all."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import torch
import torch.fx
from torch import nn

from fxtui.core.errors import FxtuiError
from fxtui.core.filters import FilterSpec, parse_ops, path_matches
from fxtui.core.rows import NodeRow
from fxtui.measure.pipeline import make_report
from fxtui.measure.session import Session
from fxtui.report.api import Report
from fxtui.report.data import load_json
from fxtui.report.export import write_atomic, write_file

pytestmark = pytest.mark.unit


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.conv(x)) + x)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, padding=1)
        self.layer1 = nn.Sequential(Block(), Block())
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layer1(self.stem(x))
        return self.head(x.mean(dim=(2, 3)))


@pytest.fixture(scope="module")
def report() -> Report:
    from fxtui.measure.capture.fx import trace_model

    traced = trace_model(Net().eval())
    session = Session(
        traced.gm,
        (torch.randn(1, 3, 16, 16),),
        model="Net",
        module_paths=traced.module_paths,
        module_classes=traced.module_classes,
    )
    session.warm_up(1)
    for _ in range(5):
        session.run_pair()
    return make_report(session)


def test_rows_follow_graph_order_and_carry_module_paths(report: Report) -> None:
    names = [r.name for r in report.rows]
    assert names[0] == "x" and names[-1] == "output"
    by_name = {r.name: r for r in report.rows}
    assert by_name["layer1_0_conv"].module_path == "layer1.0.conv"
    assert by_name["layer1_0_conv"].info.target == "Conv2d"
    assert by_name["layer1_0_conv"].info.shape == "1×4×16×16"
    assert by_name["add"].module_path == "layer1.0" and by_name["add"].info.target == "operator.add"
    assert all(r.stats.count == 5 for r in report.rows)
    modules = {m.path: m for m in report.modules}
    assert modules["layer1"].class_name == "Sequential" and modules["layer1.0"].class_name == "Block"
    assert modules[""].inclusive_s == pytest.approx(report.attributed_s)
    assert modules["layer1"].inclusive_s == pytest.approx(
        modules["layer1.0"].inclusive_s + modules["layer1.1"].inclusive_s
    )


def test_table_sorts_filters_and_limits(report: Report) -> None:
    rows = report.select(sort="median")
    assert [r.median_s for r in rows] == sorted((r.median_s for r in rows), reverse=True)
    only_convs = report.select(FilterSpec(types=frozenset({"conv2d"})))
    assert {r.name for r in only_convs} == {"stem", "layer1_0_conv", "layer1_1_conv"}
    in_block = report.select(FilterSpec(path="layer1.1*", ops=parse_ops("call_module")))
    assert {r.name for r in in_block} == {"layer1_1_conv", "layer1_1_bn"}
    text = report.table(top=3)
    assert len(text.splitlines()) == 2 + 3 + 1  # header, rule, three rows, the "more nodes" line
    assert "more nodes" in text
    assert "fidelity" in report.header() and "unattributed" in report.header()


def test_json_export_reads_back_with_the_api_fields(report: Report, tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    write_atomic(path, report.to_json())
    data = load_json(path)
    assert data["metadata"]["model"] == "Net" and data["metadata"]["runs"] == 5
    assert data["metadata"]["fidelity"] == pytest.approx(report.fidelity)
    first = data["rows"][1]
    for key in ("name", "op", "target", "module_path", "shape", "median_s", "mean_s", "p90_s", "count", "run_frac"):
        assert key in first
    assert first["shape"] == [1, 4, 16, 16] and first["shape_text"] == "1×4×16×16"
    assert first["run_frac"] == pytest.approx(report.rows[1].stats.pct / 100)
    assert {m["path"] for m in data["modules"]} >= {"", "layer1", "layer1.0"}


def test_module_table_ranks_modules_by_inclusive_time(report: Report) -> None:
    text = report.module_table(top=0)
    lines = text.splitlines()[2:]
    assert lines[0].startswith("(root)")
    assert text.index("layer1 ") < text.index("layer1.0 ")  # a parent includes its children's time
    assert "Block" in text and "Sequential" in text
    only = report.module_table(top=0, path="layer1.1*")
    assert "layer1.1" in only and "layer1.0 " not in only


def test_csv_export_has_one_line_per_node(report: Report) -> None:
    lines = list(csv.DictReader(io.StringIO(report.to_csv())))
    assert len(lines) == len(report.rows)
    assert float(lines[1]["median_s"]) == pytest.approx(report.rows[1].median_s)


def test_chrome_trace_nests_nodes_in_their_modules(report: Report) -> None:
    trace = json.loads(json.dumps(report.to_chrome_trace()))
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    nodes = {e["name"]: e for e in spans if e["cat"] != "module"}
    modules = [e for e in spans if e["cat"] == "module"]
    assert set(nodes) == {r.name for r in report.rows}
    block = next(m for m in modules if m["args"]["path"] == "layer1.0")
    conv = nodes["layer1_0_conv"]
    assert block["ts"] <= conv["ts"] and conv["ts"] + conv["dur"] <= block["ts"] + block["dur"] + 1e-6
    # spans on one thread must nest: sort by start and check no partial overlaps
    stack: list[float] = []
    for e in sorted(spans, key=lambda e: (e["ts"], -e["dur"])):
        while stack and e["ts"] >= stack[-1] - 1e-6:
            stack.pop()
        assert not stack or e["ts"] + e["dur"] <= stack[-1] + 1e-6
        stack.append(e["ts"] + e["dur"])


def test_write_is_whole_or_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "out.json"
    target.write_text("previous")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("os.replace", broken_replace)
    with pytest.raises(FxtuiError, match=r"cannot write .*No space left"):
        write_atomic(target, "new content")
    assert target.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temporary file left behind


def test_unwritable_paths_fail_in_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(FxtuiError, match="does not exist"):
        write_file(tmp_path / "missing" / "x.json", "{}")
    with pytest.raises(FxtuiError, match="is a directory"):
        write_file(tmp_path, "{}")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not valid JSON"),
        ('{"a": 1}', "not an fxtui report"),
        ('{"schema": "fxtui.report", "version": 99}', "version 99"),
        ('{"schema": "fxtui.report", "version": 1, "rows": [{"name": 3}], "metadata": {}, "modules": []}', "damaged"),
    ],
)
def test_loading_a_foreign_or_damaged_file_says_so(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(content)
    with pytest.raises(FxtuiError, match=message):
        load_json(path)


def test_path_patterns_are_globs_or_substrings() -> None:
    assert path_matches("layer1.0.conv1", "layer[12]*")
    assert not path_matches("layer3.0", "layer[12]*")
    assert path_matches("layer1.0.conv1", "conv")
    with pytest.raises(ValueError, match="unknown op type"):
        parse_ops("call_modul")


def test_python_api_profiles_a_model() -> None:
    import fxtui

    report = fxtui.profile(Net().eval(), torch.randn(1, 3, 16, 16), runs=4, warmup=1)
    # up to 4 more when other work disturbed some steps (report.disturbance says how many)
    assert 4 <= report.runs <= 8 and report.eager_median_s and report.run_median_s
    assert report.disturbance is not None
    # The figures are the README's ratios of this report's own medians (how close to 1 they come is a
    # measurement: tests/benchmarks/bench_engine.py).
    assert report.fidelity == pytest.approx(sum(r.median_s for r in report.rows) / report.eager_median_s)
    assert report.overhead == pytest.approx(report.run_median_s / report.eager_median_s)
    assert "layer1_0_conv" in report.table(top=0)


def test_the_table_marks_unsteady_and_noisy_nodes(report: Report) -> None:
    import dataclasses

    def with_stats(row: NodeRow, **stats: float) -> NodeRow:
        return dataclasses.replace(row, stats=dataclasses.replace(row.stats, **stats))

    first, second, *rest = report.rows
    rows = [
        with_stats(first, median_s=250e-6, min_s=65e-6, iqr_s=0.0),  # unsteady: 3.8× its fastest run
        with_stats(second, median_s=200e-6, min_s=65e-6, iqr_s=50e-6),  # unsteady and noisy
        *(with_stats(r, min_s=r.median_s, iqr_s=0.0) for r in rest),
    ]
    text = dataclasses.replace(report, rows=rows).table(top=0)
    lines = {line.split()[1]: line for line in text.splitlines()[2:] if line.strip()}
    assert lines[first.name].rstrip().endswith("min 65.0 µs")
    assert lines[second.name].rstrip().endswith("noisy, min 65.0 µs")
    assert all(lines[r.name].rstrip()[-1].isdigit() for r in rest)  # ends at the calls column
    assert json.loads(json.dumps(dataclasses.replace(report, rows=rows).to_dict()))["rows"][0]["unsteady"] is True


def test_the_header_explains_a_negative_unattributed_remainder(report: Report) -> None:

    # (as on a quiet machine: no disturbed steps among the figures)
    glue = report.replace(eager_median_s=report.attributed_s + 1e-3, disturbance=None)
    assert "unattributed 1.00 ms of the uninstrumented run is Python glue" in glue.header()
    over = report.replace(eager_median_s=report.attributed_s - 371e-6, disturbance=None)
    line = next(line for line in over.header().splitlines() if line.startswith("unattributed"))
    assert line.startswith("unattributed none: the node medians add up to 371 µs more")


def approx_floats(record: dict) -> dict:
    """``record`` with each float compared to 1e-12 (relative)."""
    return {k: pytest.approx(v, rel=1e-12) if isinstance(v, float) else v for k, v in record.items()}


def test_a_saved_report_loads_back_into_the_same_rows_and_settings(report: Report, tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    write_atomic(path, report.to_json())
    loaded = Report.load(path)
    # Equal but for the last bit of a share written as a fraction (run_frac) and read back as a percent.
    assert [approx_floats(r.to_dict()) for r in loaded.rows] == [r.to_dict() for r in report.rows]
    assert loaded.rows[0].info.index == report.rows[0].info.index and loaded.rows[0].stats.recent == ()
    assert [approx_floats(m.to_dict()) for m in loaded.modules] == [m.to_dict() for m in report.modules]
    assert loaded.metadata() == json.loads(json.dumps(report.metadata()))
    assert loaded.table(top=0) == report.table(top=0)
