"""Report files other tools read: one convention for a missing value, shapes as sizes, fractions named as such,
every rank's rows, CSV cells a spreadsheet reads, pandas frames, and files of the previous version still loading."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import sys
from array import array
from pathlib import Path
from typing import Any

import pytest

import fxtui
from fxtui.core.errors import FxtuiError
from fxtui.core.findings import Disturbance, Hint
from fxtui.core.nodes import Spread
from fxtui.core.program_run import ProgramState, RankStats, RankSummary, StepSummary
from fxtui.core.snapshot import RunSpreads, Snapshot
from fxtui.report.api import Report
from fxtui.report.json_schema import fields_from_metadata, metadata_json
from fxtui.report.shapes import shape_list, shape_text
from fxtui.ui.demo.demo_source import make_snapshot, resnet18_graph, resnet18_medians

pytestmark = pytest.mark.e2e

DATA = Path(__file__).resolve().parent / "data"
#: Files fxtui wrote before version 2: a model, a training step (--train --memory), a script and a torchrun job.
V1_FILES = sorted(DATA.glob("report_v1_*.json"))
#: Keys where "" is a value of its own (the root module), not a missing one.
ROOT_KEYS = {"path", "module_path", "fused_into"}


def resnet18(**snapshot: Any) -> Report:
    """A deterministic resnet18 profile (the demo's figures), with ``snapshot`` fields changed."""
    return Report.from_snapshot(dataclasses.replace(make_snapshot(resnet18_graph(), resnet18_medians()), **snapshot))


def two_ranks() -> Report:
    """A two-rank job's last profile: rank 1 runs every node 1.5× slower than rank 0, which is shown."""
    graph = resnet18_graph()
    fast, slow = make_snapshot(graph, resnet18_medians()), make_snapshot(graph, resnet18_medians(), scale=1.5)
    spread = {
        name: dataclasses.replace(s, rank=0, rank_min_s=s.median_s, rank_max_s=slow.nodes[name].median_s,
                                  slowest_rank=1)
        for name, s in fast.nodes.items()
    }  # fmt: skip
    summary = RankSummary(0, (RankStats(0, steps=10, compute_s=0.01), RankStats(1, steps=10, compute_s=0.015)))
    shown = dataclasses.replace(
        fast, nodes=spread, rank_summary=summary, program=ProgramState(("ddp.py",), running=False, exit_code=0),
        other_ranks={1: slow},
    )  # fmt: skip
    return Report.from_snapshot(shown)


def walk(value: Any, key: str = "") -> list[tuple[str, Any]]:
    """Every (key, value) pair in nested JSON data, lists' items under their list's key."""
    if isinstance(value, dict):
        return [pair for k, v in value.items() for pair in [(k, v), *walk(v, k)]]
    if isinstance(value, list):
        return [pair for item in value for pair in [(key, item), *walk(item, key)]]
    return []


# -- one convention for a missing value ---------------------------------------------------------------------


def test_a_value_that_does_not_apply_is_null_and_never_an_empty_text_or_minus_one() -> None:
    data = json.loads(resnet18().to_json())
    meta, row, root = data["metadata"], data["rows"][1], data["modules"][0]
    # An inference run of a model: no loss, no optimizer, no capture fallback, no ranks, no phases.
    assert meta["loss"] is None and meta["optimizer"] is None and meta["capture_reason"] is None
    assert meta["last_error"] is None and meta["disturbance_line"] is None
    assert (row["phase"], row["kernel"], row["bound"], row["nonfinite"]) == (None, None, None, None)
    assert (row["rank"], row["rank_min_s"], row["rank_max_s"], row["slowest_rank"]) == (None, None, None, None)
    assert (root["forward_s"], root["backward_s"], root["prefill_s"], root["decode_s"]) == (None, None, None, None)
    # Nowhere in the file is a missing value written another way; "" is only the root module's path.
    pairs = walk(data)
    assert [(k, v) for k, v in pairs if v == "" and k not in ROOT_KEYS] == []
    assert [(k, v) for k, v in pairs if k in ("rank", "slowest_rank") and v == -1] == []
    assert root["path"] == ""


def test_what_a_training_step_has_is_written_and_a_script_s_optimizer_is_named_once_known() -> None:
    graph = dataclasses.replace(resnet18_graph(), training=True, loss="cross-entropy", optimizer="AdamW")
    meta = json.loads(resnet18(graph=graph).to_json())
    assert (meta["metadata"]["loss"], meta["metadata"]["optimizer"]) == ("cross-entropy", "AdamW")
    assert meta["modules"][0]["forward_s"] == 0.0 and meta["modules"][0]["prefill_s"] is None
    script = dataclasses.replace(resnet18_graph(), training=True)  # a script: its steps say what they hold
    assert json.loads(resnet18(graph=script).to_json())["metadata"]["optimizer"] is None
    holds = (("backward", 1), ("forward", 1), ("optimizer:AdamW", 1))
    steps = StepSummary("train", steps=10, warmup=2, sampled=3, holds=holds)
    program = json.loads(resnet18(graph=script, steps=steps).to_json())["metadata"]
    assert program["optimizer"] == "AdamW" and program["steps"]["holds"] == {"backward": 1, "forward": 1,
                                                                             "optimizer:AdamW": 1}  # fmt: skip
    # A program's modules carry their forward time even when it does not train (its nodes carry their phase).
    inference = resnet18(program=ProgramState(("infer.py",), running=False, exit_code=0))
    assert json.loads(inference.to_json())["modules"][0]["forward_s"] == 0.0
    assert Report.from_dict({"schema": "fxtui.report", "version": 2, "metadata": program, "rows": [],
                             "modules": []}).steps.holds == holds  # fmt: skip


# -- shapes and fractions ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "sizes"),
    [
        ("5×64×56×56", [5, 64, 56, 56]),
        ("16", [16]),
        ("scalar", []),
        ("(2×16, 2)", [[2, 16], [2]]),
        ("[3×4, (1, 2×2)]", [[3, 4], [[1], [2, 2]]]),
        ("(1×2, 3, 4, 5, …)", [[1, 2], [3], [4], [5]]),
        ("{score: 3, parts: (3×4, 3×4)}", None),
        ("int", None),
        ("None", None),
        ("", None),
    ],
)
def test_a_shape_is_its_sizes(text: str, sizes: list[Any] | None) -> None:
    assert shape_list(text) == sizes
    if sizes is not None and "…" not in text:
        assert shape_list(shape_text(sizes)) == sizes


def test_shapes_are_lists_of_sizes_and_shares_are_fractions() -> None:
    hint = Hint("conv-bn-fold", "fold", ("bn1",), "why", saving_s=1e-3, saving_pct=12.5)
    disturbance = Disturbance(steps=10, disturbed=3, median_lost=0.25, worst_lost=0.5, used=10)
    report = resnet18(hints=(hint,), disturbance=disturbance)
    data = json.loads(report.to_json())
    meta, rows = data["metadata"], {r["name"]: r for r in data["rows"]}
    assert meta["inputs"] == ["1×3×224×224"] and meta["input_shapes"] == [[1, 3, 224, 224]]
    conv = rows["conv1"]
    assert conv["shape"] == [1, 64, 112, 112] and conv["shape_text"] == "1×64×112×112"
    # A share of the run is a fraction 0–1 named *_frac: the node's, the root module's, a hint's saving.
    assert conv["run_frac"] == pytest.approx(report.snapshot.nodes["conv1"].pct / 100)
    assert sum(r["run_frac"] for r in data["rows"]) == pytest.approx(report.attributed_s / report.run_median_s)
    assert data["modules"][0]["run_frac"] == pytest.approx(report.modules[0].inclusive_s / report.run_median_s)
    assert meta["hints"][0]["saving_frac"] == pytest.approx(0.125) and "saving_pct" not in meta["hints"][0]
    assert (meta["disturbance"]["median_lost_frac"], meta["disturbance"]["worst_lost_frac"]) == (0.25, 0.5)
    assert not [k for k, _ in walk(data) if k == "pct" or k.endswith("_pct") or k in ("share", "roofline_fraction")]
    loaded = Report.from_dict(data)  # and back: the percents the tables show
    assert loaded.hints[0].saving_pct == pytest.approx(12.5) and loaded.rows[1].info.shape == "1×64×112×112"
    assert loaded.table(top=0) == report.table(top=0)


# -- the report holds the snapshot: a new field is one line ---------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class KindTally:
    kind: str
    steps: int
    median_s: float | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class LaterSnapshot(Snapshot):
    """A snapshot as a later fxtui may have it: one more field, and no other line written for it."""

    kinds: tuple[KindTally, ...] = ()


def test_a_field_added_to_the_snapshot_is_saved_and_read_back_with_no_line_for_it() -> None:
    base = make_snapshot(resnet18_graph(), resnet18_medians())
    later = LaterSnapshot(**{f.name: getattr(base, f.name) for f in dataclasses.fields(base)},
                          kinds=(KindTally("train", 40, 0.012), KindTally("eval", 3)))  # fmt: skip
    meta = json.loads(json.dumps(metadata_json(later)))
    assert meta["kinds"] == [{"kind": "train", "steps": 40, "median_s": 0.012}, {"kind": "eval", "steps": 3,
                             "median_s": None}]  # fmt: skip
    assert fields_from_metadata(LaterSnapshot, meta)["kinds"] == later.kinds
    # The report reads every snapshot and graph field as its own: no field is copied into it.
    report = resnet18()
    assert (report.runs, report.model, report.eager_median_s) == (report.snapshot.runs, "resnet18",
                                                                  report.snapshot.eager_median_s)  # fmt: skip
    with pytest.raises(AttributeError, match="no attribute 'runz'"):
        _ = report.runz


def test_a_figure_that_is_not_finite_is_written_null_and_read_back_wherever_it_stands() -> None:
    """A rank on another node reports before its phases are measured, a spread has no eager run yet: NaN is
    written ``null``, and every float the file holds, set to ``null``, reads back (a collector's kept profile
    of a job in its first seconds must load when a new collector adopts the job)."""
    nan = math.nan
    report = two_ranks()
    steps = StepSummary("train", steps=3, warmup=1, sampled=1, phase_median_s=(0.001, nan, 0.002, 0.003, 0.0),
                        history=array("d", [0.01, nan]))  # fmt: skip
    ranks = RankSummary(0, (RankStats(0, steps=3, phase_median_s=(nan,) * 5), RankStats(1, node=1)))
    shown = dataclasses.replace(report.snapshot, steps=steps, rank_summary=ranks,
                                spreads=RunSpreads(eager=Spread(nan, nan, nan)))  # fmt: skip
    data = json.loads(Report.from_snapshot(shown).to_json())
    assert data["metadata"]["eager_range_s"] == [None, None, None]
    assert data["metadata"]["steps"]["history_s"] == [0.01, None]
    loaded = Report.from_dict(data)
    assert math.isnan(loaded.snapshot.steps.history[1]) and math.isnan(loaded.snapshot.spreads.eager.median)
    assert all(map(math.isnan, loaded.snapshot.rank_summary.ranks[0].phase_median_s))
    floats = [path for path in _paths(data) if isinstance(_at(data, path), float)]
    tried = set()
    for path in floats:
        pattern = tuple(p if isinstance(p, str) else "#" for p in path)
        if pattern in tried or pattern in _WHAT_MAKES_A_ROW:
            continue
        tried.add(pattern)
        changed = json.loads(json.dumps(data))
        *parent, last = path
        _at(changed, tuple(parent))[last] = None
        Report.from_dict(changed)  # loads: no "damaged"
    assert len(tried) > 25  # the steps, the ranks, the spreads and the rows: what a live job writes


#: The figures that make a node row and a module row what they are: a file without them is not a report.
_WHAT_MAKES_A_ROW = {("rows", "#", "median_s"), ("modules", "#", "inclusive_s")}


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path to every value in nested JSON data."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return [path] + [p for k, v in items for p in _paths(v, (*path, k))]


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


# -- every rank's rows ----------------------------------------------------------------------------------------


def test_every_rank_s_rows_are_saved_each_with_its_rank_and_read_back_apart() -> None:
    report = two_ranks()
    data = json.loads(report.to_json())
    ranks = [r["rank"] for r in data["rows"]]
    assert ranks == [0] * len(report.rows) + [1] * len(report.rows)
    by_rank = {(r["rank"], r["name"]): r for r in data["rows"]}
    assert by_rank[(1, "conv1")]["median_s"] == pytest.approx(1.5 * by_rank[(0, "conv1")]["median_s"])
    assert by_rank[(1, "conv1")]["slowest_rank"] == 1 and by_rank[(0, "conv1")]["rank_max_s"] > 0
    loaded = Report.from_dict(data)
    assert [r.name for r in loaded.rows] == [r.name for r in report.rows]  # the shown rank's, as the tables show
    assert sorted(loaded.rank_rows) == [1] and len(loaded.rank_rows[1]) == len(report.rows)
    assert loaded.to_dict()["rows"] == data["rows"]
    csv_rows = list(csv.DictReader(io.StringIO(report.to_csv())))
    assert [r["rank"] for r in csv_rows] == [str(r) for r in ranks]


# -- CSV cells ------------------------------------------------------------------------------------------------


def test_csv_cells_are_numbers_words_and_joined_lists_never_python_reprs() -> None:
    graph = resnet18_graph()
    nodes = tuple(
        dataclasses.replace(n, gradients=("fc.weight", "fc.bias")) if n.name == "fc" else n for n in graph.nodes
    )
    report = resnet18(graph=dataclasses.replace(graph, nodes=nodes))
    lines = list(csv.DictReader(io.StringIO(report.to_csv())))
    by_name = {line["name"]: line for line in lines}
    conv, fc = by_name["conv1"], by_name["fc"]
    assert conv["shape"] == "1×64×112×112" and conv["shape_text"] == "1×64×112×112"
    assert conv["gradients"] == "" and conv["phase"] == "" and conv["rank"] == ""  # empty list, missing values
    assert fc["gradients"] == "fc.weight;fc.bias"
    assert conv["noisy"] in ("true", "false") and float(conv["median_s"]) == pytest.approx(report.rows[1].median_s)
    assert int(conv["count"]) == report.rows[1].stats.count
    cells = [cell for line in lines for key, cell in line.items() if key != "shape_text"]
    assert not [c for c in cells if c in ("None", "True", "False", "()", "[]") or c.startswith(("(", "["))]


# -- pandas ---------------------------------------------------------------------------------------------------


def test_to_dataframe_gives_the_rows_as_the_json_writes_them(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    path = tmp_path / "run.json"
    path.write_text(two_ranks().to_json())
    report = fxtui.load(path)
    rows = report.to_dataframe()
    saved = json.loads(path.read_text())
    assert list(rows.columns) == list(saved["rows"][0]) and len(rows) == len(saved["rows"])
    assert rows.groupby("rank")["median_s"].sum()[1] == pytest.approx(1.5 * report.attributed_s)
    assert rows["run_frac"].dtype.kind == "f" and rows["median_s"].dtype.kind == "f"
    # Without fxtui: pd.read_json(path) reads one table and the file holds three (metadata, rows, modules), so
    # the documented calls pick the rows; the CSV is the rows alone.
    assert pd.DataFrame(saved["rows"]).shape == pd.json_normalize(saved, "rows").shape == rows.shape
    (tmp_path / "run.csv").write_text(report.to_csv())
    spread = pd.read_csv(tmp_path / "run.csv")
    assert spread.shape == rows.shape and spread["median_s"].dtype.kind == "f" and spread["noisy"].dtype == bool
    assert spread["rank"].tolist() == rows["rank"].tolist()
    modules = report.to_dataframe("modules")
    assert modules["path"].tolist() == [m.path for m in report.modules] and modules["inclusive_s"].dtype.kind == "f"
    with pytest.raises(FxtuiError, match="unknown table 'nodes'"):
        report.to_dataframe("nodes")


def test_to_dataframe_without_pandas_says_so_in_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if not installed
    with pytest.raises(FxtuiError, match=r"^to_dataframe\(\) needs pandas, .*pip install pandas$"):
        resnet18().to_dataframe()


# -- files of the previous version ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", V1_FILES, ids=lambda p: p.stem)
def test_a_file_of_version_1_loads_with_the_figures_it_holds(path: Path, tmp_path: Path) -> None:
    saved = json.loads(path.read_text())
    assert saved["version"] == 1
    report = fxtui.load(path)
    meta = saved["metadata"]
    assert (report.model, report.runs, report.mode, report.training) == (
        meta["model"], meta["runs"], meta["mode"], meta["training"],
    )  # fmt: skip
    assert [r.name for r in report.all_rows()] == [r["name"] for r in saved["rows"]]
    for row, old in zip(report.all_rows(), saved["rows"], strict=True):
        assert row.median_s == old["median_s"] and row.info.shape == old["shape"] and row.phase == old["phase"]
        assert row.stats.pct == pytest.approx(old["pct"])
    assert [m.path for m in report.modules] == [m["path"] for m in saved["modules"]]
    assert report.fidelity == pytest.approx(meta["fidelity"])
    if meta["steps"] is not None:
        steps = meta["steps"]
        assert report.steps.steps == steps["steps"] and len(report.steps.history) == len(steps["history_s"])
    if meta["ranks"] is not None:
        assert report.rank_summary.shown == meta["ranks"]["shown"] and len(report.rank_summary.ranks) == 2
    if meta.get("peak_live_bytes") is not None:
        assert report.memory.peak_live_bytes == meta["peak_live_bytes"]
    assert report.header() and report.table(top=0) and report.module_table(top=0)
    # Saved again it is a version-2 file that reads back the same.
    again = tmp_path / "again.json"
    again.write_text(report.to_json())
    reread = fxtui.load(again)
    assert json.loads(again.read_text())["version"] == 2
    assert reread.table(top=0) == report.table(top=0) and reread.header() == report.header()


def test_a_version_1_program_s_calls_are_evaluation_calls_now() -> None:
    steps = {"kind": "call", "steps": 9, "warmup": 2, "sampled": 3, "phase_median_s": {"forward": 0.01}}
    meta = {"model": "infer.py", "runs": 3, "mode": "run", "steps": steps,
            "program": {"command": ["infer.py"], "exit_code": 0}}  # fmt: skip
    rows = [{"name": "0 · linear", "module_path": "0", "median_s": 1e-3, "pct": 10.0, "shape": "4×8"}]
    report = Report.from_dict({"schema": "fxtui.report", "version": 1, "metadata": meta, "rows": rows, "modules": []})
    assert report.steps.kind == "eval" and report.steps.median("forward") == 0.01 and report.mode == "run"
    assert report.rows[0].stats.pct == 10.0 and report.rows[0].info.shape == "4×8"
    assert json.loads(report.to_json())["rows"][0]["shape"] == [4, 8]


def test_a_programs_loss_is_named_by_the_ops_it_ends_in() -> None:
    from fxtui.report.data import loss_name

    assert loss_name({"_log_softmax", "nll_loss_forward", "div"}) == "cross-entropy"
    assert loss_name({"nll_loss_forward"}) == "NLL"
    assert loss_name({"sigmoid", "binary_cross_entropy"}) == "binary cross-entropy"
    assert loss_name({"sub", "pow", "mean"}) == "computed by the script"
    assert loss_name(set()) == ""
