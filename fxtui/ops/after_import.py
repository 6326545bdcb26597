"""Run a function right after a module is imported, now or later, without importing it first.

fxtui's watchers hook into libraries the program may never import (transformers' ``generate``,
Inductor's code generation): importing them to hook in would cost the program seconds.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any


def after_import(name: str, then: Callable[[types.ModuleType], None]) -> AfterImport | None:
    """Call ``then(module)`` now if module ``name`` is imported, else right after it is; the finder to remove
    (:func:`forget`) when it is still waiting."""
    module = sys.modules.get(name)
    if module is not None:
        then(module)
        return None
    finder = AfterImport(name, then)
    sys.meta_path.insert(0, finder)
    return finder


def forget(finder: AfterImport | None) -> None:
    """Stop waiting for the module (the watcher uninstalls)."""
    if finder is not None and finder in sys.meta_path:
        sys.meta_path.remove(finder)


class AfterImport(importlib.abc.MetaPathFinder):
    """Calls ``then(module)`` once, right after module ``name`` has been imported."""

    def __init__(self, name: str, then: Callable[[types.ModuleType], None]) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None) -> Any:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        loader, then = spec.loader, self.then
        execute = loader.exec_module

        def exec_module(module: types.ModuleType) -> None:
            execute(module)
            with contextlib.suppress(Exception):  # never into the program: it runs unwatched
                then(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec
