"""``fxtui attach [JOB]``: watch a job started with ``fxtui run`` (``--detach`` or in another terminal).

With no JOB it lists this user's running jobs and attaches to the only one (or asks which).
Leaving the app (q, or the viewer killed) never stops the job; ``K`` in the app does, after
asking. ``--once`` takes the job's current profile headless (``--json`` and the other exports
as for ``fxtui run``). A job that has ended offers its saved profile.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from fxtui.commands.output import say
from fxtui.core.errors import FxtuiError
from fxtui.core.settings import OutputSettings


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise FxtuiError(f"{message} (see fxtui attach --help)")


def build_parser() -> argparse.ArgumentParser:
    """The options of ``fxtui attach``."""
    from fxtui.commands.options import add_export_options, add_table_options

    p = _Parser(prog="fxtui attach", description="Watch a job started with fxtui run; leaving never stops it.")
    p.add_argument("job", metavar="JOB", nargs="?", help="the job's id (or its start), or its program's pid")
    p.add_argument("--once", action="store_true", help="print the job's current profile and leave (no app)")
    p.add_argument("--token", help="with JOB as HOST:PORT: the token the job printed when it started (--listen)")
    add_table_options(p)
    add_export_options(p)
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def main(argv: Sequence[str]) -> int:
    """``fxtui attach``; its exit status."""
    from fxtui.commands.model_headless import check
    from fxtui.commands.options import program_output
    from fxtui.jobs.directory import PROFILE, find_job, job_dir, list_jobs

    args = build_parser().parse_args(list(argv))
    output = program_output(args)
    check(output)
    if args.job is not None and _is_address(args.job):  # a job served over TCP, from another server
        return _remote(args.job, args.token, output, args.once or not sys.stdout.isatty())
    if args.job is None:
        running = list_jobs(running_only=True)
        if not running:
            ended = list_jobs()[:5]
            say("no running job of this user's" + (": the latest ones ended" if ended else ""))
            for job in ended:
                say("  " + job.line())
            return 1
        if len(running) > 1:
            for job in running:
                say("  " + job.line())
            if not (sys.stdin.isatty() and sys.stdout.isatty()):
                raise FxtuiError(f"{len(running)} jobs run: name one (fxtui attach JOB)")
            choice = input("which job? ").strip()
            job = find_job(choice)
        else:
            job = running[0]
    else:
        job = find_job(args.job)
    if job.running and not job.alive:  # its collector died: say so, show what it kept, and watch it anew
        from fxtui.jobs.adopt import lost_text, start_adopting
        from fxtui.jobs.pid_watch import running as still_runs

        say(lost_text(job))
        profile = job_dir(job.id) / PROFILE
        if profile.exists():
            from fxtui.commands.run import print_report_data

            say(f"its last figures, kept in {profile}:")
            print_report_data(_load(str(profile)), output)
        if not still_runs(job.program_pid):
            return 0
        job = start_adopting(job)
        say(f"a new collector watches it from now on: fxtui attach {job.id} shows its figures as they come")
        if args.once or not sys.stdout.isatty():
            return 0
    elif not job.running:
        profile = job_dir(job.id) / PROFILE
        if not profile.exists():
            raise FxtuiError(f"job {job.id} is no longer running and left no profile")
        from fxtui.commands.run import print_report_data

        say(f"job {job.id} ended ({job.exit_code}); its last profile: {profile}")
        print_report_data(_load(str(profile)), output)
        return 0
    if args.once or not sys.stdout.isatty():
        return once(job, output)
    from fxtui.commands.run import watch

    return watch(job, output, stop_on_quit=False)


def _is_address(text: str) -> bool:
    host, _, port = text.rpartition(":")
    return bool(host) and port.isdigit()


def _remote(address: str, token: str | None, output: OutputSettings, once: bool) -> int:
    from fxtui.jobs.attach_source import AttachSource, remote_job

    if not token:
        raise FxtuiError(f"attaching to {address} needs the job's token (--token, printed when the job started)")
    try:
        key = bytes.fromhex(token)
    except ValueError:
        raise FxtuiError("--token takes the hexadecimal token the job printed when it started") from None
    job = remote_job(address)
    if once:
        from fxtui.commands.run import print_report

        snapshot = AttachSource(job, key).take()
        if snapshot is None or snapshot.graph is None:
            raise FxtuiError(f"the job at {address} has no figures yet (it is still warming up)")
        print_report(snapshot, output)
        return 0
    from fxtui.commands.run import watch

    return watch(job, output, stop_on_quit=False, token=key)


def once(job: object, output: OutputSettings) -> int:
    """The job's current profile, printed (and exported) as ``fxtui run --once`` prints one; the job goes on."""
    from fxtui.commands.run import print_report
    from fxtui.jobs.attach_source import AttachSource
    from fxtui.jobs.directory import JobInfo

    assert isinstance(job, JobInfo)
    snapshot = AttachSource(job).take()
    if snapshot is None or snapshot.graph is None:
        raise FxtuiError(f"job {job.id} has no figures yet (it is still warming up)")
    say(f"job {job.id}: {' '.join(job.command)} (pid {job.program_pid}), its profile so far:")
    print_report(snapshot, output)
    return 0


def _load(path: str) -> object:
    from fxtui.report.api import Report

    return Report.load(path)
