"""The engine child of ``fxtui MODEL``, seen from the app's process: start it, relay its snapshots, pass commands.

Why a process and not a thread: a torch operator releases the GIL while it computes, but must
take it back to return to Python. In one process, whenever the UI thread is rendering at that
moment the node's timed region grows by the wait: the UI would distort what it measures. In a
child process the model has an interpreter of its own; the UI only unpickles a snapshot a few
times a second. It also keeps torch out of the UI process, which starts faster for it. The child's
own code is :mod:`fxtui.measure.child`; this module imports neither torch nor the engine.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing as mp
import signal
import threading
from collections.abc import Callable
from typing import Any

from fxtui.core.snapshot import Snapshot, State
from fxtui.measure.child import child_main
from fxtui.wire.snapshot_packing import SnapshotReader
from fxtui.wire.viewer_commands import Stop, ViewerCommand


class ProcessSource:
    """A :class:`~fxtui.wire.snapshot_source.SnapshotSource` backed by a child process."""

    def __init__(self, options: Any, child: Callable[..., None] | None = None, name: str = "fxtui-engine") -> None:
        """``child(options, send, commands)`` runs in the child process (a model's session by default)."""
        self.options = options
        self._child = child or child_main
        self._name = name
        self._ctx = mp.get_context("spawn")
        self._commands, self._child_commands = self._ctx.Pipe()
        self._process: Any = None
        self._lock = threading.Lock()
        self._stopped = False

    def send(self, command: ViewerCommand) -> None:
        """Pass ``command`` to the child (it acts between runs); a ``Stop`` also ends :meth:`run`."""
        with self._lock:
            if isinstance(command, Stop):
                self._stopped = True
            elif self._stopped:
                return
            if self._process is None:
                return
            with contextlib.suppress(OSError):  # the child is gone; run() reports it
                self._commands.send(command)

    def start(self) -> None:
        """Start the child process (idempotent).

        Call it before a full-screen app takes over stdio: multiprocessing hands
        ``sys.stderr``'s file descriptor to its helper process, and an app that
        has replaced ``sys.stderr`` has none. Starting early also overlaps loading
        the model with the app's own start-up.
        """
        with self._lock:
            if self._process is not None or self._stopped:
                return
            self._receive, send = self._ctx.Pipe(duplex=False)
            self._process = self._ctx.Process(
                target=self._child, args=(self.options, send, self._child_commands), daemon=True, name=self._name
            )
            self._process.start()
        send.close()

    def received(self, message: object) -> None:
        """A message from the child that is neither a graph nor a snapshot (a subclass's own)."""

    def run(self, publish: Callable[[Snapshot], None]) -> None:
        """Start the child if needed and publish what it sends until it ends."""
        self.start()
        if self._process is None:
            return
        receive = self._receive
        reader = SnapshotReader()
        last: Snapshot | None = None
        try:
            while True:
                try:
                    message = receive.recv()
                except EOFError:
                    break
                snapshot = reader.read(message)
                if snapshot is None:
                    self.received(message)
                    continue
                last = snapshot
                publish(snapshot)
        finally:
            self._process.join(timeout=5)
            if self._process.is_alive():
                self._process.terminate()
                self._process.join(timeout=5)
        if not self._stopped and (last is None or last.state not in (State.DONE, State.ERROR)):
            code = self._process.exitcode
            why = " (killed: perhaps out of memory)" if code == -signal.SIGKILL else ""
            message = f"the profiling process ended unexpectedly with exit code {code}{why}"
            if last is None or not last.nodes:
                publish(Snapshot(reader.graph, State.ERROR, seq=(last.seq + 1) if last else 1, message=message))
                return
            # What it measured stays: the last snapshot's figures, said to be final (the app can save them).
            publish(
                dataclasses.replace(
                    last,
                    state=State.ERROR,
                    seq=last.seq + 1,
                    error=None,
                    what_if_progress="",
                    message=f"{message}; the figures shown are its last and final",
                )
            )
