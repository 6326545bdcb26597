"""The suite runs on two pytest-xdist workers, one test file to a worker (``-n auto --dist loadfile`` in
pyproject.toml's ``addopts``).

Most of the suite's time is one process at a time: a program under ``fxtui run`` and its collector, the engine's
child, a compile; the test process waits for them, and on a 2-core machine one core sits idle. Two workers use it.
A file stays on one worker so that the runs its module- and session-scoped fixtures share (the corpus's programs,
a compiled model's report) are made once. No more than two: a test's program and its collector are two processes
themselves, and the timing tests judge figures (ratios within one run, judged again on a busy machine) that more
workers than cores would turn into measurements of the load. ``-n 0`` runs the suite in this process (a single
test while debugging, ``--pdb``).

The hook is imported by ``tests/conftest.py``.
"""

from __future__ import annotations

import os

import pytest

#: At most this many workers, whatever the machine's core count.
MOST_WORKERS = 2


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers, or one on a machine of one core."""
    return max(1, min(MOST_WORKERS, os.cpu_count() or 1))
