"""The layers, by package: core is torch-free data both others share; the engine never imports the UI
toolkit; the UI imports core, never the engine or torch."""

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


@pytest.mark.parametrize("path", files("core"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_core_imports_neither_torch_nor_the_ui_toolkit_nor_the_other_layers(path: Path) -> None:
    bad = {
        m
        for m in imported_modules(path)
        if m.split(".")[0] in {"torch", "torchvision", "textual", "rich", "transformers"}
        or m.startswith(("fxtui.engine", "fxtui.ui"))
        or m in {"fxtui.cli", "fxtui.headless"}
    }
    assert not bad, f"{path.name} imports {sorted(bad)}"


@pytest.mark.parametrize("path", files("engine"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_engine_does_not_import_the_ui_toolkit(path: Path) -> None:
    bad = {m for m in imported_modules(path) if m.split(".")[0] in {"textual", "rich"} or m.startswith("fxtui.ui")}
    assert not bad, f"{path.name} imports {sorted(bad)}"


#: Modules that read a clock, and the names that read one wherever they come from (an event loop's ``time()``,
#: ``datetime.now()``, ``perf_counter_ns`` imported under another name …).
CLOCK_MODULES = {"time", "datetime"}
CLOCK_CALLS = {"time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "process_time",
               "thread_time", "clock_gettime", "clock_gettime_ns", "now", "utcnow", "today"}  # fmt: skip


def clock_reads(path: Path) -> list[str]:
    """Where ``path`` imports a clock module or calls a clock, as ``line: what``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] in CLOCK_MODULES]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in CLOCK_MODULES:
            found.append(f"{node.lineno}: from {node.module} import …")
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in CLOCK_CALLS:
                found.append(f"{node.lineno}: {ast.unparse(func)}()")
    return found


@pytest.mark.parametrize("path", files("ui"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_ui_does_not_import_torch_or_read_a_clock(path: Path) -> None:
    modules = imported_modules(path)
    bad = {m for m in modules if m.split(".")[0] in {"torch", "torchvision"} or m.startswith("fxtui.engine")}
    assert not bad, f"{path.name} imports {sorted(bad)}"
    # Timing is the engine's: the UI paces itself with Textual's timers, and a clock read here would tempt a
    # figure computed from the app's own time.
    assert not clock_reads(path), f"{path.name} reads a clock: {clock_reads(path)}"


def test_the_clock_check_finds_every_way_of_reading_one(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import time as t\nfrom time import perf_counter_ns as pc\nimport asyncio\n"
        "a = t.monotonic()\nb = pc()\nc = asyncio.get_event_loop().time()\nd = datetime.datetime.now()\n"
        "e = self.sort_key()\n"
    )
    assert clock_reads(sample) == [
        "1: import time",
        "2: from time import …",
        "4: t.monotonic()",
        "6: asyncio.get_event_loop().time()",
        "7: datetime.datetime.now()",
    ]


SHIPPED = [p for p in PACKAGE.rglob("*.py") if (PACKAGE / "ui" / "demo") not in p.parents]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_shipped_app_does_not_import_the_demo(path: Path) -> None:
    # The demo and screenshot tooling serve tests, benchmarks and pictures; the app runs without them.
    bad = {m for m in imported_modules(path) if m == "fxtui.ui.demo" or m.startswith("fxtui.ui.demo.")}
    assert not bad, f"{path.name} imports {sorted(bad)}"


def test_importing_the_app_does_not_load_torch() -> None:
    code = (
        "import sys, fxtui.cli, fxtui.engine.remote, fxtui.ui.app; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'torchvision')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(path: Path, known: set[str]) -> set[str]:
    """fxtui modules ``path`` imports when it runs (anywhere in it, but not under ``if TYPE_CHECKING``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {
        id(child)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for child in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module in known:
            subs = {f"{node.module}.{a.name}" for a in node.names} & known
            found.update(subs or {node.module})
    return found


def test_no_import_cycle_inside_fxtui() -> None:
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    known = set(paths)
    edges = {name: _runtime_imports(path, known) - {name} for name, path in paths.items()}
    cycles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for other in sorted(edges[name]):
            if state.get(other) == 1:
                cycles.append(" → ".join([*trail[trail.index(other) :], other]))
            elif other not in state:
                visit(other, [*trail, other])
        state[name] = 2

    for name in sorted(edges):
        if name not in state:
            visit(name, [name])
    assert not cycles, "import cycles: " + "; ".join(cycles)


def _textual_private_names() -> set[str]:
    """Private names of the Textual classes fxtui builds on: class attributes and those a new instance sets."""
    from textual import widgets
    from textual.app import App
    from textual.dom import DOMNode
    from textual.message import Message
    from textual.screen import ModalScreen, Screen
    from textual.scroll_view import ScrollView
    from textual.widget import Widget

    classes: list[type] = [App, Screen, ModalScreen, ScrollView, Widget, DOMNode, Message]
    classes += [widgets.Tree, widgets.Input, widgets.Static, widgets.Footer, widgets.DataTable, widgets.OptionList]
    instances = [App(), Screen(), ModalScreen(), ScrollView(), widgets.Tree("t"), widgets.Input(), widgets.Static()]
    instances += [widgets.Footer(), widgets.DataTable(), widgets.OptionList()]
    names: set[str] = set()
    for found in [dir(c) for c in classes] + [vars(i) for i in instances]:
        names.update(n for n in found if n.startswith("_") and not n.startswith("__"))
    return names


def test_no_module_touches_textual_private_names() -> None:
    # Textual's private names change without notice: fxtui builds on its public API only.
    private = _textual_private_names()
    touched = []
    for path in files("ui"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in private:
                touched.append(f"{path.relative_to(PACKAGE)}:{node.lineno} .{node.attr}")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in private:
                touched.append(f"{path.relative_to(PACKAGE)}:{node.lineno} def {node.name}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in private:
                touched.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.value!r}")
    assert not touched, "Textual private names: " + ", ".join(touched)
