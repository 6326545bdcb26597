"""The tiers' rules hold: a module without a tier (or with two) stops the collection, and a unit test cannot start
a process (tests/tiers.py)."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
from tiers import StartedAProcess, declared_tiers, tier_errors

pytestmark = pytest.mark.unit


def item(nodeid: str, *marks: str) -> SimpleNamespace:
    """A collected test as the hook reads it: its id and its markers (closest first)."""
    return SimpleNamespace(nodeid=nodeid, iter_markers=lambda: [SimpleNamespace(name=m) for m in marks])


def test_a_module_without_a_tier_or_with_two_is_named_once() -> None:
    items = [
        item("tests/test_a.py::test_one", "unit"),
        item("tests/test_b.py::test_one", "slow"),
        item("tests/test_b.py::test_two"),
        item("tests/test_c.py::test_one", "e2e", "unit"),
        item("tests/test_d.py::test_one", "e2e", "slow", "parametrize"),
    ]
    assert tier_errors(items) == [  # type: ignore[arg-type]
        "tests/test_b.py: no tier (declare one of ('unit', 'e2e'))",
        "tests/test_c.py: e2e and unit (declare one of ('unit', 'e2e'))",
    ]


def test_a_unit_test_cannot_start_a_process() -> None:
    with pytest.raises(StartedAProcess, match=r"mark its module pytest\.mark\.e2e"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)
    with pytest.raises(StartedAProcess):
        os.fork()
    with pytest.raises(StartedAProcess):
        multiprocessing.get_context("spawn").Process(target=print).start()


def test_the_declared_tier_is_read_from_the_source_without_importing_it() -> None:
    assert declared_tiers("import pytest\npytestmark = pytest.mark.e2e\n") == {"e2e"}
    assert declared_tiers("pytestmark = [\n    pytest.mark.e2e,\n    pytest.mark.slow,\n]\n") == {"e2e"}
    assert declared_tiers("pytestmark = pytest.mark.unit\n") == {"unit"}
    assert declared_tiers("def test_x():\n    pytestmark = pytest.mark.e2e\n") == set()  # not the module's
