"""What the agent tells the collector, and the thread that carries it without ever blocking the program.

Three messages: :class:`Hello` when the program's agent starts, a :class:`Step` per step,
:class:`Bye` when the program ends. They travel pickled over a local socket
(``multiprocessing.connection``, authenticated with a key the collector made: only the
program it started can speak to it).

The program's threads only put a message on a bounded queue (:class:`Sender`); a thread of
the agent's own sends it. When the collector falls behind and the queue is full, the message
is dropped and counted (the next step says how many were), never waited for. Torch-free, so
the collector reads the messages without importing torch.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from dataclasses import dataclass, field
from multiprocessing.connection import Client, Connection
from typing import Any

from fxtui.engine.capture.eager_nodes import EagerNode, RootModule

#: Messages the sender may hold while the collector catches up (a step's message is a few hundred
#: bytes; a sampled one a few tens of kilobytes).
QUEUE = 512


@dataclass(frozen=True)
class Hello:
    """The program's agent is running."""

    pid: int
    argv: tuple[str, ...]
    torch: str
    threads: int
    rank: int | None = None
    """The process's rank in a distributed job (``RANK`` as torchrun sets it); None outside one."""
    world_size: int = 1
    host: str = ""


@dataclass(frozen=True)
class GenerationCall:
    """One ``generate()`` call of the step (:mod:`fxtui.engine.run.generate_watch`)."""

    wall_ns: int
    ttft_ns: int
    """From the call to the second forward's start."""
    steps_ns: tuple[int, ...]
    """Each decode step: a forward's start to the next one's (the last: to the call's end)."""
    prompt_tokens: int
    new_tokens: int
    batch: int = 1
    kv_cache_bytes: int | None = None
    """Counted in sampled calls only."""
    kv_layer_bytes: tuple[int, ...] = ()
    cache: str = ""
    weight_bytes: int = 0
    """The model's parameters and buffers (sampled calls only)."""


@dataclass(frozen=True)
class Step:
    """One step: its wall time and phases; for a sampled step its ops too; the nodes and roots first seen in it."""

    index: int
    kind: str
    wall_ns: int
    phases_ns: tuple[int, ...]
    sampled: bool
    describing: bool
    """Sampled, and slower for noting new nodes' inputs and source lines: its ops are not figures."""
    ops: list[tuple[int, int, str, int]] = field(default_factory=list)
    """(node id, ns, output shape, clock at its start) per op, in the order they ran."""
    nodes: list[EagerNode] = field(default_factory=list)
    roots: list[RootModule] = field(default_factory=list)
    dropped: int = 0
    """Messages dropped before this one (the collector fell behind)."""
    start_ns: int = 0
    """The clock (``perf_counter_ns``: one clock for every process of a machine) when the step began."""
    generation: tuple[GenerationCall, ...] = ()
    """The step's ``generate()`` calls (a step is one call in a program without an optimizer)."""
    faults: int = -1
    """A sampled step's minor page faults (the program's process, every thread); -1 where not counted."""
    note: str = ""
    """Something the agent could not do, said once (a compiled graph whose kernels it cannot time)."""


@dataclass(frozen=True)
class Bye:
    """The program is ending."""

    steps: int
    failed: str = ""
    """Why the agent stopped watching early, when it did."""


Message = Hello | Step | Bye


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
