"""fxtui diff: two saved runs compared per node and per module."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fxtui.commands.cli import main
from fxtui.report.api import Report
from fxtui.report.data import SCHEMA, SCHEMA_VERSION
from fxtui.report.diff import diff_reports
from fxtui.report.findings_text import diff_table

pytestmark = pytest.mark.unit


def saved(rows: dict[str, float], modules: dict[str, float], run: float) -> dict:
    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "metadata": {
            "model": "m",
            "inputs": ["1×4"],
            "threads": 1,
            "runs": 5,
            "run_median_s": run,
            "eager_median_s": run,
        },
        "rows": [{"name": n, "module_path": n.rsplit("_", 1)[0], "median_s": t} for n, t in rows.items()],
        "modules": [{"path": p, "inclusive_s": t} for p, t in modules.items()],
    }


def test_changes_are_sorted_by_size_and_one_sided_nodes_are_listed() -> None:
    before = saved({"conv_1": 3e-3, "bn_1": 1e-3, "relu_1": 2e-4}, {"": 4.2e-3, "conv": 3e-3}, 4.5e-3)
    after = saved({"conv_1": 2.5e-3, "relu_1": 3e-4, "add_1": 1e-4}, {"": 2.9e-3, "conv": 2.5e-3}, 3e-3)
    d = diff_reports(Report.from_dict(before), Report.from_dict(after))
    assert [c.name for c in d.nodes] == ["conv_1", "relu_1"]
    assert d.nodes[0].delta_s == pytest.approx(-0.5e-3)
    assert d.nodes[1].delta_pct == pytest.approx(50.0)
    assert d.only_before == ["bn_1"] and d.only_after == ["add_1"]
    # Modules too: after minus before, largest change first.
    assert [(m.name, m.before_s, m.after_s) for m in d.modules] == [("", 4.2e-3, 2.9e-3), ("conv", 3e-3, 2.5e-3)]
    assert [m.delta_s for m in d.modules] == [pytest.approx(-1.3e-3), pytest.approx(-0.5e-3)]
    assert d.run.delta_pct == pytest.approx(-100 / 3)
    text = diff_table(d)
    assert "only in before (1): bn_1" in text and "only in after (1): add_1" in text
    assert text.index("conv_1") < text.index("relu_1")


def test_the_command_compares_two_files_and_rejects_foreign_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b, bad = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "bad.json"
    a.write_text(json.dumps(saved({"x_1": 1e-3}, {"": 1e-3}, 1e-3)))
    b.write_text(json.dumps(saved({"x_1": 2e-3}, {"": 2e-3}, 2e-3)))
    bad.write_text('{"rows": []}')
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "x_1" in out and "+100.0%" in out
    assert main(["diff", str(a), str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not an fxtui report" in err
    assert main(["diff", str(a)]) == 2


def with_spread(report: dict, **ranges: tuple[float, float]) -> dict:
    """Give the named rows a fastest run and a p90, as a saved run has them."""
    for row in report["rows"]:
        if row["name"] in ranges:
            row["min_s"], row["p90_s"] = ranges[row["name"]]
    return report


def test_a_change_within_either_runs_own_spread_is_marked() -> None:
    # steady_1 moved 5%, inside its own fastest-to-p90 range; real_1 doubled, far outside both ranges;
    # flip_1 ran near its fastest in one session and at 3× it for most of the other (an unsteady node).
    before = with_spread(
        saved({"steady_1": 1.00e-3, "real_1": 1e-3, "flip_1": 3.0e-4, "bare_1": 1e-3}, {}, 4e-3),
        steady_1=(0.93e-3, 1.08e-3),
        real_1=(0.95e-3, 1.05e-3),
        flip_1=(1.0e-4, 3.2e-4),
    )
    after = with_spread(
        saved({"steady_1": 1.05e-3, "real_1": 2e-3, "flip_1": 1.1e-4, "bare_1": 3e-3}, {}, 5e-3),
        steady_1=(0.97e-3, 1.12e-3),
        real_1=(1.9e-3, 2.1e-3),
        flip_1=(1.0e-4, 1.3e-4),
    )
    d = diff_reports(Report.from_dict(before), Report.from_dict(after))
    marked = {c.name: c.within_spread for c in d.nodes}
    # bare_1 has no range (a file saved without min/p90): no evidence either way, no mark.
    assert marked == {"steady_1": True, "real_1": False, "flip_1": True, "bare_1": False}
    text = diff_table(d)
    row = {name: next(line for line in text.splitlines() if line.startswith(name)) for name in marked}
    assert {name for name in marked if row[name].rstrip().endswith("~")} == {"steady_1", "flip_1"}
    assert "~ 2 of 4 node changes lie within what either run measured" in text


def test_overlapping_median_ranges_mark_a_change_their_fastest_to_p90_ranges_would_not() -> None:
    # Both medians lie outside the other run's fastest-to-p90 range, but their p25–p75 ranges overlap:
    # the two medians are not told apart. far_1's ranges are apart, so its change is real.
    before = saved({"near_1": 1.00e-3, "far_1": 1.0e-3}, {}, 3e-3)
    after = saved({"near_1": 1.10e-3, "far_1": 1.5e-3}, {}, 3e-3)
    for report, ranges in (
        (before, {"near_1": (0.99e-3, 1.02e-3, 0.98e-3, 1.06e-3), "far_1": (0.99e-3, 1.02e-3, 0.98e-3, 1.03e-3)}),
        (after, {"near_1": (1.08e-3, 1.2e-3, 1.04e-3, 1.13e-3), "far_1": (1.45e-3, 1.6e-3, 1.4e-3, 1.55e-3)}),
    ):
        for row in report["rows"]:
            row["min_s"], row["p90_s"], row["q25_s"], row["q75_s"] = ranges[row["name"]]
    d = diff_reports(Report.from_dict(before), Report.from_dict(after))
    assert {c.name: c.within_spread for c in d.nodes} == {"near_1": True, "far_1": False}


def test_no_mark_no_legend_and_settings_that_differ_are_named() -> None:
    before, after = saved({"x_1": 1e-3}, {}, 1e-3), saved({"x_1": 2e-3}, {}, 2e-3)
    same = diff_reports(Report.from_dict(before), Report.from_dict(after))
    assert same.differences == [] and "settings" not in diff_table(same) and "~" not in diff_table(same)
    after["metadata"]["threads"] = 2
    after["metadata"]["inputs"] = ["2×4"]
    d = diff_reports(Report.from_dict(before), Report.from_dict(after))
    assert d.differences == ["inputs 1×4 → 2×4", "threads 1 → 2"]
    assert "settings   differ: inputs 1×4 → 2×4; threads 1 → 2" in diff_table(d)


def _generation(report: dict, prefill: dict[str, float], decode: dict[str, float]) -> dict:
    """``report`` as a generation's: modules with their prefill (per call) and decode (per token) times."""
    report["metadata"]["generation"] = {"new_tokens": 8, "prompt_tokens": 16, "batch": 1}
    for m in report["modules"]:
        m["prefill_s"], m["decode_s"] = prefill.get(m["path"], 0.0), decode.get(m["path"], 0.0)
    return report


def test_two_generations_compare_each_modules_prefill_and_decode_apart() -> None:
    modules = {"": 5e-3, "mlp": 4e-3}
    before = _generation(saved({"mlp_1": 4e-3}, modules, 5e-3), {"": 3e-3, "mlp": 2e-3}, {"": 2e-3, "mlp": 1e-3})
    after = _generation(saved({"mlp_1": 3e-3}, modules, 4e-3), {"": 3e-3, "mlp": 2.5e-3}, {"": 2e-3, "mlp": 0.5e-3})
    changes = {
        c.name: (c.before_s, c.after_s) for c in diff_reports(Report.from_dict(before), Report.from_dict(after)).modules
    }
    assert changes["mlp (prefill)"] == (2e-3, 2.5e-3) and changes["mlp (decode)"] == (1e-3, 0.5e-3)
    assert "(root) (prefill)" not in changes and " (prefill)" not in changes  # the root's own line is the whole
    # One side a generation, the other not: no phase lines (a prefill is not compared with a whole run).
    plain = saved({"mlp_1": 3e-3}, modules, 4e-3)
    one_sided = {c.name for c in diff_reports(Report.from_dict(before), Report.from_dict(plain)).modules}
    assert one_sided == {"", "mlp"}
