"""The house by process: each folder is one process's code and imports only what that process may load;
core is torch-free data every process shares."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parent.parent / "fxtui"


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports or names for importing, anywhere in it (see :func:`source_imports`)."""
    return source_imports(path.read_text(encoding="utf-8"), _module_name(path), path.name == "__init__.py")


#: A string that names an fxtui module (``fxtui.measure.capture.fx``) or a callable in one (``…fx:capture_fx``):
#: a registry entry or an ``importlib`` argument is an import that ``import`` statements do not show.
MODULE_STRING = re.compile(r"^fxtui(\.[A-Za-z_]\w*)+(:[A-Za-z_]\w*)?$")
#: Calls whose first argument is a module imported by its name.
IMPORT_CALLS = {"import_module", "__import__"}
#: Module names handed to another process (``python -m``), not imported by the file that names them.
STARTED_IN_ANOTHER_PROCESS = {"fxtui.agent.boot"}


def source_imports(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every module ``source`` (the text of ``module``) imports: ``import`` statements, relative ones resolved
    (``from ..agent import pace`` in ``fxtui.measure.x`` is ``fxtui.agent.pace``), ``importlib.import_module`` and
    ``__import__`` calls on a string or on a name bound to one, and every string that names an fxtui module (a
    registry the file imports from on demand), at the top, inside functions and under ``if TYPE_CHECKING``."""
    tree = ast.parse(source)
    package = module if is_package else module.rpartition(".")[0]
    strings = {
        target.id: node.value.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, package)
            # ``from fxtui import agent`` and ``from .. import agent`` import the folder, not the package above it.
            subs = [f"{base}.{alias.name}" for alias in node.names if base in {"fxtui", package} or not node.module]
            names.update(subs or {base})
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            first = node.args[0]
            named = strings.get(first.id) if isinstance(first, ast.Name) else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                named = first.value
            if called in IMPORT_CALLS and named:
                names.add(named)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_STRING.match(node.value):
            name = node.value.partition(":")[0]
            if name not in STARTED_IN_ANOTHER_PROCESS:
                names.add(name)
    return names


def _absolute(module: str | None, level: int, package: str) -> str:
    """The absolute name of ``from <level dots><module> import …`` written in ``package``."""
    if level == 0:
        return module or ""
    parts = package.split(".")
    base = parts[: len(parts) - (level - 1)] if level - 1 < len(parts) else []
    return ".".join([*base, module] if module else base)


def files(layer: str) -> list[Path]:
    found = sorted((PACKAGE / layer).rglob("*.py"))
    assert found, f"no files under fxtui/{layer}"
    return found


#: Each folder's process, and the fxtui folders its files may import (besides the standard library and numpy).
#: The folder is the rule: a file's place says which process runs it and so what it may load.
ALLOWED: dict[str, set[str]] = {
    "core": {"core"},  # torch-free data every process shares
    "wire": {"core", "wire"},  # what crosses a process boundary: messages, commands, packing, sockets, job dirs
    "report": {"core", "report"},  # text, JSON, CSV, traces, loading: any process, never torch
    "ops": {"core", "ops"},  # the per-op timer, inside whichever process times ops
    "agent": {"core", "wire", "ops", "agent"},  # inside the user's program: nothing heavy, nothing of the collector's
    "jobs": {"core", "wire", "report", "jobs"},  # fxtui run's collector and daemon: torch-free processes
    "measure": {"core", "wire", "ops", "report", "measure"},  # the engine child of `fxtui MODEL`
    "ui": {"core", "wire", "report", "ui"},  # Textual only: never torch, never the engine
    # the CLI: the top (and the package's API, for its version)
    "commands": {"core", "wire", "report", "ops", "agent", "jobs", "measure", "ui", "commands", "__init__"},
}
#: The package's own two files and the folders each may import: the Python API (``fxtui.profile`` runs the
#: engine, ``fxtui.watch`` the agent and a collector, ``fxtui.load`` the report; never the CLI or the app) and
#: ``python -m fxtui`` (the CLI). Importing the API is cheap besides: see
#: :func:`test_importing_fxtui_imports_nothing_of_its_own`.
TOP_FILES: dict[str, set[str]] = {
    "__init__.py": {"core", "wire", "report", "agent", "jobs", "measure", "__init__"},
    "__main__.py": {"commands"},
}
#: Folders whose processes never load torch (nor what pulls it in).
TORCH_FREE = {"core", "wire", "report", "jobs", "ui"}
#: Folders that never import the UI toolkit.
NO_TEXTUAL = {"core", "wire", "report", "ops", "agent", "jobs", "measure"}


def _fxtui_folder(module: str) -> str | None:
    """The folder an fxtui module lives in; ``__init__`` for the package itself (its API), ``__main__`` for
    ``python -m fxtui``."""
    parts = module.split(".")
    if parts[0] != "fxtui":
        return None
    return "__init__" if len(parts) == 1 else parts[1]


def forbidden_imports(source: str, module: str, is_package: bool = False) -> list[str]:
    """The imports of ``source`` (the text of ``module``) that its folder's rule forbids, in every form
    :func:`source_imports` finds."""
    if module in {"fxtui", "fxtui.__main__"}:
        folder, rule = module, TOP_FILES["__init__.py" if module == "fxtui" else "__main__.py"]
    else:
        folder = module.split(".")[1]
        rule = ALLOWED[folder]
    return sorted(m for m in source_imports(source, module, is_package) if not _may_import(folder, rule, m))


@pytest.mark.parametrize("folder", sorted(ALLOWED))
def test_each_folder_imports_only_the_folders_its_process_may(folder: str) -> None:
    bad = [f"{path.relative_to(PACKAGE)} imports {module}" for path in files(folder) for module in forbidden_in(path)]
    assert not bad, "; ".join(bad)


@pytest.mark.parametrize("name", sorted(TOP_FILES))
def test_the_package_files_import_only_what_their_rule_allows(name: str) -> None:
    bad = forbidden_in(PACKAGE / name)
    assert not bad, f"{name} imports {bad}"


def forbidden_in(path: Path) -> list[str]:
    """The imports of the file ``path`` that its folder's rule forbids."""
    return forbidden_imports(path.read_text(encoding="utf-8"), _module_name(path), path.name == "__init__.py")


def test_importing_fxtui_imports_nothing_of_its_own() -> None:
    # ``import fxtui`` runs before any command (and in a program that only reads a profile back): the API imports
    # what each function needs when it is called, never at the top (``if TYPE_CHECKING`` aside).
    eager = top_level_imports((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    assert eager and not {m for m in eager if m.split(".")[0] in {"fxtui", "torch", "numpy", "textual"}}, eager


def top_level_imports(source: str) -> set[str]:
    """Modules the module body imports as it runs (not inside functions, classes or ``if TYPE_CHECKING``)."""
    names: set[str] = set()
    body = list(ast.parse(source).body)
    while body:
        node = body.pop()
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
        elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
            body += node.body + node.orelse
        elif isinstance(node, ast.Try):
            body += node.body + node.orelse + node.finalbody + [h for x in node.handlers for h in x.body]
    return names


#: Modules of other folders named in the samples below, each importing ``fxtui.agent.pace`` into ``measure/``
#: (which may not import the agent) in another form.
FORBIDDEN_FORMS = {
    "absolute": "from fxtui.agent import pace",
    "plain": "import fxtui.agent.pace as pace",
    "from the package": "from fxtui import agent",
    "relative": "from ..agent import pace",
    "relative package": "from .. import agent",
    "relative, two levels": "from ...agent import pace",  # in fxtui.measure.capture.x
    "inside a function": "def f():\n    from ..agent.pace import Pace\n    return Pace",
    "under TYPE_CHECKING": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from fxtui.agent import pace",
    "importlib": "import importlib\npace = importlib.import_module('fxtui.agent.pace')",
    "import_module": "from importlib import import_module\npace = import_module('fxtui.agent.pace')",
    "__import__": "pace = __import__('fxtui.agent.pace')",
    "by a name": "import importlib\nPACE = 'fxtui.agent.pace'\ndef f():\n    return importlib.import_module(PACE)",
    "in a registry": "RUNNERS = {'pace': 'fxtui.agent.pace:Pace'}",
    "the API": "import importlib\nfxtui = importlib.import_module('fxtui')",
}


@pytest.mark.parametrize("form", sorted(FORBIDDEN_FORMS))
def test_the_folder_rule_catches_every_form_of_import(form: str) -> None:
    module = "fxtui.measure.capture.sample" if "two levels" in form else "fxtui.measure.sample"
    assert forbidden_imports(FORBIDDEN_FORMS[form], module), f"{form} import not caught"


def test_the_folder_rule_lets_a_folder_import_its_own_and_allowed_folders() -> None:
    source = (
        "import importlib\nfrom . import timing\nfrom ..core import snapshot\nfrom ..ops.recorder import Recorder\n"
        "from fxtui.report.api import Report\nimport torch\nt = importlib.import_module('fxtui.measure.timing')\n"
        "CAPTURERS = {'fx': 'fxtui.measure.capture.fx:capture_fx'}\n"
    )
    assert forbidden_imports(source, "fxtui.measure.sample") == []
    assert forbidden_imports("import importlib\ntorch = importlib.import_module('torch')", "fxtui.jobs.sample")
    assert forbidden_imports("t = __import__('textual.app')", "fxtui.core.sample")
    # A module another process runs (``python -m``) is named, not imported.
    assert forbidden_imports("ARGV = ['-m', 'fxtui.agent.boot']", "fxtui.jobs.sample") == []


def test_the_package_rules_catch_a_forbidden_import() -> None:
    assert forbidden_imports("from fxtui.ui.app import App", "fxtui", is_package=True) == ["fxtui.ui.app"]
    assert forbidden_imports("from .commands.cli import main", "fxtui", is_package=True) == ["fxtui.commands.cli"]
    assert forbidden_imports("from fxtui.measure.session import Session", "fxtui.__main__") == ["fxtui.measure.session"]
    assert top_level_imports("import os\nfrom fxtui.report.api import Report\ndef f():\n    import torch\n") == {
        "os",
        "fxtui.report.api",
    }


def _may_import(folder: str, rule: set[str], module: str) -> bool:
    top = module.split(".")[0]
    if top == "fxtui":
        return _fxtui_folder(module) in rule
    if top in {"torch", "torchvision", "transformers"}:
        return folder not in TORCH_FREE
    if top in {"textual", "rich"}:
        return folder not in NO_TEXTUAL
    return True


def test_every_file_is_in_a_folder_of_a_known_process() -> None:
    loose = [p.name for p in PACKAGE.glob("*.py") if p.name not in {"__init__.py", "__main__.py"}]
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert not loose, f"files outside every folder: {loose}"
    assert folders == set(ALLOWED), f"folders without a rule: {sorted(folders - set(ALLOWED))}"


def test_no_two_files_share_a_name() -> None:
    seen: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name not in {"__init__.py", "__main__.py"}:
            seen.setdefault(path.name, []).append(str(path.relative_to(PACKAGE)))
    assert not {n: p for n, p in seen.items() if len(p) > 1}


def test_every_module_named_in_a_string_resolves() -> None:
    # Module paths handed to other processes or imported on demand break without an import error when moved.
    import importlib.util

    from fxtui.commands.parser import COMMANDS
    from fxtui.jobs.job_start import ADOPTER, DAEMON
    from fxtui.jobs.launch import AGENT_BOOT, SITE_DIR
    from fxtui.measure.capture import CAPTURERS

    named = [AGENT_BOOT, DAEMON, ADOPTER, *(where.partition(":")[0] for where in CAPTURERS.values())]
    named += [command.module for command in COMMANDS]
    missing = [m for m in named if importlib.util.find_spec(m) is None]
    assert not missing, f"named but not found: {missing}"
    for where in CAPTURERS.values():
        module, _, attr = where.partition(":")
        assert hasattr(importlib.import_module(module), attr), where
    for command in COMMANDS:  # each command's file adds its options and runs it
        module = importlib.import_module(command.module)
        assert callable(module.add_arguments) and callable(module.run), command.module
    assert (Path(SITE_DIR) / "sitecustomize.py").is_file()


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
def test_the_ui_reads_no_clock(path: Path) -> None:
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


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _fxtui_imports(path: Path, known: set[str]) -> set[str]:
    """fxtui modules ``path`` imports anywhere in it: at the top, inside functions, and under ``if TYPE_CHECKING``
    (a circle the type checker alone sees is still two modules that cannot be understood, or moved, apart)."""
    found: set[str] = set()
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom) and (node.module or node.level):
            base = _absolute(node.module, node.level, package)
            subs = {f"{base}.{a.name}" for a in node.names} & known
            found.update(subs or {base} & known)
    return found


def test_no_import_cycle_inside_fxtui() -> None:
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    known = set(paths)
    edges = {name: _fxtui_imports(path, known) - {name} for name, path in paths.items()}
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


def test_no_test_module_imports_another() -> None:
    # Shared helpers live in tests/helpers.py, tests/ui/fakes.py and tests/program_runs.py: a test module reaching
    # into another's privates breaks when that one is split, merged or moved to another tier.
    tests = Path(__file__).resolve().parent
    names = {p.stem for p in tests.rglob("test_*.py")}
    reaching = {
        f"{path.relative_to(tests)} imports {name}"
        for path in tests.rglob("test_*.py")
        for name in source_imports(path.read_text(encoding="utf-8"), path.stem)
        if name.split(".")[0] in names
    }
    assert not reaching, sorted(reaching)
