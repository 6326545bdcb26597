"""``fxtui.watch()``: the agent of ``fxtui run`` inside the caller's own process, for notebooks and code that is
not a script.

::

    with fxtui.watch() as w:
        train()          # the user's own loop, data, optimizer
    print(w.report().table())

The steps, their phases and the sampled steps' nodes are found exactly as under ``fxtui run``
(:mod:`fxtui.engine.run.agent`). The difference is where they are aggregated: here, in the
caller's thread at the end of each step (a few microseconds for an unsampled step, a
millisecond or so for a sampled one at a few hundred ops), since there is no other process to
hand them to. Hooks are removed when the block ends.
"""

from __future__ import annotations

import sys
import threading
from types import TracebackType

from fxtui.core.snapshot import State
from fxtui.engine.report import Report
from fxtui.engine.run.agent import Agent
from fxtui.engine.run.agent_options import AgentOptions
from fxtui.engine.run.collector import Collector


class Watch:
    """Watches the steps run inside its ``with`` block; :meth:`report` gives what it measured."""

    def __init__(self, warmup: int = 5, every: int = 0, name: str = "") -> None:
        self.collector = Collector((name or _caller(),), warmup=warmup)
        self._lock = threading.Lock()
        self.agent = Agent(self._receive, AgentOptions(warmup, every))
        self.active = False

    def _receive(self, message: object) -> None:
        with self._lock:
            self.collector.receive(message)

    def __enter__(self) -> Watch:
        import os

        import torch

        from fxtui.engine.run import wire

        self._receive(wire.Hello(os.getpid(), tuple(sys.argv), torch.__version__, torch.get_num_threads()))
        self.agent.install()
        self.active = True
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.agent.finish()
        self.agent.uninstall()
        self.active = False
        with self._lock:
            self.collector.ended(1 if error is not None else 0)

    def report(self) -> Report:
        """What was measured so far (inside the block too): steps, phases, nodes and modules."""
        with self._lock:
            return Report.from_snapshot(self.collector.snapshot(State.RUNNING if self.active else State.DONE))


def _caller() -> str:
    """The name the report gives the watched code: the caller's file (a notebook says ``<ipython-input…>``)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == "fxtui":
        frame = frame.f_back  # type: ignore[assignment]
    return frame.f_code.co_filename.rsplit("/", 1)[-1] if frame is not None else "watch"
