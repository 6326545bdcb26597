"""A collector's listening sockets, which no client can wedge, and messages read with a limit and an allowlist.

``multiprocessing.connection.Listener`` runs the key's challenge inside ``accept()``: with one
accepting thread, a client that connects and says nothing holds every other one out (its
backlog is one connection), and ``Connection.recv()`` believes any length prefix. Here one
thread only accepts (a real backlog); each connection proves the key in a thread of its own,
within :data:`~fxtui.wire.agent_contract.HANDSHAKE_S` seconds, at most :data:`PENDING` of them
at once; a message longer than its socket's limit ends that connection; and a message unpickles
only into the types the collector expects (fxtui's own data, plain Python values): a message
naming any other class is dropped, so nothing a client sends makes the collector import torch.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import socket
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge

from fxtui.core.errors import FxtuiError
from fxtui.wire.agent_contract import HANDSHAKE_S, connection_timeouts, set_timeouts

#: Connections proving the key at once; more are closed as they come (a flood costs the flood, not the job).
PENDING = 128
#: Connections waiting to be accepted: a node's ranks all connect at once as the program starts (hundreds, on a
#: large server or in the scale benchmark); a full backlog refuses a local connection at once (EAGAIN).
BACKLOG = 1024
#: The longest message an agent may send (a step that first meets a large model's nodes carries them all).
AGENT_LIMIT = 256 * 1024 * 1024
#: The longest message a viewer may send (its commands are a few bytes).
VIEWER_LIMIT = 64 * 1024

#: The longest path a unix socket binds to on Linux (``sun_path`` less its terminating NUL).
UNIX_PATH_MAX = 107

#: What a message may be made of: fxtui's torch-free data, and these plain types.
_ALLOWED = {
    "builtins": {
        "set",
        "frozenset",
        "tuple",
        "list",
        "dict",
        "int",
        "float",
        "complex",
        "bool",
        "str",
        "bytes",
        "bytearray",
        "slice",
        "range",
    },
    "collections": {"OrderedDict", "defaultdict", "deque"},
    "array": {"_array_reconstructor", "array"},
    "copyreg": {"_reconstructor", "__newobj__"},
}


#: Types read as the plain value they are: an agent of another fxtui version says ``torch.__version__`` as torch's own
#: ``str`` subclass, whose class lives in torch.
_STANDINS: dict[tuple[str, str], type] = {("torch.torch_version", "TorchVersion"): str}


class Refused(Exception):
    """A message that names a type the collector does not take."""


#: The modules of messages that cross a socket (besides the torch-free data of ``fxtui.core``). Not the rest of
#: ``fxtui.wire``: its sockets and directories are not data a peer may make.
_MESSAGES = {
    "fxtui.wire.agent_contract",
    "fxtui.wire.agent_messages",
    "fxtui.wire.job_link",
    "fxtui.wire.viewer_commands",
    "fxtui.wire.viewer_messages",
}


#: Where the messages of an fxtui from before ``wire/`` said their classes were: a rank on another server may run it.
_MOVED = {
    "fxtui.core.agent_contract": "fxtui.wire.agent_contract",
    "fxtui.core.agent_messages": "fxtui.wire.agent_messages",
    "fxtui.core.job_link": "fxtui.wire.job_link",
    "fxtui.core.commands": "fxtui.wire.viewer_commands",
}


class Unpickler(pickle.Unpickler):
    """Loads only fxtui's torch-free data, its messages and the plain types of :data:`_ALLOWED`; :class:`Refused`
    otherwise."""

    def find_class(self, module: str, name: str) -> object:
        module = _MOVED.get(module, module)
        if module.startswith("fxtui.core.") or module in _MESSAGES or name in _ALLOWED.get(module, ()):
            return super().find_class(module, name)
        if (module, name) in _STANDINS:
            return _STANDINS[module, name]
        raise Refused(f"{module}.{name}")


def receive(connection: Connection, limit: int) -> object:
    """The next message on ``connection``, at most ``limit`` bytes long.

    EOFError or OSError when the connection ended or its next message is too long (the connection can no
    longer be read); :class:`Refused` or another ``Exception`` when one message does not read (the next may).
    """
    data = connection.recv_bytes(limit)
    return Unpickler(io.BytesIO(data)).load()


def shutdown(connection: Connection) -> None:
    """End ``connection`` for the threads reading and writing it: they see its end, and the one that owns it closes it.

    Closing it from another thread would free its descriptor while a read or a write was under way, and the
    next connection accepted would get that descriptor: the old thread's bytes would land in it.
    """
    with contextlib.suppress(OSError, ValueError):
        sock = socket.socket(fileno=connection.fileno())
        try:
            sock.shutdown(socket.SHUT_RDWR)
        finally:
            sock.detach()


class GuardedListener:
    """Listens at ``address`` (a socket's path, or ``(host, port)``) and hands each connection that proves ``key``
    to ``serve(connection)``, in that connection's own thread; ``warn(sentence)`` hears every refusal."""

    def __init__(
        self,
        address: str | tuple[str, int],
        key: bytes,
        serve: Callable[[Connection], None],
        *,
        warn: Callable[[str], None] = lambda sentence: None,
        name: str = "fxtui-listener",
    ) -> None:
        self.key = key
        self.serve = serve
        self.warn = warn
        self.name = name
        self._socket = _bound(address)
        self._socket.listen(BACKLOG)
        self.address: str | tuple[str, int] = self._socket.getsockname()
        self._pending = threading.BoundedSemaphore(PENDING)
        self._closed = False
        self.refused = 0
        """Connections refused so far (no key, too slow, garbage, or too many at once)."""

    def start(self) -> None:
        threading.Thread(target=self._accept, daemon=True, name=self.name).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                sock, _ = self._socket.accept()
            except OSError:
                if self._closed:
                    return
                time.sleep(0.05)  # a connection that went before it was taken, or no descriptor left: not a spin
                continue
            if not self._pending.acquire(blocking=False):
                self._refuse(f"refused a connection: {PENDING} others were still proving the key")
                sock.close()
                continue
            threading.Thread(target=self._handshake, args=(sock,), daemon=True, name=f"{self.name}-client").start()

    def _handshake(self, sock: socket.socket) -> None:
        try:
            sock.setblocking(True)
            set_timeouts(sock, HANDSHAKE_S)  # a client that says nothing, or half, is gone after this
            connection = Connection(sock.detach())
        except OSError:
            self._pending.release()
            sock.close()
            return
        try:
            deliver_challenge(connection, self.key)
            answer_challenge(connection, self.key)
            connection_timeouts(connection, 0)
        except Exception as e:  # no key, too slow, too long, garbage: AuthenticationError, OSError…
            self._refuse(f"refused a connection that did not prove the job's key ({_why(e)})")
            with contextlib.suppress(OSError):
                connection.close()
            return
        finally:
            self._pending.release()
        if self._closed:
            connection.close()
            return
        self.serve(connection)

    def _refuse(self, sentence: str) -> None:
        self.refused += 1
        if self.refused <= 20 or self.refused % 1000 == 0:  # a flood is said, not logged line by line
            self.warn(sentence if self.refused < 20 else f"{sentence} ({self.refused} refused so far)")

    def release(self) -> None:
        """Close this process's descriptor of the socket, leaving it listening for the process that shares it."""
        self._closed = True
        with contextlib.suppress(OSError):
            self._socket.close()

    def close(self) -> None:
        """Stop listening (a connection being served goes on until its ``serve`` returns)."""
        self._closed = True
        with contextlib.suppress(OSError):
            self._socket.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
        with contextlib.suppress(OSError):
            self._socket.close()


def _bound(address: str | tuple[str, int]) -> socket.socket:
    """A socket bound to ``address``; a socket file that no collector answers on any more (its collector was
    killed) is taken over, one that still answers is not."""
    if not isinstance(address, str):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        return sock
    if len(os.fsencode(address)) > UNIX_PATH_MAX:
        raise FxtuiError(
            f"{address} is longer than a unix socket's path may be ({UNIX_PATH_MAX} bytes): "
            "set XDG_RUNTIME_DIR to a shorter directory"
        )
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(address)
    except OSError:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(address)
        except OSError:  # nobody listens there: a dead collector's (gone already, when its own end removed it)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(address)
            sock.bind(address)
        else:
            sock.close()
            raise
        finally:
            probe.close()
    return sock


def _why(error: Exception) -> str:
    text = str(error)
    if isinstance(error, BlockingIOError) or "Resource temporarily unavailable" in text:
        return f"silent for {HANDSHAKE_S:g} s"
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
