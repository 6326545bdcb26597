"""The README's Python API example runs as printed, and the rows have every field it lists."""

from __future__ import annotations

import contextlib
import inspect
import io
import re
import textwrap
from pathlib import Path

import pytest

from fxtui.report.api import Report

pytestmark = pytest.mark.e2e

README = Path(__file__).resolve().parent.parent / "README.md"


def python_block(heading: str) -> str:
    """The first python block of the README's section under ``heading``."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, f"the README's {heading!r} section has no python block"
    return found.group(1)


def run_printed(code: str, name: str) -> str:
    """Run ``code`` as printed; what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, name, "exec"), {})
    return out.getvalue()


def saved_profile(folder: Path) -> Report:
    """What `fxtui resnet18 --once --json run.json` writes, in ``folder`` (the demo's fixed figures, not a
    measurement)."""
    from fxtui.ui.demo.demo_source import make_snapshot, resnet18_graph, resnet18_medians

    saved = Report.from_snapshot(make_snapshot(resnet18_graph(), resnet18_medians()))
    (folder / "run.json").write_text(saved.to_json())
    return saved


def test_the_readme_api_example_runs_as_printed() -> None:
    code = python_block("## Python API")
    scope: dict[str, object] = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), scope)
    report = scope["report"]
    printed = out.getvalue()
    assert "median" in printed and "conv1" in printed  # the table it prints names resnet18's nodes
    # "report.rows  # one per FX node, graph order: name, op, target, …": each field is there.
    listed = re.search(r"report\.rows\s+#.*?:\s*(.*?)(?:\n(?!#)|$)", code, re.S)
    assert listed, "the README no longer lists the rows' fields"
    names = [n.strip(" ,.#\n") for n in re.split(r"[,\n]", listed.group(1))]
    names = [n for n in names if re.fullmatch(r"[a-z_0-9]+", n)]
    assert len(names) >= 10, names
    row = report.rows[0]  # type: ignore[attr-defined]
    for name in names:
        assert hasattr(row, name), f"report.rows[0] has no {name}"
    assert report.capture in ("fx", "dynamo")  # type: ignore[attr-defined]
    # The figure the README prints is this ratio of the report's own medians (how close to 1 it comes on a quiet
    # machine is a measurement, tests/benchmarks/bench_engine.py; under load it is anything).
    rows, eager = report.rows, report.eager_median_s  # type: ignore[attr-defined]
    assert report.fidelity == pytest.approx(sum(r.median_s for r in rows) / eager)  # type: ignore[attr-defined]


def load_example() -> str:
    """The example in ``fxtui.load``'s docstring: reading back a file ``--json`` wrote."""
    import fxtui

    doc = inspect.getdoc(fxtui.load) or ""
    found = re.search(r"::\n\n((?:    .*\n|\n)+)", doc + "\n")
    assert found, "fxtui.load's docstring has no example"
    return textwrap.dedent(found.group(1))


def test_the_load_example_runs_as_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pandas")
    saved = saved_profile(tmp_path)
    monkeypatch.chdir(tmp_path)
    printed = run_printed(load_example(), "fxtui.load")
    assert "model      resnet18" in printed and "layer4_1_conv2" in printed  # the header and the table
    # and the frame's five modules whose own nodes take longest, largest first
    by_path: dict[str, float] = {}
    for row in saved.rows:
        by_path[row.module_path] = by_path.get(row.module_path, 0.0) + row.median_s
    top5 = sorted(by_path, key=lambda p: -by_path[p])[:5]
    series = printed.rsplit("module_path", 1)[1].splitlines()[1:6]
    assert [line.split()[0] for line in series] == top5


def test_the_readme_files_example_runs_as_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pandas")
    saved_profile(tmp_path)
    monkeypatch.chdir(tmp_path)
    printed = run_printed(python_block("## Files other tools read"), "README.md")
    assert "layer4_1_conv2" in printed and "module_path" in printed  # the table, then the frame's top modules
