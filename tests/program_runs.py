"""Run a program under ``python`` and under ``fxtui run --once --json``, and read what a user needs from the two.

Shared by the corpus tests (``tests/test_corpus.py``) and the benchmark over public programs
(``tests/benchmarks/bench_public.py``): the program's own output with its timing lines left out, the steps by kind,
the root share, the node count. Where fxtui's JSON will grow (figures per kind of step, issue 37), the one function
that reads it is :func:`step_kinds`: the tests are written against what it returns.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PY = sys.executable

#: The first line of fxtui's own report, printed after the program's output under ``fxtui run --once``.
REPORT_START = re.compile(r"^program {2,}\S")

#: Lines that print a duration or a rate: they differ from run to run, under python as under fxtui.
TIMING = re.compile(
    r"\btime\b|\btimes?:|elapsed|runtime|per_second|\bms\b|ms/|\d\s*ms\b|\d+(\.\d+)?s\b|it/s|s/it|\bmfu\b",
    re.IGNORECASE,
)


@dataclass
class ProgramRun:
    """One run of a program: how it ended, what it printed, how long it took, and fxtui's JSON when profiled."""

    command: tuple[str, ...]
    status: int
    stdout: str
    stderr: str
    wall_s: float
    report: dict[str, Any] | None = None  # fxtui's JSON ({} when profiled but none was written)
    load: float = 0.0  # the machine's 1-minute load average when the run ended

    def program_lines(self) -> list[str]:
        """The program's own stdout lines without the lines that print times (and without fxtui's report)."""
        return program_lines(self.stdout, profiled=self.report is not None)

    @property
    def meta(self) -> dict[str, Any]:
        """The JSON's ``metadata`` (empty when there is no JSON)."""
        return (self.report or {}).get("metadata", {})

    @property
    def rows(self) -> list[dict[str, Any]]:
        """The JSON's node rows."""
        return (self.report or {}).get("rows", [])

    @property
    def modules(self) -> dict[str, dict[str, Any]]:
        """The JSON's module roll-ups by path."""
        return {m["path"]: m for m in (self.report or {}).get("modules", [])}


def program_lines(stdout: str, profiled: bool) -> list[str]:
    """``stdout``'s lines up to fxtui's report (when ``profiled``), without the lines that print times."""
    lines = stdout.splitlines()
    if profiled:
        starts = [i for i, line in enumerate(lines) if REPORT_START.match(line) and (i == 0 or not lines[i - 1])]
        if starts:
            lines = lines[: max(0, starts[-1] - 1)]
    return [line.rstrip() for line in lines if not TIMING.search(line)]


def _run(argv: Sequence[str], cwd: Path, env: Mapping[str, str] | None, timeout: float) -> tuple[int, str, str, float]:
    started = time.perf_counter()
    done = subprocess.run(
        list(argv), cwd=cwd, capture_output=True, text=True, timeout=timeout, env=dict(env) if env else None
    )
    return done.returncode, done.stdout, done.stderr, time.perf_counter() - started


def run_python(
    command: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None, timeout: float = 600
) -> ProgramRun:
    """``python COMMAND…`` (a script and its arguments, or ``-m MODULE …``)."""
    status, out, err, wall = _run([PY, *command], cwd, env, timeout)
    return ProgramRun(tuple(command), status, out, err, wall, None, os.getloadavg()[0])


def run_fxtui(
    command: Sequence[str],
    cwd: Path,
    options: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    timeout: float = 900,
) -> ProgramRun:
    """``python -m fxtui run --once --json OUT OPTIONS… COMMAND…``; the JSON read back (None when none was written)."""
    with tempfile.TemporaryDirectory(prefix="fxtui-corpus-") as directory:
        out = Path(directory) / "run.json"
        argv = [PY, "-m", "fxtui", "run", "--once", "--json", str(out), *timer_options(), *options, *command]
        status, stdout, stderr, wall = _run(argv, cwd, env, timeout)
        report = json.loads(out.read_text()) if out.exists() else {}
    return ProgramRun(tuple(command), status, stdout, stderr, wall, report, os.getloadavg()[0])


# --- What a user reads off the JSON -------------------------------------------------------------------------------


@dataclass
class KindTally:
    """The figures of one kind of step (training, evaluation, generation, a model call)."""

    kind: str
    steps: int = 0
    warmup: int = 0
    sampled: int = 0
    fidelity: float | None = None
    overhead: float | None = None
    phase_median_s: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # whatever else the JSON says of this kind

    def phase(self, name: str) -> float:
        """The median time of one phase of these steps (0 when the phase is not there)."""
        return float(self.phase_median_s.get(name) or 0.0)

    def phase_fidelity(self, name: str) -> float | None:
        """Σ node medians in one phase ÷ that phase's unsampled median (None when either is missing)."""
        nodes = (self.extra.get("phase_nodes_s") or {}).get(name)
        phase = self.phase(name)
        return float(nodes) / phase if nodes is not None and phase > 0 else None


#: Names the JSON may give a kind, and the one the tests use: ``train``, ``eval``, ``generate``, ``call``.
KIND_NAMES = {
    "train": "train",
    "training": "train",
    "eval": "eval",
    "evaluation": "eval",
    "inference": "eval",
    "no_grad": "eval",
    "generate": "generate",
    "generation": "generate",
    "call": "call",
}


def step_kinds(meta: Mapping[str, Any]) -> dict[str, KindTally]:
    """The steps by kind, keyed ``train``, ``eval``, ``generate`` or ``call``.

    The JSON gives each kind its own count, warm-up, sampling and figures in ``metadata.steps.kinds`` (a list of
    records with ``kind``, ``steps``, ``warmup``, ``sampled``, ``fidelity``, ``overhead``, ``phase_median_s`` and
    ``phase_nodes_s``); a JSON with one kind only (``metadata.steps`` and fidelity and overhead at the top of
    ``metadata``) is read as that kind. This is the one place that follows the schema.
    """
    steps = meta.get("steps") or {}
    per_kind = steps.get("kinds") or meta.get("step_kinds")
    if isinstance(per_kind, list):
        per_kind = {k.get("kind", str(i)): k for i, k in enumerate(per_kind)}
    if not per_kind:
        if not steps:
            return {}
        per_kind = {
            steps.get("kind", "call"): {**steps, "fidelity": meta.get("fidelity"), "overhead": meta.get("overhead")}
        }
    known = {"kind", "steps", "warmup", "sampled", "fidelity", "overhead", "phase_median_s"}
    kinds: dict[str, KindTally] = {}
    for name, figures in per_kind.items():
        key = KIND_NAMES.get(str(name).lower(), str(name).lower())
        kinds[key] = KindTally(
            key,
            int(figures.get("steps") or 0),
            int(figures.get("warmup") or 0),
            int(figures.get("sampled") or 0),
            figures.get("fidelity"),
            figures.get("overhead"),
            dict(figures.get("phase_median_s") or {}),
            {k: v for k, v in figures.items() if k not in known},
        )
    return kinds


def root_share(rows: Sequence[Mapping[str, Any]]) -> float:
    """The share of Σ node medians in rows charged to no module (an empty ``module_path``: the table's ``(root)``)."""
    total = sum(float(r.get("median_s") or 0.0) for r in rows)
    root = sum(float(r.get("median_s") or 0.0) for r in rows if not r.get("module_path"))
    return root / total if total else 0.0


def machine_busy() -> bool:
    """True when the machine's 1-minute load is above its core count: timing figures are then not worth judging."""
    return os.getloadavg()[0] > (os.cpu_count() or 1)


def load_text() -> str:
    """The machine's load averages, as ``uptime`` prints them."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} cores"


# --- The per-op timer every run under fxtui uses (tests/conftest.py's ``--fxtui-timer``) --------------------------

#: The per-op timer :func:`run_fxtui` asks for (``fxtui run --timer``); ``""``: fxtui's own default.
TIMER = {"timer": ""}


def set_timer(timer: str) -> None:
    """Make every later :func:`run_fxtui` time its sampled steps with ``timer`` (``mode``, ``native``; ``""``:
    fxtui's default). A run whose own options name a timer keeps it: they come after, and the last one counts."""
    TIMER["timer"] = timer


def timer_options() -> tuple[str, ...]:
    """fxtui's options that choose the timer set by :func:`set_timer` (none when fxtui's default is wanted)."""
    return ("--timer", TIMER["timer"]) if TIMER["timer"] else ()
