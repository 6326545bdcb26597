"""fxtui run beside other work: busy processes (one Python thread each) share the cores with a small training
program, and the step is split into ops, the program's Python and waiting for a CPU, with the badge to show it.

Other engineers' work may load the machine further: it only adds waiting, so each check holds under more load.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from program_runs import ProgramRun, load_text, run_fxtui

from fxtui.commands.program_report import print_report
from fxtui.core.settings import OutputSettings
from fxtui.report.data import ReportData

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ("tests/programs/char_gpt.py", "--iters", "40", "--layers", "1", "--width", "64", "--block", "32",
           "--batch", "8", "--chars", "20000")  # fmt: skip
BUSY = "while True: pass"


def _cpu_s(procs: list[subprocess.Popen[bytes]]) -> float:
    """The processes' CPU time so far, seconds (``/proc/PID/stat``'s utime + stime)."""
    total = 0
    for p in procs:
        fields = Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


@contextmanager
def busy(count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` plain Python loops beside the test, killed at the end."""
    procs = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(count)]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


@dataclasses.dataclass
class BesideBusy:
    """The program's run under fxtui beside three busy processes, and what the busy processes used each time."""

    run: ProgramRun
    cores: float
    readings: list[str]


@pytest.fixture(scope="module")
def beside_busy() -> BesideBusy:
    """One run for the split's checks and the header's width (run once a file: a run beside busy processes takes
    both cores from the tests on the other worker while it lasts)."""
    # One thread of the program against three busy ones on two cores: two tasks a core, so the program shares its
    # core. (Beside two, the kernel may leave it a core of its own and put both loops on the other: no wait at all.)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    readings = []
    for _ in range(2):  # judged again once: the kernel's placement of four tasks on two cores varies run to run
        with busy(3) as procs:
            began, cpu0 = time.monotonic(), _cpu_s(procs)
            run = run_fxtui(PROGRAM, ROOT, options=("--top", "5"), env=env)
            cores = (_cpu_s(procs) - cpu0) / max(time.monotonic() - began, 1e-9)
        assert run.status == 0, run.stderr
        meta = run.meta
        waiting, python, ops = meta.get("waiting_share"), meta.get("python_share"), meta.get("ops_share")
        readings.append(f"busy processes used {cores:.2f} cores; waiting {waiting}, python {python}, ops {ops}")
        if waiting is not None and waiting >= 0.15:
            break
    return BesideBusy(run, cores, readings)


def test_beside_three_busy_processes_the_step_waits_for_a_cpu_and_that_wait_is_not_called_python(
    beside_busy: BesideBusy,
) -> None:
    run, cores = beside_busy.run, beside_busy.cores
    meta = run.meta
    waiting, python, ops = meta.get("waiting_share"), meta.get("python_share"), meta.get("ops_share")
    said = f"{load_text()}; " + " | ".join(beside_busy.readings)
    # The kernel may keep the loops off the program's core (or, on a machine loaded by other work, off the CPU):
    # then only a program that waited all the same has a wait to check. Other work only adds to the wait.
    if (waiting is None or waiting < 0.15) and cores < 1.3:
        pytest.skip(f"the busy processes did not contend for the program's core: {said}")
    # Four busy threads on two cores: the program's thread is kept off a CPU about half the time, or more.
    assert waiting is not None and waiting >= 0.15, said
    assert python is not None and ops is not None
    assert python < waiting, said  # its loop's own Python is a few percent of a step: the wait is not it
    assert abs(ops + waiting + python - 1.0) < 1e-6, said  # the split adds up, in the JSON
    assert waiting <= meta["waiting_measured_share"] + 1e-9, said  # at most what was measured
    # ... and in the header, in the same figures: whole percents that add up to 100.
    split = " ".join(run.stdout[run.stdout.index("\nsplit ") :].split("\n", 3)[:3])
    shares = [int(m) for m in re.findall(r"(?:ops|waiting for a CPU|the program's Python) (\d+)%", split)]
    assert len(shares) == 3 and sum(shares) == 100, split
    assert " ".join(meta["split_line"].split()) in " ".join(split.split()), (meta["split_line"], split)
    assert "waiting for a CPU" in run.stdout and "other processes used" in run.stdout, run.stdout
    unattributed = next(line for line in run.stdout.splitlines() if line.startswith("unattributed"))
    assert "waiting for a CPU" in unattributed
    # Every sampled step waited far beyond 10% of its time: the app's status line carries the badge.
    from fxtui.ui.widgets.status_bar import session_line

    report = ReportData.from_dict(run.report or {})
    line = session_line(dataclasses.replace(report.snapshot), paused=False).plain
    assert "sampled steps waited for a CPU" in line and "(T)" in line, line


def test_the_header_fits_eighty_columns(beside_busy: BesideBusy, monkeypatch: pytest.MonkeyPatch) -> None:
    """The profile of the run beside busy processes (its header at its longest: the wait, the other processes) as
    ``fxtui attach --once`` prints a job's saved profile, at the full width of a pipe and at ``COLUMNS=80``."""
    run = beside_busy.run
    assert run.status == 0, run.stderr
    saved = ReportData.from_dict(run.report or {})

    def printed() -> str:
        out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # as the pipe fxtui run printed to
        with contextlib.redirect_stdout(out):
            print_report(saved, OutputSettings(top=5))
        out.seek(0)
        return out.read().strip("\n")  # the header and the table

    # Read back from its JSON, the profile prints as fxtui run printed it: what it prints at 80 columns is the run's.
    assert printed() in run.stdout
    monkeypatch.setenv("COLUMNS", "80")
    report = printed()
    longest = max(report.splitlines(), key=len)
    assert len(longest) <= 80, longest
