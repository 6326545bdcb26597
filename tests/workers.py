"""The suite runs on two pytest-xdist workers, one test file to a worker (``-n auto --dist loadfile`` in
pyproject.toml's ``addopts``), the longest files first.

Most of the suite's time is one process at a time: a program under ``fxtui run`` and its collector, the engine's
child, a compile; the test process waits for them, and on a 2-core machine one core sits idle. Two workers use it.
A file stays on one worker so that the runs its module- and session-scoped fixtures share (the corpus's programs,
a compiled model's report) are made once. No more than two: a test's program and its collector are two processes
themselves, and the timing tests judge figures (ratios within one run, judged again on a busy machine) that more
workers than cores would turn into measurements of the load. ``-n 0`` runs the suite in this process (a single
test while debugging, ``--pdb``).

A worker takes the next file when it is done with one, in the order of the collection; the collection puts the
files with a slow test first (the corpus, compiles, transformers, torchrun), then the other e2e files, then the unit
files (``--no-loadscope-reorder``: xdist's own order is by number of tests, which would leave a long file of few
tests for last while the other worker has nothing left to do). The many short unit files at the end even the two
workers out.

``tests/conftest.py`` imports the hook and calls :func:`longest_files_first` from its own collection hook.
"""

from __future__ import annotations

import os
from collections import defaultdict

import pytest

#: At most this many workers, whatever the machine's core count.
MOST_WORKERS = 2


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers, or one on a machine of one core."""
    return max(1, min(MOST_WORKERS, os.cpu_count() or 1))


def file_rank(items: list[pytest.Item]) -> int:
    """0 for a file with a slow test, 1 for another e2e file, 2 for a unit file."""
    if any(item.get_closest_marker("slow") for item in items):
        return 0
    return 1 if any(item.get_closest_marker("e2e") for item in items) else 2


def longest_files_first(items: list[pytest.Item]) -> None:
    """``items`` put in the order of their files' :func:`file_rank`, each file's tests together and in their own
    order (its module- and session-scoped fixtures are made once)."""
    by_file: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        by_file[item.nodeid.split("::")[0]].append(item)
    ranked = sorted(by_file.values(), key=file_rank)  # stable: the collection's order within a rank
    items[:] = [item for file_items in ranked for item in file_items]
