"""Ended jobs' directories go after a week; running ones and what is not a job stay."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fxtui.jobs.job_start import KEEP_ENDED_S, prune_ended
from fxtui.wire.job_directory import INFO
from fxtui.wire.private_dir import private_dir

pytestmark = pytest.mark.e2e


def _gone_pid() -> int:
    """The pid of a process that has ended."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def _job(name: str, pid: int, age_s: float, running: bool = False) -> Path:
    directory = private_dir() / f"job-{name}"
    directory.mkdir(mode=0o700)
    info = {"id": name, "command": ["train.py"], "cwd": "/", "pid": pid, "running": running}
    (directory / INFO).write_text(json.dumps(info))
    old = time.time() - age_s
    os.utime(directory / INFO, (old, old))
    return directory


def test_old_ended_and_lost_jobs_go_recent_and_running_ones_stay() -> None:
    gone = _gone_pid()
    old = _job("prune-old", gone, KEEP_ENDED_S + 60)
    lost = _job("prune-lost", gone, KEEP_ENDED_S + 60, running=True)  # its collector was killed
    recent = _job("prune-recent", gone, 60)
    alive = _job("prune-alive", os.getpid(), KEEP_ENDED_S + 60, running=True)
    stray = private_dir() / "job-not-a-job"
    stray.mkdir(mode=0o700)
    removed = prune_ended()
    assert {"prune-old", "prune-lost"} <= set(removed) and not {"prune-recent", "prune-alive"} & set(removed)
    assert not old.exists() and not lost.exists()
    assert recent.exists() and alive.exists() and stray.exists()
