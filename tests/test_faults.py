"""Hostile models and hostile surroundings: the command reports, keeps going, or stops cleanly.

Models that misbehave (NaN, failures on some runs, in-place changes to their input,
absurd allocations) go through the command line in-process; signals, pipes and
locales need a real process.
"""

from __future__ import annotations

import ast
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import helpers
import pytest
from helpers import slow_model_source

import fxtui

pytestmark = pytest.mark.e2e

FAULTY = """
import itertools

import torch
from torch import nn

calls = itertools.count()


@torch.fx.wrap
def flaky(x):
    # Every third call fails, after the first check run has passed.
    n = next(calls)
    if n >= 2 and n % 3 == 0:
        raise ValueError(f"sensor glitch on call {n}")
    return x


@torch.fx.wrap
def expect_ones(x):
    if x.max() > 1.5:
        raise RuntimeError("the input was reused after forward changed it in place")
    return x


class NonFinite(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return torch.log(self.lin(x) * 0 - 1)


class Flaky(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(flaky(x))


class InPlace(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        x = expect_ones(x)
        x.add_(1)
        return self.lin(x)


class Hungry(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        # 4 EiB: the allocator refuses at once, as it would a merely too large batch.
        return self.lin(x) + x.new_empty(2**62, dtype=torch.uint8).sum()


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x))


def nonfinite():
    return NonFinite(), torch.randn(2, 4)


def flaky_model():
    return Flaky(), torch.randn(2, 4)


def in_place():
    return InPlace(), torch.ones(2, 4)


def hungry():
    return Hungry(), torch.randn(2, 4)


def plain():
    return Plain(), torch.randn(2, 4)


def broken():
    raise ValueError("no checkpoint in the café’s cache")
"""


@pytest.fixture
def faulty(tmp_path: Path) -> Path:
    path = tmp_path / "faulty.py"
    path.write_text(FAULTY, encoding="utf-8")
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    return helpers.run_cli(capsys, *args, "--once")


def header_lines(out: str, label: str) -> list[str]:
    header = out.split("\n\n", 1)[0]
    return [line for line in header.splitlines() if line.startswith(label)]


def test_nan_and_inf_in_outputs_are_a_warning_not_an_error(faulty: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, f"{faulty}:nonfinite", "--runs", "3", "--warmup", "0")
    assert code == 0, err
    (warning,) = header_lines(out, "warning")
    assert warning.startswith("warning    NaN") and "log" in warning
    assert "log" in out.split("\n\n", 1)[1]  # the node is still timed


def test_failing_runs_are_counted_and_the_session_continues(
    faulty: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    saved = tmp_path / "flaky.json"
    code, out, err = run_cli(capsys, f"{faulty}:flaky_model", "--runs", "6", "--warmup", "0", "--json", str(saved))
    assert code == 0, err
    (failures,) = header_lines(out, "failures")
    data = json.loads(saved.read_text())["metadata"]
    assert data["failures"] >= 2 and failures.startswith(f"failures   {data['failures']} runs failed")
    # The last failure may have come from the uninstrumented run, which cannot name a node.
    assert "ValueError: sensor glitch on call" in failures
    # Steps between the failures were recorded; a failed step does not use up --runs, and the
    # profile stops once as many steps have failed as were asked for, saying so.
    assert 0 < data["runs"] <= 6
    assert f"runs       {data['runs']} profiled" in out
    if data["runs"] < 6:
        assert f"too many runs failed after {data['runs']} of 6 runs" in out


def test_every_run_gets_a_fresh_input(faulty: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    saved = tmp_path / "in_place.json"
    code, out, err = run_cli(capsys, f"{faulty}:in_place", "--runs", "5", "--warmup", "2", "--chrome-trace", str(saved))
    assert code == 0, err
    assert not header_lines(out, "failures"), out
    # 5 runs, and up to 5 more in place of steps other work disturbed
    assert re.search(r"runs       ([5-9]|10) profiled", out)


def test_an_impossible_allocation_is_one_sentence_and_exit_2(faulty: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, f"{faulty}:hungry", "--runs", "1", "--warmup", "0")
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith("fxtui: ") and "Traceback" not in err
    assert "new_empty" in line and "memory" in line


# -- a real process: signals, pipes, locales --------------------------------------------

#: Sleeps 10 ms a call; ``started`` appears at call 20, well into the profiled runs.
SLOW = slow_model_source(started_at=20, sleep_s=0.01)


def fxtui_process(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "fxtui", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        encoding="utf-8",
        errors="strict",
        # An empty value removes the variable.
        env={k: v for k, v in {**os.environ, **(env or {})}.items() if v},
    )


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_prints_the_runs_so_far_and_writes_exports_whole(tmp_path: Path, sig: signal.Signals) -> None:
    (tmp_path / "slow.py").write_text(SLOW)
    proc = fxtui_process("slow.py:make", "--runs", "1000", "--warmup", "0", "--json", "out.json", cwd=tmp_path)
    deadline = time.monotonic() + 120
    while not (tmp_path / "started").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the model never reached its profiled runs"
        time.sleep(0.05)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)

    assert proc.returncode == 0, err
    data = json.loads((tmp_path / "out.json").read_text())
    runs = data["metadata"]["runs"]
    assert 0 < runs < 1000
    assert f"warning    interrupted by {sig.name} after {runs} of 1000 runs" in out
    assert "op type" in out and "slow" in out.split("\n\n", 1)[1]
    # Written whole: no temporary file beside it (__pycache__ is Python's, from loading slow.py).
    assert {p.name for p in tmp_path.iterdir()} - {"__pycache__"} == {"out.json", "slow.py", "started"}


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"PYTHONIOENCODING": "ascii"},
        {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0", "PYTHONIOENCODING": ""},
    ],
    ids=["utf-8", "PYTHONIOENCODING=ascii", "LC_ALL=C"],
)
def test_piped_output_is_a_readable_table_in_any_locale(faulty: Path, env: dict[str, str]) -> None:
    # No --once: stdout is a pipe, not a terminal, so the command profiles and prints.
    proc = fxtui_process(f"{faulty.name}:plain", "--runs", "2", "--warmup", "0", cwd=faulty.parent, env=env)
    out_bytes, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "UnicodeEncodeError" not in err and "Traceback" not in err
    assert "op type" in out_bytes and "lin" in out_bytes
    if env:
        assert out_bytes.isascii()
        assert "inputs 2x4" in out_bytes
    else:
        assert "inputs 2×4" in out_bytes


def test_an_error_with_non_ascii_text_in_an_ascii_locale_is_still_one_sentence(faulty: Path) -> None:
    proc = fxtui_process(f"{faulty.name}:broken", cwd=faulty.parent, env={"PYTHONIOENCODING": "ascii"})
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2
    (line,) = err.strip().splitlines()
    assert line.startswith("fxtui: ") and "no checkpoint in the caf" in line and line.isascii()


# -- nothing unpickles untrusted data ---------------------------------------------------

#: Calls that run arbitrary code from the file they read unless restricted.
_PICKLE_LOADS = {("pickle", "load"), ("pickle", "loads"), ("dill", "load"), ("dill", "loads"), ("joblib", "load")}


def unsafe_loads(source: str, filename: str = "<source>") -> list[str]:
    """``file:line call`` for every ``torch.load`` without ``weights_only=True`` and every pickle load."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner = node.func.value
        name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
        call = (name, node.func.attr)
        if call == ("torch", "load"):
            safe = any(
                k.arg == "weights_only" and isinstance(k.value, ast.Constant) and k.value.value is True
                for k in node.keywords
            )
            if not safe:
                found.append(f"{filename}:{node.lineno} torch.load")
        elif call in _PICKLE_LOADS or node.func.attr == "Unpickler":
            found.append(f"{filename}:{node.lineno} {name}.{node.func.attr}")
    return found


def test_the_unsafe_load_scanner_finds_what_it_should() -> None:
    sample = textwrap.dedent(
        """
        import pickle, torch
        torch.load("a.pt", weights_only=True)
        torch.load("b.pt")
        torch.load("c.pt", weights_only=False)
        pickle.loads(data)
        pickle.Unpickler(f).load()
        """
    )
    assert unsafe_loads(sample) == [
        "<source>:4 torch.load",
        "<source>:5 torch.load",
        "<source>:6 pickle.loads",
        "<source>:7 pickle.Unpickler",
    ]


def test_fxtui_never_loads_with_pickle_or_torch_load_unrestricted() -> None:
    package = Path(fxtui.__file__).parent
    sources = sorted(package.rglob("*.py"))
    assert len(sources) > 20
    found = [hit for path in sources for hit in unsafe_loads(path.read_text(encoding="utf-8"), str(path))]
    assert found == []
