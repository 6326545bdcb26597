"""``fxtui run --once``: fxtui becomes the program, and its collector runs beside it.

The process the user started turns into the program (``exec``): its pid, its terminal, its
process group, every signal sent to it — Ctrl+C, ``kill``, SIGTERM from ``timeout`` or a job
scheduler, a closed SSH session's SIGHUP — and its exit status are the program's own, exactly
as under ``python``. Nothing stands between the program and its shell to pass signals on
(passing them on delivers twice whatever was sent to the whole process group) or to relay its
status. ``fxtui run --once x.py | head``: the program meets the broken pipe it would meet.

Just before, it forks the collector: a process of a session of its own (the terminal's signals
are not for it; it never reads the terminal), which already holds everything fxtui parsed,
listens on the job's socket, aggregates the agents' messages at a lower priority, and prints
the profile (and writes the exports) when the program's boot says it ends
(:mod:`fxtui.agent.program_exit`). The program waits for that, so the profile comes after all
its output and before the shell's prompt. A program that ends without a word (a signal's
default action, ``os._exit``) is noticed by its pid, and its profile follows all the same
(its exit status is then the shell's to tell).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from fxtui.core.settings import ProgramSettings
from fxtui.jobs.job_setup import program_job
from fxtui.jobs.launch import AGENTS_END_S, program_argv
from fxtui.wire.agent_contract import PROGRAM_PID, ProgramExit
from fxtui.wire.private_dir import private_dir

if TYPE_CHECKING:
    from fxtui.core.snapshot import Snapshot
    from fxtui.jobs.cross_node import CrossNode
    from fxtui.jobs.job_state import JobState

# Before the fork only the program's job is made (its socket, its environment): every module imported by then is time
# before the program's first line, and then thrown away by the exec. What collects (the job's state, the link to
# other nodes, the pid watch) is imported in the forked collector, at its lower priority, while the program starts.

#: Seconds between the collector's looks at the program's pid, while it waits for the program to say it ends (a
#: program killed without a word is noticed this late at most).
POLL_S = 0.2


def become_the_program(
    settings: ProgramSettings,
    report: Callable[[Snapshot], None],
    kind: str | None = None,
    prepare: Callable[[], object] | None = None,
) -> NoReturn:
    """Fork the collector (which calls ``report(snapshot)`` as the program ends, the figures of ``kind``'s steps, or
    of the kind the collector leads with), then become the program.

    ``prepare()``, when given, runs in the collector as the program starts (at the collector's lower priority): what
    ``report`` will need, made ready, so that neither the program's start nor its end waits for it.

    Never returns: this process is the program from here on, and ends with its status.
    """
    beside = _Beside(settings, report, kind, prepare)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    program = beside.program
    child = os.fork()
    if child == 0:
        try:
            os.setsid()  # the terminal's signals, and the program's process group's, are not the collector's
            if os.fork() == 0:
                beside.collect(program)  # never returns
        finally:
            os._exit(0)
    os.waitpid(child, 0)  # the collector is no child of the program's: the program never meets it in a wait()
    beside.job.release()
    env = beside.job.program_env(**{PROGRAM_PID: str(program)})
    argv = program_argv(settings.command)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # as Python had them before it started (subprocess does the same)
        signal.signal(sig, signal.SIG_DFL)
    executable = argv[0] if os.sep in argv[0] else (shutil.which(argv[0]) or argv[0])
    os.execve(executable, argv, env)
    raise AssertionError("execve returned")  # pragma: no cover


class _Beside:
    """The collector beside the program: made before the fork (the socket the program's agents will find),
    run after it, in the forked process."""

    def __init__(
        self,
        settings: ProgramSettings,
        report: Callable[[Snapshot], None],
        kind: str | None,
        prepare: Callable[[], object] | None = None,
    ) -> None:
        self.settings = settings
        self.report = report
        self.kind = kind
        self.directory = Path(tempfile.mkdtemp(prefix="run-", dir=private_dir()))
        self.state: JobState | None = None
        self.ready = threading.Event()
        self.exit: ProgramExit | None = None
        self.exit_connection: Connection | None = None
        self.exited = threading.Event()
        self.program = os.getpid()
        """The program's pid: this process's, which becomes the program."""
        self.job = program_job(
            settings,
            self.receive,
            self.directory,
            os.urandom(32),  # as secrets.token_bytes makes it, without importing hmac and OpenSSL before the fork
            on_exit=self.on_exit,
            on_link=self.on_link,
        )
        self.cross: CrossNode | None = None
        self.prepare = prepare
        """Runs in the collector as the program starts (:func:`become_the_program`)."""

    # -- the agents' threads ------------------------------------------------------------------------

    def receive(self, message: object, agent: int) -> None:
        self.ready.wait()
        assert self.state is not None
        self.state.receive(message, agent)

    def on_link(self, message: object, connection: Connection) -> None:
        self.ready.wait()
        assert self.cross is not None
        self.cross.answer(message, connection)

    def on_exit(self, message: ProgramExit, connection: Connection) -> None:
        if self.exit is not None or message.pid != self.program:
            return  # a process the program forked, which ends as it will
        self.exit, self.exit_connection = message, connection
        if message.waits:
            with contextlib.suppress(OSError, ValueError):
                connection.send_bytes(b"printing")  # it has the status: the program waits for the profile
        self.exited.set()

    # -- the collector's process --------------------------------------------------------------------

    def collect(self, program: int) -> NoReturn:
        """The forked collector's whole life: until the program ends, then the profile; never returns."""
        code = 0
        try:
            with contextlib.suppress(OSError):
                os.nice(10)  # the program keeps its priority; the collector yields to it
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)  # never the terminal's input
            os.close(devnull)
            from fxtui.jobs.cross_node import CrossNode
            from fxtui.jobs.job_state import JobState
            from fxtui.jobs.pid_watch import watch_pid

            self.state = JobState(self.settings)
            self.state.collector.started(program, "")
            self.cross = CrossNode(self.state, warn=_say)
            self.ready.set()
            self.job.listen()
            threading.Thread(target=_warm, args=(self.prepare,), daemon=True, name="fxtui-report-imports").start()
            from fxtui.jobs import collector_gc, heap_trim

            collector_gc.take_over()  # in the forked collector only: the program's own collector is never touched
            ended = watch_pid(program)
            while not self.exited.wait(POLL_S) and not ended(0):
                self.state.watch_load()
                if collector_gc.collect_if_due():
                    heap_trim.trim()  # in the forked collector only, as its garbage collector's policy
            self.job.drain(AGENTS_END_S)  # the agents' last messages (the program's own said its last already)
            self.cross.finish(self.exit.code if self.exit is not None else None)  # a job across nodes: theirs too
            self._print()
            self.cross.close()
        except BaseException:  # the collector's end is no business of the program's
            code = 1
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os._exit(code)

    def _print(self) -> None:
        from fxtui.core.errors import FxtuiError
        from fxtui.core.snapshot import State

        state = self.state
        assert state is not None
        said = self.exit
        if said is None and not state.agents:
            return  # ended before its agent began, without a word (exec failed, killed early): nothing to show
        with state.lock:
            state.collector.ended(said.code if said is not None else None)  # type: ignore[arg-type]
        try:
            assert self.cross is not None
            if self.cross.role == "member" and os.environ.get("RANK"):
                # torchrun … fxtui run: a collector in each rank; the lead's (rank 0's) profile is the job's, and
                # its exports are the job's files (one more profile a rank would write over them)
                _say(f"rank {os.environ['RANK']}'s figures are in rank 0's profile")
            else:
                self.report(state.snapshot(State.DONE, kind=self.kind))
            sys.stdout.flush()
        except BrokenPipeError:  # fxtui run --once x.py | head: the reader is gone, the program saw it first
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except FxtuiError as e:
            with contextlib.suppress(Exception):
                print(f"fxtui: {e}", file=sys.stderr, flush=True)
        except Exception as e:  # a bug of fxtui's: one line, never the program's status
            with contextlib.suppress(Exception):
                print(f"fxtui: could not print the profile ({type(e).__name__}: {e})", file=sys.stderr, flush=True)
        finally:
            if self.exit_connection is not None and said is not None and said.waits:
                with contextlib.suppress(OSError, ValueError):
                    self.exit_connection.send_bytes(b"printed")


def _say(sentence: str) -> None:
    """A word of the collector's on the terminal's stderr (a node of a job across nodes that cannot join it)."""
    with contextlib.suppress(Exception):
        print(f"fxtui: {sentence}", file=sys.stderr, flush=True)


def _warm(prepare: Callable[[], object] | None = None) -> None:
    """Import what printing the profile needs while the program runs (on the collector's lower priority), and run
    ``prepare`` (:func:`become_the_program`)."""
    with contextlib.suppress(Exception):
        import fxtui.report.api
        import fxtui.report.text  # noqa: F401
    if prepare is not None:
        with contextlib.suppress(Exception):
            prepare()
