"""Where a job's viewers attach: a local socket only its user may use, and a TCP port when asked.

Each viewer gets the graph, then the newest snapshot every time the collector publishes one
(a slow viewer skips snapshots rather than hold anything up), and may send commands: stop
the program, reset the figures, or leave. Viewers are independent: two attached at once
both work, and one that dies (killed, its connection dropped) is forgotten without the job
noticing.

Security. The local socket lives in the job's directory, which only its user can enter
(0700), is created 0600, and a viewer must prove it holds the job's key (the
``multiprocessing.connection`` challenge, with the key in a 0600 file); besides, the
connecting process's user is checked (``SO_PEERCRED``), so another user — root included —
is refused in one sentence even if the files' modes were loosened. TCP is off unless asked
(``--listen``); it binds to loopback unless told otherwise, and every TCP viewer must know the
job's token, printed when the job starts: a connection without it is refused and logged.
A message that does not unpickle, or is not a command, is dropped with a one-line warning; one
longer than any command ends its connection. No client can hold the others out: each proves the
key in a thread of its own, within seconds (:mod:`fxtui.wire.sockets`).
"""

from __future__ import annotations

import contextlib
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path

from fxtui.core.snapshot import Snapshot
from fxtui.wire.snapshot_packing import Publisher
from fxtui.wire.sockets import VIEWER_LIMIT, GuardedListener, Refused, receive, shutdown
from fxtui.wire.viewer_commands import Reset, ShowKind, ShowRank, Stop, StopProgram
from fxtui.wire.viewer_messages import ProgramEnded, ViewerRefused

#: What makes a snapshot for a viewer: ``make(rank, kind)``, each None for the job's own choice.
Make = Callable[[int | None, str | None], Snapshot]


def _peer_uid(connection: Connection) -> int | None:
    """The user of the process at the other end of a Unix socket (None where the system does not say)."""
    try:
        sock = socket.socket(fileno=connection.fileno())
        try:
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        finally:
            sock.detach()
        return int(struct.unpack("3i", creds)[1])
    except (OSError, AttributeError):
        return None


class _Viewer:
    """One attached viewer: a thread sends it the newest snapshot, another reads its commands."""

    def __init__(self, connection: Connection, server: ViewerServer) -> None:
        self.connection = connection
        self.server = server
        self.publish = Publisher(connection)
        self._latest: Snapshot | None = None
        self._fresh: Make | None = None
        self._exit: int | None = None
        self._sending = False
        self._ready = threading.Condition()
        self.alive = True
        self.rank: int | None = None
        """The rank this viewer asked to see (a distributed job); None: the first."""
        self.kind: str | None = None
        """The kind of step this viewer asked to see (``train``, ``eval``, ``generate``); None: the job's choice."""
        self._threads = 2
        self._threads_lock = threading.Lock()
        threading.Thread(target=self._send, daemon=True, name="fxtui-viewer-send").start()
        threading.Thread(target=self._read, daemon=True, name="fxtui-viewer-read").start()

    def _done(self) -> None:
        """A thread of this viewer's ends; the last one closes the connection."""
        with self._threads_lock:
            self._threads -= 1
            last = self._threads == 0
        if last:
            with contextlib.suppress(OSError):
                self.connection.close()

    def offer(self, snapshot: Snapshot) -> None:
        with self._ready:
            self._latest = snapshot
            self._ready.notify()

    def offer_fresh(self, make: Make) -> None:
        """Send a snapshot made by ``make(rank, kind)`` when this viewer is ready for it (in its own thread)."""
        with self._ready:
            self._fresh = make
            self._ready.notify()

    def offer_exit(self, code: int) -> None:
        with self._ready:
            self._exit = code
            self._ready.notify()

    def _send(self) -> None:
        try:
            self._send_until_gone()
        finally:
            self._done()

    def _send_until_gone(self) -> None:
        while self.alive:
            with self._ready:
                while self._latest is None and self._fresh is None and self._exit is None and self.alive:
                    self._ready.wait(1.0)
                snapshot, self._latest = self._latest, None
                make, self._fresh = self._fresh, None
                code = self._exit
                self._sending = True
            if make is not None and snapshot is None:
                try:
                    snapshot = make(self.rank, self.kind)
                except Exception as e:  # a figure that cannot be made costs this viewer's first look
                    self.server.warn(f"could not make a snapshot for a new viewer ({type(e).__name__}: {e})")
            try:
                if snapshot is not None:
                    self.publish(snapshot)
                if code is not None and snapshot is None:
                    self.connection.send(ProgramEnded(code))
                    with self._ready:
                        self._exit = None
            except (OSError, ValueError, EOFError):
                self.drop()
            finally:
                self._sending = False

    @property
    def settled(self) -> bool:
        """Everything offered to this viewer was sent (or it is gone)."""
        with self._ready:
            idle = self._latest is None and self._fresh is None and self._exit is None and not self._sending
        return idle or not self.alive

    def _read(self) -> None:
        try:
            self._read_until_gone()
        finally:
            self._done()

    def _read_until_gone(self) -> None:
        while self.alive:
            try:
                command = receive(self.connection, VIEWER_LIMIT)
            except (EOFError, OSError):  # gone, or a message longer than any command: the connection ends
                self.drop()
                return
            except Refused as e:  # a pickle of a type that is no command: never loaded
                self.server.warn(f"a viewer sent {e}, which a job does not take; dropped it")
                continue
            except Exception as e:  # not a pickle, or a class fxtui does not know: dropped, said once
                self.server.warn(f"a viewer sent a message that does not read ({type(e).__name__}); dropped it")
                continue
            if isinstance(command, Stop):
                self.drop()  # the viewer leaves; the job goes on
            elif isinstance(command, StopProgram):
                self.server.on_stop()
            elif isinstance(command, Reset):
                self.server.on_reset()
            elif isinstance(command, ShowRank | ShowKind):
                if isinstance(command, ShowRank):
                    self.rank = command.rank
                else:
                    self.kind = command.kind
                if self.server.current is not None:  # now, not at the next snapshot (there is none once it ended)
                    self.offer_fresh(self.server.current)
            else:
                self.server.warn(f"a viewer sent {type(command).__name__}, which a job does not take; dropped it")

    def drop(self) -> None:
        if self.alive:
            self.alive = False
            shutdown(self.connection)  # both threads see the end; the last of them closes it
            with self._ready:
                self._ready.notify()
            self.server.forget(self)


class ViewerServer:
    """Accepts viewers on the job's socket (and on TCP when ``listen`` says ``HOST:PORT``).

    ``current(rank, kind)`` makes the job's snapshot as it is now: each viewer's first snapshot is made when it
    attaches, never one kept from before (the job has moved on since), and again when it asks for another rank or
    kind of step.
    """

    def __init__(
        self,
        path: Path,
        key: bytes,
        listen: str = "",
        *,
        on_stop: Callable[[], None] = lambda: None,
        on_reset: Callable[[], None] = lambda: None,
        current: Make | None = None,
    ) -> None:
        self.on_stop, self.on_reset = on_stop, on_reset
        self.current = current
        self._viewers: list[_Viewer] = []
        self._lock = threading.Lock()
        local = GuardedListener(str(path), key, self._local, warn=self.warn, name="fxtui-viewers")
        self._listeners = [local]
        path.chmod(0o600)
        self.tcp_address = ""
        if listen:
            host, _, port = listen.rpartition(":")
            tcp = GuardedListener((host or "127.0.0.1", int(port)), key, self._add, warn=self.warn,
                                  name="fxtui-tcp-viewers")  # fmt: skip
            self._listeners.append(tcp)
            self.tcp_address = "{}:{}".format(*tcp.address)

    @property
    def viewers(self) -> int:
        return len(self._viewers)

    def start(self) -> None:
        for listener in self._listeners:
            listener.start()

    def _local(self, connection: Connection) -> None:
        uid = _peer_uid(connection)
        if uid is not None and uid != _own_uid():
            self.warn(f"refused a viewer of user {uid}: the job is its owner's alone")
            with contextlib.suppress(OSError):
                connection.send(ViewerRefused("this job belongs to another user: only its owner may watch it"))
                connection.close()
            return
        self._add(connection)

    def _add(self, connection: Connection) -> None:
        viewer = _Viewer(connection, self)
        with self._lock:
            self._viewers.append(viewer)
        if self.current is not None:
            viewer.offer_fresh(self.current)  # at once: a viewer attaching to a long job sees its figures now

    def publish(self, snapshot: Snapshot | Make) -> None:
        """Offer every viewer the newest snapshot (each gets it when it is ready for it): ``snapshot``, or
        ``snapshot(rank, kind)`` for the rank and kind of step each viewer asked to see, made once per pair asked
        for."""
        made: dict[tuple[int | None, str | None], Snapshot] = {}

        def of(rank: int | None, kind: str | None) -> Snapshot:
            if isinstance(snapshot, Snapshot):
                return snapshot
            if (rank, kind) not in made:
                made[rank, kind] = snapshot(rank, kind)
            return made[rank, kind]

        with self._lock:
            viewers = list(self._viewers)
        for viewer in viewers:
            viewer.offer(of(viewer.rank, viewer.kind))

    def announce_exit(self, code: int) -> None:
        """Tell every viewer the program's exit status."""
        with self._lock:
            viewers = list(self._viewers)
        for viewer in viewers:
            viewer.offer_exit(code)

    def settle(self, timeout: float) -> None:
        """Wait until every attached viewer was sent what it was offered (the last profile and the exit status),
        at most ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                viewers = list(self._viewers)
            if all(viewer.settled for viewer in viewers):
                return
            time.sleep(0.05)

    def forget(self, viewer: _Viewer) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._viewers.remove(viewer)

    def warn(self, message: str) -> None:
        """One line in the collector's log (a detached job has no terminal)."""
        with contextlib.suppress(OSError, ValueError):
            print(f"fxtui collector: {message}", file=sys.stderr, flush=True)

    def close(self) -> None:
        for listener in self._listeners:
            listener.close()
        with self._lock:
            viewers = list(self._viewers)
        for viewer in viewers:
            viewer.drop()


def _own_uid() -> int:
    import os

    return os.getuid()
