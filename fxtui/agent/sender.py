"""The thread that carries the agent's messages to the collector without ever blocking the program.

The program's threads only put a message (:mod:`fxtui.wire.agent_messages`) on a bounded queue
(:class:`Sender`); a thread of the agent's own connects to the collector and sends it, pickled over
a local socket (``multiprocessing.connection``'s framing, authenticated with a key the collector
made: only the program it started can speak to it), the messages of :data:`GATHER_S` in one list.
When the collector falls behind and the queue is full, the message is dropped and counted (the next
step says how many were), never waited for.

The program's life never depends on the collector's. When it goes (killed, or stuck for
:data:`STALL_S` seconds), sending fails: the sender lets go of everything queued, takes no more
(:attr:`Sender.alive` turns False and the callbacks of :meth:`Sender.on_change` hear it, so the
agent can stop sampling), and never raises into the program. It then looks for a collector at
the same address every :data:`RETRY_S` seconds (a connection attempt on a local socket: a few
microseconds of this thread's): a new collector that adopts the job (``fxtui attach`` of a lost
job starts one) gets the program's greeting again, and with the next step every node and root
described so far, and figures resume. At the program's end :meth:`Sender.close` sends what is
queued, but never waits for a collector that is gone, and at most :data:`FINISH_S` seconds for one
that stopped reading.

A process the program forks (``os.fork``, a ``fork`` start method's workers) inherits the sender
without its thread and with the parent's socket: there the sender is dead at once and never touches
either (:func:`_forget_in_child`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import queue
import sys
import threading
import time
import weakref
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from fxtui.core.op_nodes import EagerNode, RootModule
from fxtui.wire.agent_contract import connect, connection_timeouts
from fxtui.wire.agent_messages import Hello, Message, Step

#: Messages the sender may hold while the collector catches up (a step's message is a few hundred
#: bytes; a sampled one a few tens of kilobytes).
QUEUE = 512
#: Seconds the sender's thread lets messages gather before it sends them, all in one write. Waking for every
#: step cost the program about 0.3 µs an op inside its steps (the thread takes the GIL to pickle each message as it
#: comes, in the middle of the program's ops: measured on 2 cores, a step of 1,000 small ops took 1.53 µs an op
#: under fxtui against 1.19 under python, 1.22 with messages gathered); the collector's figures come at most this
#: much later.
GATHER_S = 0.05
#: Messages sent in one write, at most.
GATHER = 256
#: Seconds between looks for a new collector while there is none.
RETRY_S = 2.0
#: Seconds a send may make no progress before the collector is taken for stuck (and so, gone).
STALL_S = 30.0
#: Seconds :meth:`Sender.close` waits for the queue to leave, when nothing leaves meanwhile.
FINISH_S = 1.0

_CONNECTING, _CONNECTED, _GONE, _CLOSED = "connecting", "connected", "gone", "closed"
_senders: weakref.WeakSet[Sender] = weakref.WeakSet()


class Sender:
    """Hands messages to a thread that sends them to the collector at ``address``; drops what it cannot hold.

    ``address`` is a socket's path, or ``HOST:PORT`` (a rank on another server). The connection is made in the
    sender's thread: nothing here waits on the collector.
    """

    def __init__(self, address: str, key: bytes, *, retry: bool = True) -> None:
        self.address = address
        self._key = key
        self._retry = retry
        self._queue: queue.Queue[Any] = queue.Queue(QUEUE)
        self.dropped = 0
        self.sent = 0
        """Messages that left so far."""
        self._state = _CONNECTING
        self._callbacks: list[Callable[[bool], None]] = []
        self._connection: Connection | None = None
        self._hello: Hello | None = None
        self._nodes: dict[int, EagerNode] = {}
        self._roots: dict[int, RootModule] = {}
        self._replay = False
        self._known = threading.Lock()
        """Guards the nodes and roots kept for a new collector (the program's threads add to them while none is
        there)."""
        self._wake = threading.Event()
        _senders.add(self)
        self._thread = threading.Thread(target=self._run, name="fxtui-agent-sender", daemon=True)
        self._thread.start()

    @classmethod
    def connect(cls, address: str, key: bytes) -> Sender:
        """A sender to the collector at ``address`` (connected in its own thread; never raises, never waits)."""
        return cls(address, key)

    # -- the program's side: never blocks, never raises ---------------------------------------------

    @property
    def alive(self) -> bool:
        """True while messages reach a collector, or soon may (still connecting); False once it is gone."""
        return self._state in (_CONNECTING, _CONNECTED)

    def on_change(self, callback: Callable[[bool], None]) -> None:
        """Call ``callback(alive)`` (in the sender's thread) each time the collector is lost or found again."""
        self._callbacks.append(callback)

    def send(self, message: Message) -> None:
        """Queue ``message``; drop it when the queue is full or no collector is there (never blocks)."""
        if isinstance(message, Hello):  # said again to every collector this sender meets
            self._hello = dataclasses.replace(message, torch=str(message.torch))  # plain str: no torch class to load
        if self._state not in (_CONNECTING, _CONNECTED):
            if self._state == _GONE:
                self._remember(message)  # for a collector that adopts the job
            return
        if self.dropped and isinstance(message, Step):
            message = dataclasses.replace(message, dropped=self.dropped)
        try:
            self._queue.put_nowait(message)
        except queue.Full:
            self.dropped += 1
        if self._state == _GONE:  # lost while this was put: let go of it too
            self._empty()

    def close(self, timeout: float = FINISH_S) -> None:
        """Send what is queued, waiting while it leaves (at most ``timeout`` seconds without progress), then close.

        Returns at once when the collector is gone.
        """
        self._wake.set()  # what is queued leaves at once, not after GATHER_S
        if self._state in (_CONNECTING, _CONNECTED):
            ended = False  # the end put after the last message (once there is room for it)
            last, seen = time.monotonic(), self.sent
            while self._thread.is_alive() and self._state in (_CONNECTING, _CONNECTED):
                if not ended:
                    try:
                        self._queue.put_nowait(None)
                        ended = True
                    except queue.Full:
                        pass
                self._thread.join(0.02)
                if self.sent != seen:
                    last, seen = time.monotonic(), self.sent
                elif time.monotonic() - last > timeout:
                    break
        self._state = _CLOSED
        self._wake.set()
        connection, self._connection = self._connection, None
        if connection is not None and not self._thread.is_alive():
            with contextlib.suppress(OSError):
                connection.close()
        # else the thread is inside a send: the process's exit closes the socket

    # -- the sender's thread ----------------------------------------------------------------------

    def _run(self) -> None:
        if not self._open(first=True):
            self._lose(None)
        while self._state != _CLOSED:
            if self._state == _GONE:
                if not self._retry or self._wake.wait(RETRY_S):
                    return
                if self._open(first=False):
                    self._change(True)
                continue
            messages = self._gather()
            ended = messages[-1] is None
            if ended:
                messages.pop()
            if messages and self._state != _CLOSED:
                self._send(messages)
            if ended or self._state == _CLOSED:
                self._finish()
                return

    def _gather(self) -> list[Any]:
        """The next messages: the first as it comes, then what comes within :data:`GATHER_S` (ending at ``None``,
        the end :meth:`close` puts)."""
        messages = [self._queue.get()]
        if messages[0] is None:
            return messages
        self._wake.wait(GATHER_S)  # set by close(): what is queued leaves at once
        with contextlib.suppress(queue.Empty):
            while len(messages) < GATHER:
                message = self._queue.get_nowait()
                messages.append(message)
                if message is None:
                    break
        return messages

    def _open(self, first: bool) -> bool:
        try:
            connection = connect(self.address, self._key)
            connection_timeouts(connection, STALL_S)
        except Exception as e:  # gone, refused, not ours: the program runs unwatched
            if first:
                print(f"fxtui: cannot reach the collector ({e}); the program runs unwatched", file=sys.stderr)
            return False
        if self._state == _CLOSED:
            connection.close()
            return False
        self._connection = connection
        if not first:  # a collector that adopts the job: who the program is, then every node with the next step
            self._replay = True
            self._state = _CONNECTED
            if self._hello is not None:
                self._send([self._hello])
            return self._state == _CONNECTED
        self._state = _CONNECTED
        return True

    def _send(self, messages: list[Any]) -> None:
        """Send ``messages`` in one write (a list: the collector reads each in turn)."""
        connection = self._connection
        if connection is None:
            return
        batch = [self._prepared(message) for message in messages]
        try:
            connection.send(batch)
        except (OSError, ValueError, EOFError):  # gone, or stuck for STALL_S: a partial message ends the stream
            self._lose(connection)
            return
        except Exception:  # a message that does not pickle: sent one by one, the ones that do still leave
            for message in batch:
                try:
                    connection.send([message])
                except (OSError, ValueError, EOFError):
                    self._lose(connection)
                    return
                except Exception:
                    self.dropped += 1
                else:
                    self.sent += 1
            return
        self.sent += len(batch)

    def _prepared(self, message: Any) -> Any:
        """``message`` as sent: the greeting as this sender keeps it; a step remembered, and after a new collector
        came, carrying every node and root described so far."""
        if isinstance(message, Hello):
            return self._hello or message
        if isinstance(message, Step):
            self._remember(message)
            if self._replay:
                self._replay = False
                with self._known:
                    nodes = {**self._nodes, **{n.id: n for n in message.nodes}}
                    roots = {**self._roots, **{r.index: r for r in message.roots}}
                return dataclasses.replace(message, nodes=list(nodes.values()), roots=list(roots.values()))
        return message

    def _remember(self, message: object) -> None:
        if isinstance(message, Step) and (message.nodes or message.roots):
            with self._known:
                for node in message.nodes:
                    self._nodes.setdefault(node.id, node)
                for root in message.roots:
                    self._roots.setdefault(root.index, root)

    def _lose(self, connection: Connection | None) -> None:
        """The collector is gone: let go of what is queued, take nothing more, say so once."""
        if self._state == _CLOSED:
            return
        self._state = _GONE
        self._connection = None
        if connection is not None:
            with contextlib.suppress(OSError):
                connection.close()
        self._empty()
        self._change(False)

    def _empty(self) -> None:
        """Let go of every queued message (the nodes and roots they describe kept for a new collector)."""
        with contextlib.suppress(queue.Empty):
            while True:
                self._remember(self._queue.get_nowait())

    def _change(self, alive: bool) -> None:
        for callback in list(self._callbacks):
            with contextlib.suppress(Exception):
                callback(alive)

    def _finish(self) -> None:
        connection, self._connection = self._connection, None
        self._state = _CLOSED
        if connection is not None:
            with contextlib.suppress(OSError):
                connection.close()

    def _forked(self) -> None:
        """In a forked child: dead at once, touching neither the parent's queue (its lock may be held) nor its
        socket (still the parent's to write)."""
        self._state = _CLOSED
        self._queue = queue.Queue(1)
        self._known = threading.Lock()
        self._callbacks = []
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(OSError):
                connection.close()  # the child's copy of the descriptor only: the parent's socket stays open


def _forget_in_child() -> None:
    for sender in list(_senders):
        sender._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
