"""Long work shows progress: one line of stderr rewritten in place on a terminal, nothing elsewhere; a profile cut
short by a signal says so in its header."""

from __future__ import annotations

import io
import os
import pty
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import slow_model_source

from fxtui.commands.progress import ProgressLine, eta_text

pytestmark = pytest.mark.e2e

ERASE = "\r\x1b[K"


def wait_for(predicate, timeout: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_stage_and_its_steps_rewrite_one_line_and_the_line_is_erased() -> None:
    out = io.StringIO()
    with ProgressLine(out, enabled=True, delay_s=0) as progress:
        progress.stage("building resnet18")
        assert out.getvalue() == f"{ERASE}building resnet18"
        progress.step("run 1 of 30")
        assert out.getvalue().endswith(f"{ERASE}run 1 of 30")
        progress.clear()
        assert out.getvalue().endswith(f"run 1 of 30{ERASE}")
    assert "\n" not in out.getvalue()  # one line, always rewritten


def test_nothing_is_written_when_stderr_is_not_a_terminal() -> None:
    out = io.StringIO()  # not a terminal
    with ProgressLine(out, delay_s=0) as progress:
        progress.stage("building resnet18")
        progress.step("run 1 of 30")
    assert out.getvalue() == ""


def test_work_done_within_the_delay_shows_nothing() -> None:
    out = io.StringIO()
    with ProgressLine(out, enabled=True, delay_s=3600) as progress:
        progress.stage("building resnet18")
        progress.step("run 1 of 30")
    assert out.getvalue() == ""


def test_a_long_stage_shows_its_seconds_and_steps_stop_the_redrawing() -> None:
    out = io.StringIO()
    with ProgressLine(out, enabled=True, delay_s=0) as progress:
        progress.stage("capturing resnet18 with TorchDynamo")
        assert wait_for(lambda: "capturing resnet18 with TorchDynamo (1 s)" in out.getvalue())
        progress.step("run 1 of 30")
        drawn = out.getvalue()
        time.sleep(1.2)  # the redrawing thread sleeps while steps are drawn by their own thread
        assert out.getvalue() == drawn


def test_a_line_wider_than_the_terminal_is_cut_not_wrapped() -> None:
    out = io.StringIO()  # no terminal to ask: 80 columns
    with ProgressLine(out, enabled=True, delay_s=0) as progress:
        progress.step("what-if channels-last: " + "x" * 200)
        line = out.getvalue().removeprefix(ERASE)
        assert len(line) == 79 and line.endswith("…")


def test_the_eta_comes_from_the_pace_so_far() -> None:
    assert eta_text(10.0, 5, 10) == "about 10 s left"
    assert eta_text(600.0, 1, 10) == "about 90 min left"
    assert eta_text(0.0, 0, 10) == "" and eta_text(1.0, 10, 10) == ""


# -- the headless command on a terminal ---------------------------------------------------------------------------

#: Sleeps 50 ms a call, and never says it started.
SLOW = slow_model_source(started_at=10**9, sleep_s=0.05)


def fxtui_on_a_terminal(directory: Path, *args: str) -> tuple[int, str, str]:
    """Run ``fxtui ARGS`` with stderr on a pseudo-terminal and stdout on a pipe: its status, stdout, and what the
    terminal received."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "fxtui", *args], cwd=directory, stdout=subprocess.PIPE, stderr=slave,
        stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    os.close(slave)
    received = bytearray()

    def read() -> None:
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the other end closed
                return
            if not chunk:
                return
            received.extend(chunk)

    reader = threading.Thread(target=read)
    reader.start()
    out, _ = proc.communicate(timeout=300)
    reader.join(timeout=30)
    os.close(master)
    return proc.returncode, out, received.decode("utf-8", "replace")


@pytest.fixture
def slow_model(tmp_path: Path) -> Path:
    (tmp_path / "slow.py").write_text(SLOW)
    return tmp_path


def test_a_profile_on_a_terminal_says_what_it_does_on_stderr_and_erases_it(slow_model: Path) -> None:
    # --keep-disturbed: on a busy machine no run is replaced, so the runs are 1 to 20 whatever the load.
    args = ("slow.py:make", "--once", "--runs", "20", "--warmup", "1", "--keep-disturbed")
    code, out, terminal = fxtui_on_a_terminal(slow_model, *args)
    assert code == 0, terminal
    assert re.search(r"\r\x1b\[Krun \d+ of 20", terminal)  # per run (at most ten a second)
    assert "building slow.py:make" in terminal and "warming up: 1 run" in terminal
    assert terminal.rstrip("\r\n").endswith(ERASE)  # erased before the results
    assert "\x1b" not in out and "run 1 of 20" not in out  # the table is untouched by it
    assert "slow" in out and "median" in out


def test_a_profile_into_a_pipe_says_nothing_on_stderr(slow_model: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "fxtui", "slow.py:make", "--once", "--runs", "20", "--warmup", "1"],
        cwd=slow_model, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0 and done.stderr == ""
    assert "median" in done.stdout


# -- cut short by a signal ------------------------------------------------------------------------------------------


def interrupted(done: int, runs: int, quiet: int, disturbed: int, skipped: tuple[str, ...] = ()) -> str:
    from fxtui.commands.model_headless import _interrupted

    stop = SimpleNamespace(signum=signal.SIGINT)
    session = SimpleNamespace(disturbed_steps=disturbed, quiet_steps=quiet, keep_disturbed=False)
    return _interrupted(stop, session, done, runs, skipped)  # type: ignore[arg-type]


def test_a_signal_during_the_runs_asked_for_says_how_many_were_made() -> None:
    assert interrupted(12, 30, 12, 0) == "interrupted by SIGINT after 12 of 30 runs; figures are from those runs"


def test_a_signal_while_disturbed_runs_are_replaced_says_so() -> None:
    # A busy machine: 30 runs made, 12 of them disturbed and left out, more being made when Ctrl+C came.
    said = interrupted(41, 30, 25, 16)
    assert said == (
        "interrupted by SIGINT after 41 runs, 25 of the 30 quiet ones asked for (16 disturbed left out while they "
        "were replaced)"
    )


def test_a_signal_after_the_runs_names_what_was_not_measured() -> None:
    said = interrupted(30, 30, 30, 0, ("--hints", "what-if bf16"))
    assert said == "interrupted by SIGINT after all 30 runs; not measured: --hints, what-if bf16"
