"""The README's Python API example runs as printed, and the rows have every field it lists."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def api_block() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### Python API") :]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "the README's Python API section has no python block"
    return found.group(1)


def test_the_readme_api_example_runs_as_printed() -> None:
    code = api_block()
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
    assert 0.5 < report.fidelity < 1.5  # type: ignore[attr-defined]
