"""The app's status line for a job whose processes run without collectives (hogwild workers)."""

from __future__ import annotations

import pytest

from fxtui.core.snapshot import State
from fxtui.ui.widgets.status_bar import session_line
from tests.test_job_processes import hogwild

pytestmark = pytest.mark.unit


def test_the_status_line_names_the_process_shown_not_a_rank() -> None:
    job = hogwild()
    job.ended(0)
    line = session_line(job.snapshot(State.DONE), paused=False).plain
    assert "worker 1 of 2 (R)" in line and "rank" not in line
