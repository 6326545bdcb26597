"""Every test's jobs live in a directory of the test run's own, never in the user's fxtui directory."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session", autouse=True)
def private_runtime_dir() -> Iterator[str]:
    """``$XDG_RUNTIME_DIR`` for the session (0700, removed afterwards): ``fxtui run`` jobs started by tests
    (and the processes they start, which inherit it) keep their sockets and logs there."""
    with tempfile.TemporaryDirectory(prefix="fxtui-tests-") as directory:
        os.chmod(directory, 0o700)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("XDG_RUNTIME_DIR", directory)
            yield directory


@pytest.fixture(scope="session", autouse=True)
def whole_lines() -> None:
    """No ``COLUMNS`` in the tests' environment: fxtui fits its tables and header to ``COLUMNS``, and importing
    readline (the test runner does) puts ``COLUMNS=80`` in the process's C environment, which every ``fxtui``
    started by a test would inherit. Tests that check the fitting set it themselves."""
    os.environ.pop("COLUMNS", None)
    os.unsetenv("COLUMNS")


# Each test module declares its tier (unit or e2e); a unit test starts no process (tests/tiers.py).
from tiers import pytest_collection_modifyitems as every_module_has_a_tier  # noqa: E402
from tiers import pytest_ignore_collect, unit_tests_start_no_process  # noqa: E402, F401

# The suite's two pytest-xdist workers, the longest files first (tests/workers.py).
from workers import longest_files_first, pytest_xdist_auto_num_workers  # noqa: E402, F401


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    every_module_has_a_tier(config, items)
    longest_files_first(items)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fxtui-timer",
        choices=("mode", "native"),
        default="",
        help="the per-op timer of every program the corpus tests run under fxtui run (tests/program_runs.py's "
        "run_fxtui; default: fxtui's own)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Pass ``--fxtui-timer`` on to ``run_fxtui`` (in each xdist worker too: each configures itself)."""
    from tests.program_runs import set_timer

    set_timer(config.getoption("--fxtui-timer"))
