"""Every test is in one of two tiers, declared by its module, and the fast one stays fast.

- ``unit``: in this process, no other process started, no model larger than a toy run: the tier a developer runs
  while working (``python -m pytest -q -m unit``, about two minutes on two cores).
- ``e2e``: programs under ``fxtui run``, the CLI and the engine's child, ranks, the app over a real engine, the
  corpus; ``slow`` besides for a compile, torchrun, Lightning or transformers run (``-m "not slow"`` skips them).

A test module says which with ``pytestmark = pytest.mark.unit`` (or ``e2e``, or a list holding one of them): a
module that says neither, or both, stops the collection with its name, so a new test file cannot land untiered.
A unit test that starts a process fails, saying that it belongs to the e2e tier.

The hooks are imported by ``tests/conftest.py``.
"""

from __future__ import annotations

import ast
import multiprocessing.process
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

TIERS = ("unit", "e2e")


def tier_errors(items: list[pytest.Item]) -> list[str]:
    """Modules whose tests carry no tier marker, or more than one."""
    errors: dict[str, str] = {}
    for item in items:
        tiers = sorted({mark.name for mark in item.iter_markers() if mark.name in TIERS})
        if len(tiers) != 1:
            where = item.nodeid.split("::")[0]
            errors.setdefault(where, f"{where}: {' and '.join(tiers) or 'no tier'} (declare one of {TIERS})")
    return list(errors.values())


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    errors = tier_errors(items)
    if errors:
        raise pytest.UsageError(
            "each test module declares its tier with pytestmark = pytest.mark.unit or pytest.mark.e2e "
            "(tests/tiers.py):\n  " + "\n  ".join(errors)
        )


def declared_tiers(source: str) -> set[str]:
    """The tiers a module's source declares in its module-level ``pytestmark``."""
    found: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            found.update(n.attr for n in ast.walk(node.value) if isinstance(n, ast.Attribute) and n.attr in TIERS)
    return found


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under ``-m unit``, an e2e module is not even imported (its imports, transformers' among them, cost the fast
    tier seconds for tests it deselects anyway)."""
    name = collection_path.name
    if config.option.markexpr != "unit" or not (name.startswith("test_") and name.endswith(".py")):
        return None
    return declared_tiers(collection_path.read_text(encoding="utf-8")) == {"e2e"} or None


class StartedAProcess(AssertionError):
    """A unit test started a process: it belongs to the e2e tier."""


@pytest.fixture(autouse=True)
def unit_tests_start_no_process(request: pytest.FixtureRequest) -> Iterator[None]:
    """In a unit test, starting a process (``subprocess``, ``multiprocessing``, ``os.fork``) fails the test."""
    if request.node.get_closest_marker("unit") is None:
        yield
        return

    def refuse(*args: object, **kwargs: object) -> None:
        raise StartedAProcess(f"{request.node.nodeid} starts a process: mark its module pytest.mark.e2e")

    popen_init = subprocess.Popen.__init__

    def popen(self: subprocess.Popen[bytes], argv: object, *args: object, **kwargs: object) -> None:
        # A library lookup while torch is first imported (ctypes.util.find_library runs ``ldconfig -p``) is the
        # interpreter's, not the test's.
        if isinstance(argv, (list, tuple)) and argv and os.path.basename(str(argv[0])) == "ldconfig":
            popen_init(self, argv, *args, **kwargs)  # type: ignore[arg-type]
            return
        refuse()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess.Popen, "__init__", popen)
        patch.setattr(multiprocessing.process.BaseProcess, "start", refuse)
        for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "execv", "execve"):
            if hasattr(os, name):
                patch.setattr(os, name, refuse)
        yield
