"""Install the agent in this process the moment it imports torch, when a collector listens.

Imported by the boot (the program itself) and by ``site/sitecustomize.py`` in every other Python
process the program starts (``torchrun``'s ranks, spawned workers). Kept apart from the boot so
that ``python -m fxtui.agent.boot`` is not already imported when it runs as ``__main__``
(``runpy`` warns on the program's stderr otherwise), and so that a process has one hook, not two.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

from fxtui.wire.agent_env import AGENT_ADDRESS  # a name only: this runs as every process starts


class _AfterTorchImport:
    """Calls ``then()`` once, right after ``import torch`` has finished, in whatever code imported it."""

    def __init__(self, then: Callable[[], None]) -> None:
        self.then = then

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None) -> Any:
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)  # once; and not asked again while torch imports itself
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        execute = loader.exec_module
        then = self.then

        def exec_module(module: types.ModuleType) -> None:
            execute(module)
            then()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _install_agent() -> None:
    from fxtui.agent import agent

    agent.start_from_environment()
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_forked)


def _forked() -> None:
    """In a process the program forks (``os.fork``, DataLoader workers, a ``fork`` pool): no agent.

    The child inherits the agent's hooks but not its sender's thread, and its socket is the parent's: it runs
    unwatched, as it would without fxtui, and the parent's figures stay the parent's. (A child that should be
    watched is a spawned one, or a rank: it starts an agent of its own.)
    """
    agent = sys.modules.get("fxtui.agent.agent")
    if agent is not None:
        agent.forked()


_watching = False


def watch_this_process() -> None:
    """Install the agent once this process imports torch (at once if it has), when a collector listens.

    Called by the boot for the program itself and by the program's other Python processes as they start;
    once per process.
    """
    global _watching
    if _watching or not os.environ.get(AGENT_ADDRESS):
        return
    _watching = True
    if "torch" in sys.modules:
        _install_agent()
    else:
        sys.meta_path.insert(0, _AfterTorchImport(_install_agent))
