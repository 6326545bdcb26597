"""A job's collector, detached from any terminal: it runs the program, aggregates, and serves whoever attaches.

``python -m fxtui.jobs.daemon JOBDIR`` (started by :func:`fxtui.jobs.job_start.start_detached`
in a session of its own, so a closed SSH connection ends neither it nor the program). It
starts the program with its output on the job's log (the program's own descriptors), then
aggregates its agents' messages for as long as it runs, viewers or not: memory stays bounded
(statistics, the recent steps and a coarse history of the whole run grow, samples do not), so a
viewer attaching after an hour sees the whole hour, as it is at that moment. Viewers come and go
(:class:`~fxtui.jobs.viewers.ViewerServer`); one that dies costs the job nothing.

The program's life does not depend on this process. Every few seconds the collector keeps the
job's state in ``job.json`` (steps so far, running or not) and its latest profile in
``profile.json`` (written whole, by a thread that runs only on an idle core), so if the collector
is killed the job's last figures stay; the program runs on to its own end, its output still going
to its log, and ``fxtui attach`` says what happened. SIGTERM asks the collector to go the same way,
cleanly: it saves what it has and leaves the program running. ``python -m fxtui.jobs.adopt
JOBDIR`` is a new collector for such a job.

When the program ends its last profile is saved and sent to the attached viewers with its exit
status; the collector then leaves as soon as they have it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from fxtui.jobs import collector_gc
from fxtui.jobs.job_setup import detached_job
from fxtui.wire.job_directory import PROFILE, JobInfo, write_info

if TYPE_CHECKING:
    from fxtui.jobs.job_state import JobState
    from fxtui.jobs.launch import ProgramJob
    from fxtui.jobs.profile_keeper import ProfileKeeper
    from fxtui.jobs.viewers import ViewerServer

# The program starts before this process imports what aggregates and serves it (the job's state, numpy, the viewers'
# server: :func:`~fxtui.jobs.job_setup.detached_job`): each is imported where it is used.

#: Seconds between snapshots for attached viewers.
INTERVAL = 0.25
#: Seconds between rewrites of ``job.json`` (steps so far, for ``fxtui attach``'s list).
INFO_EVERY = 2.0
#: Seconds between saves of the latest profile (when the figures changed).
PROFILE_EVERY = 5.0
#: Seconds, at most, the ended job's last profile and status wait for attached viewers to take them.
LINGER = 10.0


def run(directory: Path) -> int:
    """Run the job described in ``directory``; the program's exit status."""
    from fxtui.jobs.profile_keeper import ProfileKeeper

    collector_gc.take_over()  # this process is the collector's alone: full passes between snapshots
    made = detached_job(directory, start=_start)
    settings, cwd, state, server, job, stop = made.settings, made.cwd, made.state, made.server, made.job, made.stop
    cross = made.cross
    pid = job.process.pid if job.process else 0
    with state.lock:
        state.collector.started(pid, str(job.log_path or ""))
    info = JobInfo(directory.name.removeprefix("job-"), settings.command, cwd, os.getpid(), pid, time.time(),
                   listen=server.tcp_address, agents=job.agents_address)  # fmt: skip
    write_info(directory, info)
    leave = leave_on_sigterm()
    server.start()
    keeper = ProfileKeeper(directory / PROFILE)
    info = watch(lambda: job.running, state, server, keeper, directory, info, stop, leave)
    if leave.is_set() and job.running:  # asked to go: the program runs on, its figures so far kept
        return _go_leaving_the_program(state, server, keeper, directory, info)
    code = job.stop() if stop.is_set() else job.wait()
    job.close()
    cross.finish(code)  # a job across nodes: the lead waits for the others' last figures, a member sends its own
    finish(state, server, keeper, directory, info, code)
    cross.close()
    return code


def _start(job: ProgramJob) -> None:
    """Start the program, first: the collector's own set-up follows at its lower priority."""
    job.start()
    os.nice(10)  # after the program started: it keeps its own priority, the collector yields to it


def finish(
    state: JobState, server: ViewerServer, keeper: ProfileKeeper, directory: Path, info: JobInfo, code: int | None
) -> None:
    """The program ended with ``code`` (None: it did not say, and this collector is not its parent): the last
    profile saved and sent to the attached viewers with the status, ``job.json`` final, the viewers' socket
    closed once they have it."""
    from fxtui.core.snapshot import State

    with state.lock:
        state.collector.ended(code)  # type: ignore[arg-type]
    final = state.snapshot(State.DONE)  # the status line says how the program ended
    server.current = lambda rank, kind: state.snapshot(State.DONE, rank, kind)  # the figures stay as they ended
    server.publish(
        lambda rank, kind: final if rank is None and kind is None else state.snapshot(State.DONE, rank, kind)
    )
    if code is not None:
        server.announce_exit(code)
    keeper.save_now(final)
    write_info(directory, replace(info, steps=state.steps, running=False, exit_code=code))
    server.settle(LINGER)
    server.close()


def watch(
    running: Callable[[], bool],
    state: JobState,
    server: ViewerServer,
    keeper: ProfileKeeper,
    directory: Path,
    info: JobInfo,
    stop: threading.Event,
    leave: threading.Event,
) -> JobInfo:
    """While ``running()`` says the program runs: snapshots to attached viewers, ``job.json`` and the profile kept
    current. Returns when the program ended, a viewer asked to stop it, or the collector was asked to go."""
    from fxtui.core.snapshot import State
    from fxtui.jobs import heap_trim

    written = saved = time.monotonic()
    saved_at = -1
    took = 0.0
    while running() and not stop.wait(state.lag.snapshot_every(max(INTERVAL, 2 * took))) and not leave.is_set():
        state.watch_load()
        if server.viewers:
            # A job of hundreds of ranks may take a while to compare: the collector spends at most a third of its
            # time on snapshots, whatever their cost.
            began = time.monotonic()
            server.publish(lambda rank, kind: state.snapshot(State.RUNNING, rank, kind))
            took = time.monotonic() - began
        now = time.monotonic()
        if now - written >= INFO_EVERY:
            written = now
            info = replace(info, steps=state.steps)
            write_info(directory, info)
        if now - saved >= PROFILE_EVERY and state.received != saved_at:
            saved, saved_at = now, state.received
            keeper.keep(state.snapshot(State.RUNNING))
        if collector_gc.collect_if_due():  # the moment furthest from the next snapshot
            heap_trim.trim()  # what the snapshots' arrays freed goes back to the system (fxtui/jobs/heap_trim.py)
    return info


def _go_leaving_the_program(
    state: JobState, server: ViewerServer, keeper: ProfileKeeper, directory: Path, info: JobInfo
) -> int:
    """SIGTERM: the collector goes, the program runs on; what it showed stays (``fxtui attach`` says so)."""
    from fxtui.core.snapshot import State

    last = state.snapshot(State.RUNNING)
    keeper.save_now(last)
    write_info(directory, replace(info, steps=state.steps))
    server.close()
    return 0


def leave_on_sigterm() -> threading.Event:
    """SIGTERM asks the collector to go (leaving the program running); SIGHUP and SIGINT are not for it.

    Handled rather than ignored: a handled signal is the default again in the program's processes, an
    ignored one would stay ignored in them.
    """
    leave = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: leave.set())
    for sig in (signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: None)
    return leave


def main() -> None:
    if len(sys.argv) != 2:
        print("usage: python -m fxtui.jobs.daemon JOBDIR", file=sys.stderr)
        raise SystemExit(2)
    with contextlib.suppress(KeyboardInterrupt):
        run(Path(sys.argv[1]))


if __name__ == "__main__":
    main()
