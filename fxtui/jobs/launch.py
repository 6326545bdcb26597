"""Start a user's program with the agent in it, and hear what the agent says: one :class:`ProgramJob`.

The program runs as ``python SCRIPT ARGS…`` would (:mod:`fxtui.agent.boot`), in the same
working directory and environment, plus three variables that tell its agent where the
collector listens: a socket in a directory only this user can read (0700), guarded by a key
made for this job (``multiprocessing.connection``'s authentication), so no other process can
speak for the program or listen in. A detached job's program (and the app's, which is a
detached job watched) writes its output to a log file in that directory (0600) on its own
descriptors, as ``>> output.log 2>&1`` would: the viewers read the file, nothing stands between
the program and its output.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING

from fxtui.core.errors import FxtuiError
from fxtui.wire.agent_contract import AGENT_ADDRESS, AGENT_KEY, AGENT_OPTIONS, AgentOptions, ProgramExit
from fxtui.wire.agent_intake import AgentIntake
from fxtui.wire.private_dir import private_dir
from fxtui.wire.sockets import AGENT_LIMIT, GuardedListener

if TYPE_CHECKING:
    from fxtui.wire.job_link import JoinLead, LeadAsk

# ``fxtui run --once`` imports this module before it becomes the program: what only the collector reads (the messages
# of a job across nodes) is imported where it is read, after the fork.

#: The module that starts a program with the agent in it (``python -m``): it runs in the program's process.
AGENT_BOOT = "fxtui.agent.boot"
#: The directory whose ``sitecustomize`` gives every Python process the program starts an agent (first on its
#: ``PYTHONPATH``).
SITE_DIR = str(Path(__file__).resolve().parent.parent / "agent" / "site")
#: Seconds the collector waits, once the program ended, for its agents' last messages.
AGENTS_END_S = 5.0


def is_executable(command: Sequence[str]) -> bool:
    """True when ``command`` names a program to run as it is (``torchrun …``), not a Python script or ``-m``."""
    first = command[0] if command else ""
    return first != "-m" and not first.endswith(".py") and not Path(first).is_file() and bool(shutil.which(first))


def check_command(command: Sequence[str]) -> None:
    """One sentence, before anything starts, when the program cannot be run: no such script, not Python, no such
    module."""
    if not command:
        raise FxtuiError("fxtui run needs a script to run: fxtui run train.py [ARGS…] or fxtui run -m MODULE [ARGS…]")
    if command[0] == "-m":
        if len(command) < 2 or not command[1]:
            raise FxtuiError("fxtui run -m needs a module name, e.g. fxtui run -m mypackage.train")
        import importlib.util

        top = command[1].split(".")[0]
        sys.path.insert(0, os.getcwd())
        try:
            found = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            found = None
        finally:
            sys.path.pop(0)
        if found is None:
            raise FxtuiError(
                f"no module named {top!r} here (fxtui run -m looks in {os.getcwd()} and the installed ones)"
            )
        return
    if is_executable(command):
        return  # a launcher (torchrun): its Python processes get the agent as they import torch
    script = Path(command[0])
    if not script.exists():
        raise FxtuiError(f"no such script: {script}")
    if script.is_dir():
        raise FxtuiError(f"{script} is a directory; give the script to run (fxtui run -m runs a package's module)")
    try:
        source = script.read_bytes()
    except OSError as e:
        raise FxtuiError(f"cannot read {script}: {e.strerror or e}") from None
    try:
        compile(source, str(script), "exec")
    except (SyntaxError, ValueError) as e:
        where = f" (line {e.lineno})" if isinstance(e, SyntaxError) and e.lineno else ""
        why = e.msg if isinstance(e, SyntaxError) else e
        raise FxtuiError(f"{script} is not a Python script{where}: {why}") from None


class ProgramJob:
    """One run of the user's program under the agent.

    ``on_message(message, agent)`` hears each message, in the one thread that reads every agent's connection
    (:class:`~fxtui.wire.agent_intake.AgentIntake`): ``agent`` counts
    the processes whose agent connected (a program that starts others, ``torchrun``'s ranks, has several).
    ``on_exit(message)`` hears the :class:`~fxtui.wire.agent_contract.ProgramExit` the program's boot
    says last (the connection it came on is still open: the one who waits for an answer reads it there).
    """

    def __init__(
        self,
        command: Sequence[str],
        on_message: Callable[[object, int], None],
        *,
        options: AgentOptions | None = None,
        log: bool = False,
        directory: Path | None = None,
        key: bytes | None = None,
        agents_on: str = "",
        env: Mapping[str, str] | None = None,
        on_exit: Callable[[ProgramExit, Connection], None] | None = None,
        warn: Callable[[str], None] = lambda sentence: None,
        on_link: Callable[[object, Connection], None] | None = None,
    ) -> None:
        self.command = tuple(command)
        self.on_link = on_link
        """Hears an agent's :class:`~fxtui.wire.job_link.LeadAsk` or ``JoinLead`` (a job across nodes), on the
        connection it came on (the agent reads the answer there)."""
        self.env = dict(env or {})
        """Set in the program's environment besides the caller's (``--keep-freed-memory``)."""
        self.on_message = on_message
        self.on_exit = on_exit
        self.options = options or AgentOptions()
        self.dir = directory or Path(tempfile.mkdtemp(prefix="job-", dir=private_dir()))
        self.log_path = self.dir / "output.log" if log else None
        self._key = key or os.urandom(32)  # as secrets.token_bytes makes it, without importing hmac and OpenSSL
        self._listener = GuardedListener(
            str(self.dir / "agent.sock"), self._key, self._drain, warn=warn, name="fxtui-agents"
        )
        self._listeners = [self._listener]
        self.agents_address = ""
        """``HOST:PORT`` where agents of ranks on other servers report, when asked for (``agents_on``)."""
        if agents_on:
            host, _, port = agents_on.rpartition(":")
            remote = GuardedListener(
                (host or "127.0.0.1", int(port)), self._key, self._drain, warn=warn, name="fxtui-remote-agents"
            )
            self._listeners.append(remote)
            self.agents_address = "{}:{}".format(*remote.address)
        self.process: subprocess.Popen[bytes] | None = None
        self._agents = 0
        self._agents_lock = threading.Lock()
        self._open = 0
        """Agent connections not yet at their end."""
        self._drained = threading.Condition(self._agents_lock)
        self._intake = AgentIntake(AGENT_LIMIT, name="fxtui-agents-intake", warn=warn)
        """Reads every agent's connection in one thread (a job of 1,024 ranks: one thread, not 1,024)."""
        self.connected = threading.Event()
        self._closing = False
        self.warn = warn
        self._said: set[str] = set()

    @property
    def agent_address(self) -> str:
        """Where the program's agents report (the job's socket)."""
        return str(self._listener.address)

    def program_env(self, **extra: str) -> dict[str, str]:
        """The program's environment: the caller's, plus where and how its agents report."""
        return {
            **os.environ,
            **self.env,
            AGENT_ADDRESS: self.agent_address,
            AGENT_KEY: self._key.hex(),
            AGENT_OPTIONS: self.options.encode(),
            **_scope(self.command),
            # Every Python process the program starts (torchrun's ranks) gets an agent too.
            "PYTHONPATH": os.pathsep.join(p for p in (SITE_DIR, os.environ.get("PYTHONPATH", "")) if p),
            **extra,
        }

    def start(self) -> None:
        """Start the program (its own process), then listen for its agent."""
        stdio: dict[str, object] = {}
        log_fd = -1
        if self.log_path is not None:
            # The program's own descriptors on its log, as `python train.py >> output.log 2>&1` would have them:
            # nothing of fxtui's stands between the program and its output, so the collector's end costs it
            # nothing (a pipe whose reader died would kill it with its first print).
            log_fd = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            stdio = {"stdin": subprocess.DEVNULL, "stdout": log_fd, "stderr": log_fd}
        try:
            with _signals_for_the_program():
                self.process = subprocess.Popen(program_argv(self.command), env=self.program_env(), **stdio)  # type: ignore[call-overload]
        finally:
            if log_fd >= 0:
                os.close(log_fd)
        self.listen()

    def listen(self) -> None:
        """Take the agents that connect (:meth:`start` does, once the program started)."""
        for listener in self._listeners:
            listener.start()

    def release(self) -> None:
        """Let go of this process's copy of the sockets, which another process (a forked collector) serves."""
        for listener in self._listeners:
            listener.release()

    def _drain(self, connection: Connection) -> None:
        """Read one agent's messages until its connection ends: handed to the intake's one thread (this is the thread
        its handshake ran in, which ends here)."""
        from fxtui.wire.job_link import JoinLead, LeadAsk

        with self._agents_lock:
            agent = self._agents
            self._agents += 1
            self._open += 1
        self.connected.set()
        counted = True

        def ended() -> None:
            nonlocal counted
            if counted:
                counted = False
                self._agent_ended()

        def take(message: object) -> Callable[[], None] | None:
            if self._closing:
                return None
            if isinstance(message, Exception):  # a message that does not read: dropped (said once), the rest read
                self._unread(message)
                return None
            if isinstance(message, LeadAsk | JoinLead):  # an agent's word on the job's other nodes: it waits
                return lambda: self._link(message, connection)
            if isinstance(message, ProgramExit):  # the boot's own connection: no agent's, none to wait for
                ended()
                on_exit = self.on_exit
                return None if on_exit is None else lambda: on_exit(message, connection)
            for each in message if isinstance(message, list) else (message,):  # an agent's gathered messages
                self.on_message(each, agent)
            return None

        self._intake.add(connection, take, ended)

    def _link(self, message: LeadAsk | JoinLead, connection: Connection) -> None:
        """An agent's :class:`LeadAsk` or :class:`JoinLead`, answered on its connection (in a thread of its own)."""
        if self.on_link is not None:
            self.on_link(message, connection)
        else:  # a collector that takes no part in a job across nodes: the agent hears so
            with contextlib.suppress(OSError, ValueError):
                connection.send("this collector does not join jobs across nodes")

    def _unread(self, error: Exception) -> None:
        why = f"{type(error).__name__}: {error}"
        if why not in self._said:
            self._said.add(why)
            self.warn(f"dropped an agent's message that does not read ({why})")

    def _agent_ended(self) -> None:
        with self._drained:
            self._open -= 1
            self._drained.notify_all()

    def interrupt(self, sig: int = signal.SIGINT) -> None:
        """Send the program ``sig`` (Ctrl+C's SIGINT by default), if it still runs."""
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(sig)

    def stop(self, grace: float = 5.0) -> int:
        """Ask the program to stop as Ctrl+C would, then SIGTERM, then SIGKILL; its exit status."""
        for sig, wait in ((signal.SIGINT, grace), (signal.SIGTERM, grace), (signal.SIGKILL, grace)):
            if self.process is None or self.process.poll() is not None:
                break
            self.interrupt(sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(wait)
        return self.wait()

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the program to end (and its agents' last messages); its exit status."""
        assert self.process is not None
        code = self.process.wait(timeout)
        self.drain(AGENTS_END_S)
        return code

    def drain(self, timeout: float) -> None:
        """Stop taking agents, and wait at most ``timeout`` seconds for the connected ones to say their last."""
        for listener in self._listeners:
            listener.close()
        deadline = time.monotonic() + timeout
        with self._drained:
            while self._open and (left := deadline - time.monotonic()) > 0:
                self._drained.wait(left)
        self._closing = True
        self._intake.close()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def close(self) -> None:
        """Forget the socket; keep the log (its path was given) and remove the rest of the job's directory."""
        for listener in self._listeners:
            listener.close()
        self._intake.close()
        if self.log_path is None:
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                (self.dir / "agent.sock").unlink()


def _scope(command: Sequence[str]) -> dict[str, str]:
    """``FXTUI_JOB_SCOPE=rank`` when this collector holds one rank of a distributed job (``torchrun … fxtui run
    train.py``: fxtui runs inside each rank), so the ranks' collectors find each other
    (:mod:`fxtui.agent.job_store`)."""
    world = os.environ.get("WORLD_SIZE", "")
    if os.environ.get("RANK") and world.isdigit() and int(world) > 1 and not is_executable(command):
        from fxtui.wire.job_link import JOB_SCOPE

        return {JOB_SCOPE: "rank"}
    return {}


def program_argv(command: Sequence[str]) -> list[str]:
    """What runs: ``python -m fxtui.agent.boot SCRIPT ARGS…``; a launcher (``torchrun …``) as it is, unless it is a
    script of this very Python (a console script, as ``torchrun`` is): then the boot runs it, as Python would, so
    its exit status is said (:mod:`fxtui.agent.program_exit`)."""
    if not is_executable(command):
        return [sys.executable, "-m", AGENT_BOOT, *command]
    path = shutil.which(command[0]) or command[0]
    if _interpreter(path) == os.path.realpath(sys.executable):
        return [sys.executable, "-m", AGENT_BOOT, path, *command[1:]]
    return [*command]


def _interpreter(path: str) -> str:
    """The interpreter a ``#!`` script names (resolved), or ""."""
    try:
        with open(path, "rb") as f:
            first = f.readline(512)
    except OSError:
        return ""
    if not first.startswith(b"#!"):
        return ""
    words = first[2:].decode(errors="replace").split()
    return os.path.realpath(words[0]) if len(words) == 1 else ""


@contextlib.contextmanager
def _signals_for_the_program() -> Iterator[None]:
    """Ctrl+C and SIGTERM reach the program as they would without fxtui, even where fxtui ignores them.

    An ignored signal stays ignored across exec, a handled one becomes the default: while the
    program starts, fxtui's process handles both (and does nothing with them).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {sig: signal.signal(sig, _nothing) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def _nothing(signum: int, frame: object) -> None:
    """A signal that came while the program was starting: the program (in the same process group) got it too."""


def log_tail(path: Path | None, lines: int = 200, limit: int = 64 * 1024) -> tuple[str, ...]:
    """The last ``lines`` lines of the program's log (read from its end, at most ``limit`` bytes)."""
    if path is None:
        return ()
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            data = f.read()
    except OSError:
        return ()
    text = data.decode("utf-8", "replace").replace("\r\n", "\n")
    # A progress bar rewrites its line with \r: show what it last said.
    shown = [line.rsplit("\r", 1)[-1] for line in text.split("\n")]
    if shown and shown[-1] == "":
        shown.pop()
    return tuple(shown[-lines:])


def exit_status(code: int) -> int:
    """The status a shell reports for a program that returned ``code`` (``-N``, killed by signal N, is 128+N)."""
    return 128 - code if code < 0 else code
