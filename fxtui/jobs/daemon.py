"""A job's collector, detached from any terminal: it runs the program, aggregates, and serves whoever attaches.

``python -m fxtui.jobs.daemon JOBDIR`` (started by :func:`fxtui.jobs.directory.start_detached`
in a session of its own, so a closed SSH connection ends neither it nor the program). It
starts the program with its output to the job's log, then aggregates its agents' messages
for as long as it runs, viewers or not: memory stays bounded (statistics, the recent steps and
a coarse history of the whole run grow, samples do not), so a viewer attaching after an hour
sees the whole hour. Viewers come and go (:class:`~fxtui.jobs.viewers.ViewerServer`);
one that dies costs the job nothing. When the program ends its last profile is saved
(``profile.json``) and kept on offer to attached viewers for a while.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

from fxtui.core.agent_contract import AgentOptions
from fxtui.core.settings import ProgramSettings
from fxtui.core.snapshot import Snapshot, State
from fxtui.jobs.directory import KEY, PROFILE, VIEWER, JobInfo, write_info
from fxtui.jobs.launch import ProgramJob, log_tail
from fxtui.jobs.ranks import JobCollector
from fxtui.jobs.viewers import ViewerServer

#: Seconds between snapshots for attached viewers.
INTERVAL = 0.25
#: Seconds between rewrites of ``job.json`` (steps so far, for ``fxtui attach``'s list).
INFO_EVERY = 2.0
#: Seconds the ended job's last profile stays on offer to viewers still attached.
LINGER = 60.0


def run(directory: Path) -> int:
    """Run the job described in ``directory``; the program's exit status."""
    os.umask(0o077)  # everything the collector makes (sockets, files) is the user's alone
    data = json.loads((directory / "settings.json").read_text())
    listen, cwd = data.pop("listen", ""), data.pop("cwd", os.getcwd())
    data["command"] = tuple(data["command"])
    settings = ProgramSettings(**data)
    os.chdir(cwd)
    key = bytes.fromhex((directory / KEY).read_text().strip())
    lock = threading.Lock()
    collector = JobCollector(settings.command, warmup=settings.warmup)

    def receive(message: object, agent: int) -> None:
        with lock:
            collector.receive(message, agent)

    agents_on = ""
    if listen:  # ranks on other servers report one port above the viewers'
        host, _, port = listen.rpartition(":")
        agents_on = f"{host}:{int(port) + 1}"
    job = ProgramJob(
        settings.command,
        receive,
        options=AgentOptions(settings.warmup, settings.every, settings.budget),
        log=True,
        directory=directory,
        key=key,
        agents_on=agents_on,
        env=settings.program_env(),
    )
    stop = threading.Event()
    server = ViewerServer(directory / VIEWER, key, listen, on_stop=stop.set, on_reset=lambda: _reset(collector, lock))
    job.start()
    pid = job.process.pid if job.process else 0
    with lock:
        collector.started(pid, str(job.log_path or ""))
    info = JobInfo(directory.name.removeprefix("job-"), settings.command, cwd, os.getpid(), pid, time.time(),
                   listen=server.tcp_address, agents=job.agents_address)  # fmt: skip
    write_info(directory, info)
    os.nice(10)  # after the program started: it keeps its own priority, the collector yields to it
    server.start()
    written = time.monotonic()
    while job.running and not stop.wait(INTERVAL):
        if server.viewers:
            with lock:
                collector.tail(log_tail(job.log_path))

            def running(rank: int | None) -> Snapshot:
                with lock:
                    return collector.snapshot(State.RUNNING, rank)

            server.publish(running)
        if job.log_error and collector.program.note != job.log_error:
            with lock:
                collector.note(job.log_error + "; the program goes on")
        if time.monotonic() - written >= INFO_EVERY:
            written = time.monotonic()
            write_info(directory, replace(info, steps=collector.steps))
    code = job.stop() if stop.is_set() else job.wait()
    with lock:
        collector.ended(code)
        collector.tail(log_tail(job.log_path))
        final = collector.snapshot(State.DONE)  # the status line says how the program ended
    server.publish(final)
    server.announce_exit(code)
    _save(directory / PROFILE, final)
    write_info(directory, replace(info, steps=collector.steps, running=False, exit_code=code))
    job.close()
    deadline = time.monotonic() + LINGER
    while server.viewers and time.monotonic() < deadline:
        time.sleep(0.2)
    server.close()
    return code


def _reset(collector: JobCollector, lock: threading.Lock) -> None:
    with lock:
        collector.reset()


def _save(path: Path, snapshot: object) -> None:
    """The ended job's profile as ``--json`` writes it (``fxtui attach`` of an ended job opens it)."""
    from fxtui.report.api import Report
    from fxtui.report.export import write_atomic

    with contextlib.suppress(Exception):  # a profile that cannot be saved loses only itself
        write_atomic(path, Report.from_snapshot(snapshot).to_json())  # type: ignore[arg-type]


def main() -> None:
    if len(sys.argv) != 2:
        print("usage: python -m fxtui.jobs.daemon JOBDIR", file=sys.stderr)
        raise SystemExit(2)
    run(Path(sys.argv[1]))


if __name__ == "__main__":
    main()
