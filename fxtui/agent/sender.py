"""The thread that carries the agent's messages to the collector without ever blocking the program.

The program's threads only put a message (:mod:`fxtui.core.agent_messages`) on a bounded queue
(:class:`Sender`); a thread of the agent's own sends it, pickled over a local socket
(``multiprocessing.connection``, authenticated with a key the collector made: only the program it
started can speak to it). When the collector falls behind and the queue is full, the message is
dropped and counted (the next step says how many were), never waited for.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from multiprocessing.connection import Client, Connection
from typing import Any

from fxtui.core.agent_messages import Message, Step

#: Messages the sender may hold while the collector catches up (a step's message is a few hundred
#: bytes; a sampled one a few tens of kilobytes).
QUEUE = 512


class Sender:
    """Hands messages to a thread that sends them over ``connection``; drops what it cannot hold."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._queue: queue.Queue[Any] = queue.Queue(QUEUE)
        self.dropped = 0
        self._thread = threading.Thread(target=self._run, name="fxtui-agent-sender", daemon=True)
        self._thread.start()

    @classmethod
    def connect(cls, address: str, key: bytes) -> Sender:
        """Connect to the collector listening at ``address``: a socket's path, or ``HOST:PORT`` (a rank on
        another server)."""
        host, _, port = address.rpartition(":")
        if host and port.isdigit() and "/" not in address:
            return cls(Client((host, int(port)), family="AF_INET", authkey=key or None))
        return cls(Client(address, family="AF_UNIX", authkey=key or None))

    def send(self, message: Message) -> None:
        """Queue ``message``; drop it when the queue is full (never blocks)."""
        if self.dropped and isinstance(message, Step):
            message = Step(**{**message.__dict__, "dropped": self.dropped})
        try:
            self._queue.put_nowait(message)
        except queue.Full:
            self.dropped += 1

    def _run(self) -> None:
        while True:
            message = self._queue.get()
            if message is None:
                return
            try:
                self._connection.send(message)
            except (OSError, ValueError):
                return  # the collector is gone: the program goes on unwatched

    def close(self, timeout: float = 2.0) -> None:
        """Send what is queued (waiting at most ``timeout`` seconds), then close."""
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=timeout)
        self._thread.join(timeout)
        with contextlib.suppress(OSError):
            self._connection.close()
