"""Every agent connection of a collector read by one thread: :class:`AgentIntake`.

A collector of a job of hundreds of ranks holds one connection a rank. Read by a thread each (blocking
``recv_bytes``), 1,024 ranks were 1,024 threads on the collector's cores: each wake-up a switch, the GIL passed
among them, the machine's load past 100 on two cores. Here one thread waits on every connection at once
(:mod:`selectors`: epoll), reads what each has (non-blocking ``os.read``) and cuts it into messages itself, framed
exactly as ``multiprocessing.connection`` frames them (:class:`Frames`), each at most the intake's limit (a longer
one ends its connection, as ``recv_bytes(limit)`` would), each unpickled by :class:`~fxtui.wire.sockets.Unpickler`
(fxtui's data and plain types only). The key's handshake is not here: a connection comes once it proved the key
(:class:`~fxtui.wire.sockets.GuardedListener`).

A connection that holds a conversation (an agent that asks the collector something and waits for its answer, the
program's boot that waits for its profile) moves to a thread of its own, blocking again, as every connection was
before: those are a handful, and their answers may take a while (a lead to reach across nodes), which the intake
must never wait for.
"""

from __future__ import annotations

import contextlib
import io
import os
import selectors
import socket
import struct
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection

from fxtui.wire.sockets import Unpickler

#: Bytes read from one connection at one time (then the next ready one gets its turn).
READ_BYTES = 256 * 1024

#: What a connection's messages go to, in the intake's thread: each message, or the ``Exception`` that one message
#: did not read with (the next one may). It returns None, or a function to run in a thread of the connection's own,
#: which then reads the connection's next messages there (a conversation).
Take = Callable[[object], Callable[[], None] | None]


class TooLong(OSError):
    """A message longer than the connection's limit: the connection can no longer be read."""


class Frames:
    """Bytes read from a connection, cut into its messages as ``multiprocessing.connection`` frames them: a signed
    4-byte big-endian length then the bytes; a length of -1 is followed by an unsigned 8-byte one (a message of 2 GB
    or more)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        """The messages ``data`` completes (none, or several); :class:`TooLong` when one says it is too long."""
        buffer = self._buffer
        buffer += data
        out = []
        while True:
            if len(buffer) < 4:
                break
            (size,) = struct.unpack_from("!i", buffer)
            head = 4
            if size == -1:
                if len(buffer) < 12:
                    break
                (size,) = struct.unpack_from("!Q", buffer, 4)
                head = 12
            if size > self.limit:
                raise TooLong(f"a message of {size:,} bytes, more than {self.limit:,}")
            size = max(size, 0)  # a negative length other than -1: an empty message, as Connection reads it
            if len(buffer) < head + size:
                break
            out.append(bytes(buffer[head : head + size]))
            del buffer[: head + size]  # a bytearray's front is cut in place, without copying the rest
        return out

    @property
    def partial(self) -> bool:
        """Whether part of a message is waiting for the rest."""
        return bool(self._buffer)


def decode(data: bytes) -> object:
    """One message's bytes as the collector takes them, or the ``Exception`` they do not read with."""
    try:
        return Unpickler(io.BytesIO(data)).load()
    except Exception as e:  # Refused, UnpicklingError, EOFError of a cut pickle…: that message only
        return e


class _Reading:
    """One connection the intake reads."""

    __slots__ = ("connection", "ended", "frames", "take")

    def __init__(self, connection: Connection, take: Take, ended: Callable[[], None], limit: int) -> None:
        self.connection = connection
        self.take = take
        self.ended = ended
        self.frames = Frames(limit)


class AgentIntake:
    """Reads every connection :meth:`add` gives it in one thread (started by the first :meth:`add`, so that a
    process that forks before it serves, as ``fxtui run``'s collector beside the program does, starts it where it
    serves)."""

    def __init__(
        self, limit: int, name: str = "fxtui-intake", warn: Callable[[str], None] = lambda sentence: None
    ) -> None:
        self.limit = limit
        self.name = name
        self.warn = warn
        """Hears a connection given up because what its messages go to failed (the others are read on)."""
        self._lock = threading.Lock()
        self._selector: selectors.BaseSelector | None = None
        self._wake: tuple[socket.socket, socket.socket] | None = None
        self._adding: list[_Reading] = []
        self._thread: threading.Thread | None = None
        self._closed = False
        self.conversations = 0
        """Connections moved to a thread of their own so far."""

    def add(self, connection: Connection, take: Take, ended: Callable[[], None]) -> None:
        """Read ``connection`` from now on: each message to ``take``; ``ended()`` once, when it ends (end of file, an
        error, a message too long, or :meth:`close`). The intake owns the connection and closes it."""
        reading = _Reading(connection, take, ended, self.limit)
        with self._lock:
            if self._closed:
                closed = True
            else:
                closed = False
                self._adding.append(reading)
                if self._thread is None:
                    self._selector = selectors.DefaultSelector()
                    self._wake = socket.socketpair()
                    self._wake[0].setblocking(False)
                    self._wake[1].setblocking(False)
                    self._selector.register(self._wake[0], selectors.EVENT_READ, None)
                    self._thread = threading.Thread(target=self._run, daemon=True, name=self.name)
                    self._thread.start()
        if closed:
            _end(reading)
            return
        self._poke()

    def close(self, timeout: float = 2.0) -> None:
        """Stop reading: every connection still read ends (its ``ended()`` called, then closed by the intake's own
        thread, so that no descriptor is freed under a read)."""
        with self._lock:
            self._closed = True
            thread = self._thread
        self._poke()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    @property
    def reading(self) -> int:
        """Connections the intake's thread reads now (not counting those moved to threads of their own)."""
        selector = self._selector
        held = selector.get_map() if selector is not None else None  # None too once the intake closed
        return max(0, len(held) - 1) if held is not None else 0

    def _poke(self) -> None:
        wake = self._wake
        if wake is not None:
            with contextlib.suppress(OSError):  # full: it is awake already
                wake[1].send(b"\0")

    # -- the intake's thread ---------------------------------------------------------------------

    def _run(self) -> None:
        selector = self._selector
        assert selector is not None and self._wake is not None
        try:
            while True:
                for key, _ in selector.select():
                    if key.data is None:
                        with contextlib.suppress(OSError):
                            while self._wake[0].recv(4096):
                                pass
                    else:
                        self._read(selector, key.data)
                with self._lock:
                    adding, self._adding = self._adding, []
                    closed = self._closed
                for reading in adding:
                    try:
                        os.set_blocking(reading.connection.fileno(), False)
                        selector.register(reading.connection.fileno(), selectors.EVENT_READ, reading)
                    except (OSError, ValueError):
                        _end(reading)
                if closed:
                    break
        finally:
            for key in list(selector.get_map().values()):
                if key.data is not None:
                    selector.unregister(key.fileobj)
                    _end(key.data)
            selector.close()
            for each in self._wake:
                each.close()

    def _read(self, selector: selectors.BaseSelector, reading: _Reading) -> None:
        fd = reading.connection.fileno()
        try:
            data = os.read(fd, READ_BYTES)
            if not data:
                raise EOFError
            messages = reading.frames.feed(data)
        except BlockingIOError:
            return  # woken for nothing
        except (EOFError, OSError):
            selector.unregister(fd)
            _end(reading)
            return
        for at, each in enumerate(messages):
            try:
                then = reading.take(decode(each))
            except Exception as e:  # a fault of what takes them: this connection ends, as its thread did before
                selector.unregister(fd)
                self.warn(f"stopped reading an agent's connection: {type(e).__name__}: {e}")
                _end(reading)
                return
            if then is not None:  # a conversation: the rest of this connection in a thread of its own
                selector.unregister(fd)
                self.conversations += 1
                rest = messages[at + 1 :]
                threading.Thread(target=_converse, args=(reading, then, rest), daemon=True,
                                 name=f"{self.name}-conversation").start()  # fmt: skip
                return


def _converse(reading: _Reading, then: Callable[[], None], rest: list[bytes]) -> None:
    """A connection's conversation, and its next messages, read blocking in this thread until it ends."""
    try:
        os.set_blocking(reading.connection.fileno(), True)
        then()
        pending = list(rest)
        while True:
            for each in pending:
                more = reading.take(decode(each))
                if more is not None:
                    more()
            data = os.read(reading.connection.fileno(), READ_BYTES)
            if not data:
                return
            pending = reading.frames.feed(data)
    except (EOFError, OSError, ValueError):
        return
    finally:
        _end(reading)


def _end(reading: _Reading) -> None:
    """The connection's end: its ``ended()``, then it closes (a failure of either is the connection's alone)."""
    try:
        reading.ended()
    finally:
        with contextlib.suppress(OSError):
            reading.connection.close()
