"""``fxtui run`` under the app: an engine process starts the program and collects from it; the app only draws.

The app's worker relays snapshots as for a model (:class:`~fxtui.engine.remote.ProcessSource`); the
engine process here, instead of rerunning a model, starts the program (:class:`ProgramJob`, its
output to a log file the app shows), aggregates what its agent sends (:class:`Collector`) and
publishes a snapshot every ``interval``. The program keeps its own priority; the engine process
lowers its own after starting it, so neither the app nor the collector takes the cores from the
user's job. Stop (the app closing) stops the program as Ctrl+C would, then the last snapshot
and the program's exit status go to the app.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from multiprocessing.connection import Connection
from typing import Any

from fxtui.core.commands import Reset, Stop
from fxtui.core.settings import ProgramSettings
from fxtui.core.snapshot import Snapshot, State
from fxtui.engine.remote import ProcessSource, Publisher

#: Seconds between snapshots: the first step shows within one of them.
INTERVAL = 0.25


class RunSource(ProcessSource):
    """A snapshot source for the app: the program and its collector in an engine process."""

    def __init__(self, settings: ProgramSettings) -> None:
        super().__init__(settings, child=_run_child, name="fxtui-run")
        self.final: Snapshot | None = None
        """The last snapshot, once the engine process has ended (for the summary printed after the app)."""
        self.exit_code: int | None = None
        self.log_path = ""
        self._done = threading.Event()

    def received(self, kind: str, payload: Any) -> None:
        if kind == "exit":
            self.exit_code = payload
        elif kind == "log":
            self.log_path = payload

    def run(self, publish: Any) -> None:
        def keep(snapshot: Snapshot) -> None:
            self.final = snapshot
            publish(snapshot)

        try:
            super().run(keep)
        finally:
            self._done.set()

    def stop_program(self, timeout: float = 20.0) -> None:
        """Stop the program (as Ctrl+C would) and wait for the last snapshot and its exit status."""
        self.send(Stop())
        self._done.wait(timeout)

    @property
    def exit_status(self) -> int:
        """The program's exit status as a shell reports it (128+N when signal N ended it)."""
        from fxtui.engine.run.job import exit_status

        return exit_status(self.exit_code) if self.exit_code is not None else 1


def _run_child(settings: ProgramSettings, send: Connection, commands: Connection) -> None:
    """The engine process: start the program, collect, publish snapshots, obey Stop and Reset."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    from fxtui.core.errors import FxtuiError
    from fxtui.engine.run.agent import AgentOptions
    from fxtui.engine.run.collector import Collector
    from fxtui.engine.run.job import ProgramJob, log_tail

    publish = Publisher(send)
    lock = threading.Lock()
    collector = Collector(settings.command, warmup=settings.warmup)

    def receive(message: object) -> None:
        with lock:
            collector.receive(message)

    try:
        job = ProgramJob(
            settings.command,
            receive,
            options=AgentOptions(settings.warmup, settings.every, settings.budget),
            log=True,
        )
        job.start()
    except (FxtuiError, OSError) as e:
        publish(Snapshot(None, State.ERROR, message=str(e)))
        send.close()
        return
    os.nice(10)  # after the program started: it keeps its own priority
    collector.started(job.process.pid if job.process else 0, str(job.log_path or ""))
    send.send(("log", str(job.log_path or "")))
    stop = threading.Event()

    def obey() -> None:
        while True:
            try:
                command = commands.recv()
            except (EOFError, OSError):
                command = Stop()  # the app is gone
            if isinstance(command, Stop):
                stop.set()
                return
            if isinstance(command, Reset):
                with lock:
                    collector.reset()

    threading.Thread(target=obey, daemon=True, name="fxtui-commands").start()
    try:
        while job.running and not stop.wait(INTERVAL):
            with lock:
                collector.tail(log_tail(job.log_path))
                snapshot = collector.snapshot(State.RUNNING)
            publish(snapshot)
        code = job.stop() if stop.is_set() else job.wait()
        with lock:
            collector.ended(code)
            collector.tail(log_tail(job.log_path))
            final = collector.snapshot(
                State.DONE, message=f"{collector.program.script} {collector.program.status_text()}"
            )
        publish(final)
        send.send(("exit", code))
    except Exception as e:  # a collector bug: tell the app in one line, stop the program, vanish cleanly
        publish(Snapshot(None, State.ERROR, message=f"internal error {type(e).__name__}: {e}"))
        job.stop()
    finally:
        job.close()
        time.sleep(0.05)
        send.close()
