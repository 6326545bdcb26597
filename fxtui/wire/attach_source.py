"""A viewer of a running job: the snapshots its collector serves, as a snapshot source for the app or a report.

Leaving (the app closing, a viewer killed) never stops the job; :class:`~fxtui.wire.viewer_commands.StopProgram`
does, and only when a viewer sends it. When the collector goes away without saying the program
ended, the last figures stay and the view says so in one line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection

from fxtui.core.errors import FxtuiError
from fxtui.core.snapshot import Snapshot, State
from fxtui.wire import agent_contract
from fxtui.wire.job_directory import VIEWER, JobInfo, job_dir, read_key
from fxtui.wire.snapshot_packing import SnapshotReader
from fxtui.wire.sockets import shutdown
from fxtui.wire.viewer_commands import ShowKind, Stop, ViewerCommand
from fxtui.wire.viewer_messages import ProgramEnded, ViewerRefused


def remote_job(address: str) -> JobInfo:
    """A job served over TCP at ``HOST:PORT`` (its collector on another server)."""
    return JobInfo(id=address, command=(address,), cwd="", pid=0, listen=address)


def connect(job: JobInfo, token: bytes | None = None) -> Connection:
    """A connection to ``job``'s collector (over TCP with ``token`` for a remote job); one sentence when it cannot
    be had."""
    key = token if token is not None else read_key(job)
    try:
        # Never waiting for ever on a collector that does not answer (stopped, or wedged).
        connection = agent_contract.connect(job.listen if token is not None else str(job_dir(job.id) / VIEWER), key)
    except FileNotFoundError:
        raise FxtuiError(f"job {job.id} is no longer served (its collector ended)") from None
    except (OSError, EOFError) as e:
        raise FxtuiError(f"cannot reach job {job.id}'s collector: {e}") from None
    except Exception as e:  # the key's challenge failed
        raise FxtuiError(f"job {job.id}'s collector refused this viewer ({type(e).__name__})") from None
    return connection


class AttachSource:
    """Snapshots from a job's collector (:class:`~fxtui.wire.snapshot_source.SnapshotSource`)."""

    def __init__(self, job: JobInfo, token: bytes | None = None) -> None:
        self.job = job
        self._connection = connect(job, token)
        self._lock = threading.Lock()
        self.last: Snapshot | None = None
        self.exit_code: int | None = None
        self._left = False
        self.ended = threading.Event()
        """Set when the collector's connection closed (the job ended, or the viewer left)."""

    def send(self, command: ViewerCommand) -> None:
        """Pass ``command`` to the collector; :class:`Stop` leaves the job (it goes on)."""
        with self._lock, contextlib.suppress(OSError, ValueError):
            if isinstance(command, Stop):
                self._left = True
            self._connection.send(command)
            if isinstance(command, Stop):
                shutdown(self._connection)  # the reader sees the end and closes it (run's finally)

    def run(self, publish: Callable[[Snapshot], None]) -> None:
        """Publish what the collector sends until the connection closes."""
        reader = SnapshotReader()
        refused = ""
        try:
            while True:
                try:
                    message = self._connection.recv()
                except (EOFError, OSError, ValueError):
                    break
                except Exception:  # a message that does not read: dropped
                    continue
                if isinstance(message, ProgramEnded):
                    self.exit_code = message.code
                elif isinstance(message, ViewerRefused):
                    refused = message.reason
                elif (snapshot := reader.read(message)) is not None:
                    self.last = snapshot
                    publish(snapshot)
        finally:
            with contextlib.suppress(OSError):
                self._connection.close()
            self.ended.set()
        last = self.last
        if refused:
            publish(Snapshot(None, State.ERROR, message=refused))
        elif last is not None and last.state is not State.DONE and not self._left:
            publish(
                dataclasses.replace(
                    last,
                    state=State.ERROR,
                    seq=last.seq + 1,
                    message="the job's collector ended unexpectedly; these are the last figures it sent",
                )
            )

    def take(self, timeout: float = 10.0, kind: str | None = None) -> Snapshot | None:
        """The first complete snapshot (headless ``fxtui attach --once``) of ``kind``'s steps (the job's choice when
        None, or when the program ran no step of that kind), then leave."""
        got: list[Snapshot] = []
        ready = threading.Event()

        def keep(snapshot: Snapshot) -> None:
            steps = snapshot.steps
            if snapshot.graph is None or steps is None:
                return
            if kind is None or steps.kind == kind or kind not in {k.kind for k in steps.kinds}:
                got.append(snapshot)
                ready.set()

        if kind is not None:
            self.send(ShowKind(kind))
        reader = threading.Thread(target=self.run, args=(keep,), daemon=True)
        reader.start()
        ready.wait(timeout)
        self.send(Stop())
        reader.join(5)
        return got[0] if got else self.last
