"""How every collector sets up its job, written once: the program's job (:class:`~fxtui.jobs.launch.ProgramJob`), and
for a detached job (the daemon's, the adopter's) its state and the viewers' server around it.

The collectors differ in what they do with the job, not in how it is made: the daemon starts the program, the
adopter listens for a program that runs already, ``--once`` forks itself beside the program it becomes
(:mod:`fxtui.jobs.beside`, which has no viewers and no job directory of the user's).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING

from fxtui.core.settings import ProgramSettings
from fxtui.jobs.launch import ProgramJob
from fxtui.wire.agent_contract import AgentOptions, ProgramExit
from fxtui.wire.job_directory import KEY, LOG, VIEWER

if TYPE_CHECKING:
    from fxtui.core.snapshot import Snapshot
    from fxtui.jobs.cross_node import CrossNode
    from fxtui.jobs.job_state import JobState
    from fxtui.jobs.viewers import ViewerServer

# What aggregates and serves a job (its state, the viewers' server, its part in a job across nodes) is imported where
# a detached job is made: ``fxtui run --once`` makes only the program's job before it becomes the program, and every
# import on that path is time before the program's first line. Its forked collector imports the rest.


def program_job(
    settings: ProgramSettings,
    on_message: Callable[[object, int], None],
    directory: Path,
    key: bytes,
    *,
    log: bool = False,
    agents_on: str = "",
    on_exit: Callable[[ProgramExit, Connection], None] | None = None,
    warn: Callable[[str], None] = lambda sentence: None,
    on_link: Callable[[object, Connection], None] | None = None,
) -> ProgramJob:
    """The program's job as ``settings`` describe it: its command, what its agents are told and its environment."""
    return ProgramJob(
        settings.command,
        on_message,
        options=AgentOptions.of(settings),
        log=log,
        directory=directory,
        key=key,
        agents_on=agents_on,
        env=settings.program_env(),
        on_exit=on_exit,
        warn=warn,
        on_link=on_link,
    )


@dataclass
class DetachedJob:
    """A detached job's collector, made: the job's figures, its viewers' server and the program's job."""

    settings: ProgramSettings
    listen: str
    """Where viewers may attach on TCP (``HOST:PORT``), or ""."""
    cwd: str
    state: JobState
    server: ViewerServer
    job: ProgramJob
    stop: threading.Event
    """Set when a viewer asks to stop the program."""
    cross: CrossNode
    """Its part in a job across nodes (idle unless the job spans nodes)."""


def detached_job(
    directory: Path,
    agents_on: str | None = None,
    on_exit: Callable[[ProgramExit, Connection], None] | None = None,
    start: Callable[[ProgramJob], None] | None = None,
) -> DetachedJob:
    """The collector of the job in ``directory``, in its working directory: the program's output goes to the job's
    log, viewers attach on its socket (and on TCP when it listens), its agents report on ``agents_on`` (None:
    ranks on other servers one port above the viewers', when it listens on TCP).

    ``start(job)``, when given, runs as soon as the program's job is made, before what aggregates and serves it is
    imported and made: the daemon starts the program there, so that its first line does not wait for them (its
    agents' messages wait instead, until the job's state is there)."""
    os.umask(0o077)  # everything the collector makes (sockets, files) is the user's alone
    settings, listen, cwd = read_settings(directory)
    os.chdir(cwd)
    key = bytes.fromhex((directory / KEY).read_text().strip())
    if agents_on is None:
        agents_on = ""
        if listen:  # ranks on other servers report one port above the viewers'
            host, _, port = listen.rpartition(":")
            agents_on = f"{host}:{int(port) + 1}"
    later = _Later()
    job = program_job(
        settings,
        later.receive,
        directory,
        key,
        log=True,
        agents_on=agents_on,
        on_exit=on_exit,
        warn=later.warn,
        on_link=later.answer,
    )
    if start is None:
        return _collecting(settings, listen, cwd, directory, key, job, later)
    start(job)
    try:
        return _collecting(settings, listen, cwd, directory, key, job, later)
    except BaseException:  # no collector after all (a viewers' port taken): the program does not run on unwatched
        job.stop(grace=1.0)
        raise


def _collecting(
    settings: ProgramSettings, listen: str, cwd: str, directory: Path, key: bytes, job: ProgramJob, later: _Later
) -> DetachedJob:
    """The rest of :func:`detached_job`: the job's state, its viewers' server and its part in a job across nodes."""
    from fxtui.core.snapshot import State
    from fxtui.jobs.cross_node import CrossNode
    from fxtui.jobs.job_state import JobState
    from fxtui.jobs.viewers import ViewerServer

    state = JobState(settings, directory / LOG)
    stop = threading.Event()
    cross: CrossNode | None = None

    def current(rank: int | None, kind: str | None) -> Snapshot:
        if cross is not None:  # a node of a job across nodes: a new viewer sees the whole job at once
            cross.await_view()
        return state.snapshot(State.RUNNING, rank, kind)

    server = ViewerServer(directory / VIEWER, key, listen, on_stop=stop.set, on_reset=state.reset, current=current)
    cross = CrossNode(state, warn=server.warn)
    cross.wants_job = lambda: server.viewers > 0
    cross.keep = directory
    later.made(state.receive, cross.answer, server.warn)
    return DetachedJob(settings, listen, cwd, state, server, job, stop, cross)


class _Later:
    """What the program's job calls, handed to it before the job's state, its viewers' server and its part in a job
    across nodes exist (:func:`detached_job` may start the program first): each call waits until they are made."""

    def __init__(self) -> None:
        self._made = threading.Event()
        self._receive: Callable[[object, int], None] = lambda message, agent: None
        self._answer: Callable[[object, Connection], None] = lambda message, connection: None
        self._warn: Callable[[str], None] = lambda sentence: None

    def made(
        self,
        receive: Callable[[object, int], None],
        answer: Callable[[object, Connection], None],
        warn: Callable[[str], None],
    ) -> None:
        self._receive, self._answer, self._warn = receive, answer, warn
        self._made.set()

    def receive(self, message: object, agent: int) -> None:
        self._made.wait()
        self._receive(message, agent)

    def answer(self, message: object, connection: Connection) -> None:
        self._made.wait()
        self._answer(message, connection)

    def warn(self, sentence: str) -> None:
        self._made.wait()
        self._warn(sentence)


def read_settings(directory: Path) -> tuple[ProgramSettings, str, str]:
    """The job's settings, where it listens on TCP (or ""), and its working directory."""
    data = json.loads((directory / "settings.json").read_text())
    listen, cwd = data.pop("listen", ""), data.pop("cwd", os.getcwd())
    data["command"] = tuple(data["command"])
    return ProgramSettings(**data), listen, cwd
