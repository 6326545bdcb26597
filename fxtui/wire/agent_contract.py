"""What a collector tells the agent in the program it starts: where to report, the key, how to sample; and how
any process reaches a collector.

Set by the collector (:mod:`fxtui.jobs.launch`) in the program's environment, read by the agent
(:mod:`fxtui.agent`). Free of heavy imports: the boot reads them before the program has imported anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

# The environment's names (where the collector listens, its key, the agent's options, the program's pid), read as
# every process of the program starts, are in a module of their own that imports nothing (this one needs dataclasses).
from fxtui.wire.agent_env import AGENT_ADDRESS as AGENT_ADDRESS
from fxtui.wire.agent_env import AGENT_KEY as AGENT_KEY
from fxtui.wire.agent_env import AGENT_OPTIONS as AGENT_OPTIONS
from fxtui.wire.agent_env import PROGRAM_PID as PROGRAM_PID

if TYPE_CHECKING:  # imported where used: every Python process a program starts reads this module's names
    import socket
    from multiprocessing.connection import Connection

    from fxtui.core.settings import ProgramSettings

#: Share of the program's time the sampled steps may cost it.
BUDGET = 0.02
#: Steps at the start left out of every figure.
WARMUP = 5
#: The per-op timers a sampled step may be timed with (``fxtui run --timer``).
TIMERS = ("mode", "native")
#: Seconds a collector gives a client to answer its key challenge before it takes it for hostile (a client that
#: connects and says nothing must not hold a thread of the collector's for long).
HANDSHAKE_S = 5.0
#: Seconds a client (an agent, a viewer) waits for a collector to answer: longer, since a collector that yields the
#: cores to the program may be slow to answer on a busy machine, and the agent waits in a thread of its own.
CONNECT_S = 30.0


@dataclass(frozen=True)
class AgentOptions:
    """How the agent samples (the collector passes them in the environment)."""

    warmup: int = WARMUP
    every: int = 0
    """Sample one step in ``every`` (0: adapt to the budget)."""
    budget: float = BUDGET
    timer: str = "native"
    """The per-op timer of sampled steps: ``native`` (a C++ RecordFunction callback, :mod:`fxtui.ops.native_recorder`;
    the dispatch mode until its library is built, and where it cannot be) or ``mode`` (a Python dispatch mode). An
    older collector's options, which name no timer, read as ``mode``: the default of the fxtui that wrote them."""

    @classmethod
    def of(cls, settings: ProgramSettings) -> AgentOptions:
        """What the program's agent is told of ``settings``: its warm-up, its pace, its budget and its timer."""
        return cls(settings.warmup, settings.every, settings.budget, settings.timer)

    def encode(self) -> str:
        return f"{self.warmup},{self.every},{self.budget},{self.timer}"

    @classmethod
    def decode(cls, text: str) -> AgentOptions:
        try:
            warmup, every, budget, *rest = text.split(",")
            timer = rest[0] if rest and rest[0] in TIMERS else "mode"
            return cls(int(warmup), int(every), float(budget), timer)
        except ValueError:
            return cls()


@dataclass(frozen=True)
class ProgramExit:
    """The program's own process ends with ``code`` (``-N``: by signal N): said last, by the boot, on a
    connection of its own, so a collector that is not the program's parent knows how it ended."""

    pid: int
    code: int
    waits: bool = False
    """The program waits for the profile to be printed (``fxtui run --once``) before it exits."""


def connect(address: str | tuple[str, int], key: bytes, timeout: float = CONNECT_S) -> Connection:
    """A connection to the collector at ``address`` (a socket's path, ``HOST:PORT`` or ``(host, port)``), proven
    with ``key`` as ``multiprocessing.connection.Client`` proves itself, but never waiting more than ``timeout``
    seconds on a collector that does not answer (stopped, or wedged). OSError, EOFError or
    ``AuthenticationError`` when it cannot be had."""
    import socket
    from multiprocessing.connection import Connection, answer_challenge, deliver_challenge

    if isinstance(address, str):
        host, _, port = address.rpartition(":")
        if host and port.isdigit() and "/" not in address:
            address = (host, int(port))
    family = socket.AF_UNIX if isinstance(address, str) else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        _connect(sock, address, timeout)
        sock.settimeout(None)
        set_timeouts(sock, timeout)
        connection = Connection(sock.detach())
    finally:
        sock.close()
    try:
        answer_challenge(connection, key)
        deliver_challenge(connection, key)
    except BaseException:
        connection.close()
        raise
    connection_timeouts(connection, 0)
    return connection


def _connect(sock: socket.socket, address: str | tuple[str, int], timeout: float) -> None:
    """``sock.connect(address)``; a local socket whose backlog is full (EAGAIN: hundreds of ranks connect at once)
    is tried again until ``timeout``, as a TCP connection would wait."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            sock.connect(address)
            return
        except BlockingIOError:
            if not isinstance(address, str) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def set_timeouts(sock: socket.socket, seconds: float) -> None:
    """Reads and writes on ``sock`` fail (EAGAIN) after ``seconds`` without progress (0: wait as long as it takes).

    Kernel timeouts (``SO_RCVTIMEO``, ``SO_SNDTIMEO``) rather than Python's: the socket stays a blocking one, as
    ``multiprocessing.connection`` reads and writes it with ``os.read`` and ``os.write``.
    """
    import socket
    import struct

    whole = int(seconds)
    packed = struct.pack("ll", whole, int((seconds - whole) * 1e6))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, packed)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, packed)


def connection_timeouts(connection: Connection, seconds: float) -> None:
    """:func:`set_timeouts` on the socket under ``connection`` (which keeps its descriptor)."""
    import socket

    sock = socket.socket(fileno=connection.fileno())
    try:
        set_timeouts(sock, seconds)
    finally:
        sock.detach()
