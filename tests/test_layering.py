"""The engine never imports the UI toolkit; the UI never imports torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "fxtui"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def files(layer: str) -> list[Path]:
    found = sorted((PACKAGE / layer).rglob("*.py"))
    assert found, f"no files under fxtui/{layer}"
    return found


@pytest.mark.parametrize("path", files("engine"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_engine_does_not_import_the_ui_toolkit(path: Path) -> None:
    bad = {m for m in imported_modules(path) if m.split(".")[0] in {"textual", "rich"} or m.startswith("fxtui.ui")}
    assert not bad, f"{path.name} imports {sorted(bad)}"


@pytest.mark.parametrize("path", files("ui"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_ui_does_not_import_torch_or_a_timing_clock(path: Path) -> None:
    modules = imported_modules(path)
    bad = {m for m in modules if m.split(".")[0] in {"torch", "torchvision"}}
    assert not bad, f"{path.name} imports {sorted(bad)}"
    text = path.read_text(encoding="utf-8")
    assert "perf_counter" not in text or path.name.startswith("bench"), f"{path.name} reads a timing clock"


def test_importing_the_app_does_not_load_torch() -> None:
    code = (
        "import sys, fxtui.cli, fxtui.engine.remote, fxtui.ui.app; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'torchvision')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
