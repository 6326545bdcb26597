"""A new collector for a job whose collector died while its program runs on: ``fxtui attach`` of a lost job.

A detached job's program never depends on its collector (:mod:`fxtui.jobs.daemon`): killed, it
leaves the program running, its output going to its log, and its last figures in
``profile.json``. The program's agent notices, stops sending, and looks every two seconds for a
collector at the job's socket again (:mod:`fxtui.agent.sender`). ``python -m fxtui.jobs.adopt
JOBDIR`` is that collector: it takes over the job's sockets, says so in ``job.json``,
and aggregates from the agent's next message on (the agent says again who it is, and every node
and root it has described, with its next step: the figures are whole again within a few sampled
steps). It is not the program's parent: it watches its pid for the end, and learns the exit
status from the program's boot (:mod:`fxtui.agent.program_exit`), which says it as it ends; a
program killed by a signal ends without a word ("ended").

A node of a job across nodes takes up its part in it (:mod:`fxtui.jobs.kept_link`): a member's adopter
reports to the lead again, and a lead's listens again where the job's store says the lead is, for the
members, which look for a lost lead every two seconds.

What it costs the program: nothing while its collector runs; once it is gone, one connection
attempt on a local socket every two seconds in the agent's own thread, and the nodes and roots
already described kept for a new collector (a few kilobytes for a small model; they are the
agent's statistics, not its samples). On adoption, one message with every node.
"""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path

from fxtui.core.errors import FxtuiError
from fxtui.core.snapshot import State
from fxtui.jobs import collector_gc
from fxtui.jobs.daemon import finish, leave_on_sigterm, watch
from fxtui.jobs.job_setup import detached_job
from fxtui.jobs.job_start import ADOPTER, start_collector
from fxtui.jobs.pid_watch import watch_pid
from fxtui.jobs.profile_keeper import ProfileKeeper
from fxtui.wire.agent_contract import ProgramExit
from fxtui.wire.job_directory import LOG, PROFILE, JobInfo, job_dir, read_info, running, write_info

#: Seconds after each signal (Ctrl+C's, then SIGTERM, then SIGKILL) a viewer's stop waits for the program.
STOP_GRACE_S = 5.0


def lost_text(job: JobInfo) -> str:
    """One sentence on a job whose collector is gone: what runs, where its output is."""
    log = job_dir(job.id) / LOG
    if job.program_pid and running(job.program_pid):
        return (
            f"job {job.id}'s collector is gone (it was killed, or crashed); its program still runs as pid "
            f"{job.program_pid}, its output in {log}"
        )
    return (
        f"job {job.id}'s collector is gone, and its program (pid {job.program_pid}) has ended; its output is in {log}"
    )


def start_adopting(job: JobInfo) -> JobInfo:
    """Start a new collector for ``job`` (its program runs, its collector is gone) and return the job as it says;
    one sentence when it cannot be."""
    directory = job_dir(job.id)
    if not (job.program_pid and running(job.program_pid)):
        raise FxtuiError(f"job {job.id}'s program has ended: there is nothing left to watch")
    # Ready when job.json names the new collector; when it ended first, another viewer may have adopted the job.
    return start_collector(
        directory,
        ADOPTER,
        f"job {job.id}'s new collector",
        ready=lambda info, pid: info.pid == pid,
        given_up=lambda info: info.alive,
    )


def adopt(directory: Path) -> int:
    """Collect for the job in ``directory`` until its program ends; 0, or 1 with a sentence when it cannot."""
    info = read_info(directory)
    if info is None or not info.running or info.alive or not (info.program_pid and running(info.program_pid)):
        print("fxtui: nothing to adopt: the job ended, or its collector still runs", file=sys.stderr)
        return 1
    pid = info.program_pid
    said: list[ProgramExit] = []

    def on_exit(message: ProgramExit, connection: Connection) -> None:
        if message.pid == pid:
            said.append(message)

    collector_gc.take_over()  # this process is the collector's alone: full passes between snapshots
    made = detached_job(directory, agents_on=info.agents, on_exit=on_exit)
    state, server, job, stop = made.state, made.server, made.job, made.stop
    made.cross.resume(directory)  # a node of a job across nodes: its part in it, as far as it can be taken up
    with state.lock:
        state.collector.started(pid, str(directory / LOG))
    info = replace(info, pid=os.getpid())
    job.listen()
    server.start()
    write_info(directory, info)
    server.warn(f"adopted the job: its program (pid {pid}) ran on after its collector was gone")
    leave = leave_on_sigterm()
    os.nice(10)
    keeper = ProfileKeeper(directory / PROFILE)
    ended = watch_pid(pid)
    info = watch(lambda: not said and not ended(0), state, server, keeper, directory, info, stop, leave)
    if leave.is_set() and not said and not ended(0):
        keeper.save_now(state.snapshot(State.RUNNING))
        write_info(directory, replace(info, steps=state.steps))
        server.close()
        return 0
    if stop.is_set():
        _stop(pid, ended)
    while not said and not ended(0.2):  # said it ends: its last messages, then its end
        pass
    job.drain(5.0)
    job.close()
    code = said[0].code if said else None
    made.cross.finish(code)  # a member sends the lead its last figures
    finish(state, server, keeper, directory, info, code)
    made.cross.close()
    return 0


def _stop(pid: int, ended: object) -> None:
    """A viewer asked to stop the program: as Ctrl+C would, then SIGTERM, then SIGKILL."""
    assert callable(ended)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        if ended(STOP_GRACE_S):
            return


def main() -> None:
    if len(sys.argv) != 2:
        print("usage: python -m fxtui.jobs.adopt JOBDIR", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(adopt(Path(sys.argv[1])))


if __name__ == "__main__":
    main()
