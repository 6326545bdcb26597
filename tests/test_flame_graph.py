"""The flame-graph exports: speedscope's JSON and folded stacks draw the module tree, each node a leaf frame, each
module as wide as its inclusive time; every command offers them, and they are written whole or not at all."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from fxtui.commands.cli import main
from fxtui.core.errors import FxtuiError
from fxtui.core.nodes import module_ancestors
from fxtui.report.api import Report
from fxtui.report.export import FORMATS, export
from tests.test_report_files import resnet18, two_ranks

pytestmark = pytest.mark.e2e

#: How speedscope reads a folded line (its importer of flamegraph.pl's format): frames, a space, a whole number.
FOLDED_LINE = re.compile(r"^(.*) (\d+)$")


def test_speedscope_samples_nest_as_the_module_tree_and_weigh_the_node_medians() -> None:
    report = resnet18()
    profile = json.loads(json.dumps(report.to_speedscope()))
    assert profile["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = [f["name"] for f in profile["shared"]["frames"]]
    (sampled,) = profile["profiles"]
    assert (sampled["type"], sampled["unit"], sampled["startValue"]) == ("sampled", "seconds", 0)
    samples, weights = sampled["samples"], sampled["weights"]
    assert len(samples) == len(weights) == len(report.rows)
    classes = {m.path: m.class_name for m in report.modules}
    for row, stack, weight in zip(report.rows, samples, weights, strict=True):
        names = [frames[i] for i in stack]
        # root (the model), each module from the top down to the node's own, then the node
        modules = [p for p in module_ancestors(row.module_path) if p]
        assert names == ["resnet18", *(f"{p} ({classes[p]})" for p in modules), row.name]
        assert weight == row.median_s
    assert sampled["endValue"] == pytest.approx(sum(weights)) and sum(weights) == pytest.approx(report.attributed_s)
    # A module's frame is as wide as its inclusive time, as in the module table.
    width: dict[int, float] = defaultdict(float)
    for stack, weight in zip(samples, weights, strict=True):
        for i in set(stack):
            width[i] += weight
    for module in report.modules:
        name = f"{module.path} ({module.class_name})" if module.path else "resnet18"
        assert width[frames.index(name)] == pytest.approx(module.inclusive_s), module.path


def test_folded_stacks_are_the_same_stacks_in_nanoseconds() -> None:
    report = resnet18()
    lines = report.to_folded().splitlines()
    assert len(lines) == len(report.rows)
    total = 0
    for line, row in zip(lines, report.rows, strict=True):
        found = FOLDED_LINE.match(line)
        assert found, line
        frames = found.group(1).split(";")
        assert frames[0] == "resnet18" and frames[-1] == row.name
        assert len(frames) == len(module_ancestors(row.module_path)) + 1
        assert int(found.group(2)) == round(row.median_s * 1e9)
        total += int(found.group(2))
    assert total == pytest.approx(report.attributed_s * 1e9, abs=len(lines))


def test_a_distributed_job_draws_each_rank() -> None:
    report = two_ranks()
    profiles = report.to_speedscope()["profiles"]
    assert [p["name"].split(":")[0] for p in profiles] == ["resnet18 rank 0", "resnet18 rank 1"]
    assert sum(profiles[1]["weights"]) == pytest.approx(1.5 * sum(profiles[0]["weights"]))
    firsts = {line.split(";")[0] for line in report.to_folded().splitlines()}
    assert firsts == {"rank 0", "rank 1"}


def test_a_report_with_nothing_timed_writes_nothing(tmp_path: Path) -> None:
    empty = resnet18().replace(rows=[])
    target = tmp_path / "out.speedscope.json"
    target.write_text("previous")
    with pytest.raises(FxtuiError, match="no timed node to draw as a flame graph"):
        export(empty, {"speedscope": str(target), "folded": str(tmp_path / "out.folded")})
    assert target.read_text() == "previous" and not (tmp_path / "out.folded").exists()


@pytest.mark.parametrize("command", [["resnet18"], ["run"], ["attach"]], ids=["model", "run", "attach"])
def test_every_command_offers_both_exports(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with contextlib.suppress(SystemExit):  # argparse's --help exits; fxtui run's returns
        main([*command, "--help"])
    said = capsys.readouterr().out
    for name in ("speedscope", "folded"):
        assert FORMATS[name].option in said


def test_the_command_writes_both_files(tmp_path: Path) -> None:
    (tmp_path / "tiny.py").write_text(
        "import torch\nfrom torch import nn\n\n"
        "def make():\n    return nn.Sequential(nn.Linear(8, 8), nn.ReLU()), (torch.randn(2, 8),)\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "fxtui", "tiny.py:make", "--once", "--runs", "1", "--warmup", "0",
         "--speedscope", "run.speedscope.json", "--folded", "run.folded", "--json", "run.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "wrote run.speedscope.json" in done.stdout and "wrote run.folded" in done.stdout
    saved = Report.load(tmp_path / "run.json")
    profile = json.loads((tmp_path / "run.speedscope.json").read_text())
    assert sum(profile["profiles"][0]["weights"]) == pytest.approx(saved.attributed_s)
    folded = (tmp_path / "run.folded").read_text().splitlines()
    assert {line.rsplit(" ", 1)[0].split(";")[-1] for line in folded} <= {r.name for r in saved.rows}
    assert dataclasses.is_dataclass(saved)
