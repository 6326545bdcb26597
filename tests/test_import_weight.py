"""What each process loads as it starts, checked in a fresh interpreter: the collector and the viewer never torch,
the command never the report's writers before the program starts. (The folder rules themselves, read from the
source, are ``tests/test_layering.py``.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

PACKAGE = Path(__file__).resolve().parent.parent / "fxtui"


def modules_of(folder: str) -> list[str]:
    """The importable names of the modules under ``fxtui/<folder>``."""
    names = []
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_the_collector_and_the_viewer_never_load_torch() -> None:
    # fxtui run's collector starts while the program imports torch on the same cores: importing torch too would
    # cost the program seconds of a core (its fixed cost), for nothing the collector needs.
    modules = sorted(m for folder in ("jobs", "report") for m in modules_of(folder))
    code = (
        f"import sys, fxtui.commands.run, fxtui.commands.attach; import {', '.join(modules)}; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'torchvision', 'transformers')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_what_runs_before_a_program_starts_imports_no_numpy_and_no_report() -> None:
    # fxtui run's fixed cost: the command parses its options, then the program starts. numpy alone took 86 ms
    # there, the report's writers and the app's job 50 ms more (measured: +0.59 s over python before, +0.30 s
    # after, tests/benchmarks/bench_fixed_cost.py); what prints the profile is imported in the collector.
    code = (
        "import sys; from fxtui.commands.parser import parse; "
        "from fxtui.commands.options import check_output, program_output; "
        "args = parse(['run', '--once', '--sort', 'p90', '--columns', 'mean', 'train.py', '--epochs', '1']).args; "
        "check_output(program_output(args)); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'numpy' or m.startswith('fxtui.report.') "
        "and m != 'fxtui.report.formats' or m.startswith('fxtui.ui')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_importing_the_app_does_not_load_torch() -> None:
    code = (
        "import sys, fxtui.commands.cli, fxtui.commands.model_engine, fxtui.ui.app; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'torchvision')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
