"""``fxtui attach [JOB]``: watch a job started with ``fxtui run`` (``--detach`` or in another terminal).

With no JOB it attaches to this user's only running job (or asks which, on a terminal). Leaving the
app (q, or the viewer killed) never stops the job; ``K`` in the app does, after asking. ``--once``
takes the job's current profile headless (``--json`` and the other exports as for ``fxtui run``).
A job that has ended offers its saved profile.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from fxtui.commands.next_command import NextCommand, program_next_command
from fxtui.commands.options import (
    add_export_options,
    add_kind_option,
    add_table_options,
    check_output,
    program_output,
)
from fxtui.commands.output import say
from fxtui.commands.usage import UsageError, help_hint, pointing_at
from fxtui.core.errors import FxtuiError
from fxtui.core.settings import OutputSettings

if TYPE_CHECKING:
    from fxtui.wire.job_directory import JobInfo

# The app, the report and the jobs' directory are imported where they are used: the parser imports this module
# to build fxtui attach's options, whatever the command (a fixed cost of every fxtui command).

DESCRIPTION = "Watch a job started with fxtui run (--detach, or in another terminal); leaving never stops it."
EPILOG = """\
examples:
  fxtui attach                     the only running job (or choose one)
  fxtui attach 3f9c --once         job 3f9c's profile so far, as a table
  fxtui attach 10.0.0.5:7000 --token TOKEN   a job served with fxtui run --listen
"""

#: How many ended jobs the sentence for "no running job" lists after it.
RECENT = 5


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``fxtui attach``."""
    p.add_argument("job", metavar="JOB", nargs="?", help="the job's id (or its start), or its program's pid")
    p.add_argument("--once", action="store_true", help="print the job's current profile and leave (no app)")
    p.add_argument("--token", help="with JOB as HOST:PORT: the token the job printed when it started (--listen)")
    add_table_options(p, program=True)
    add_kind_option(p)
    add_export_options(p)


def run(args: argparse.Namespace) -> int:
    """``fxtui attach``; its exit status."""
    from fxtui.wire.job_directory import PROFILE, find_job, job_dir, list_jobs

    with pointing_at("attach"):
        output = program_output(args)
        check_output(output)
    once = args.once or not sys.stdout.isatty()
    next_command = program_next_command(getattr(args, "argv", ()), (), output, "attach") if once else None
    if args.job is not None and _is_address(args.job):  # a job served over TCP, from another server
        return _remote(args.job, args.token, output, once, next_command)
    if args.job is None:
        running = list_jobs(running_only=True)
        if not running:
            return _no_running_job(list_jobs()[:RECENT])
        if len(running) > 1:
            if not (sys.stdin.isatty() and sys.stdout.isatty()):
                raise _Several(running)
            for job in running:
                say("  " + job.line())
            job = find_job(input("which job? ").strip())
        else:
            job = running[0]
    else:
        job = find_job(args.job)
    if job.running and not job.alive:  # its collector died: say so, show what it kept, and watch it anew
        from fxtui.jobs.adopt import lost_text, start_adopting
        from fxtui.wire.job_directory import running as still_runs

        say(lost_text(job))
        profile = job_dir(job.id) / PROFILE
        if profile.exists():
            from fxtui.commands.program_report import print_report
            from fxtui.report.api import Report

            try:  # what the dead collector kept must not stand between the job and a new collector
                kept = Report.load(str(profile))
            except FxtuiError as e:
                say(f"its last figures cannot be shown: {e}")
            else:
                say(f"its last figures, kept in {profile}:")
                print_report(kept, output)
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
        from fxtui.report.api import Report

        say(f"job {job.id} ended ({job.exit_code}); its last profile: {profile}")
        from fxtui.commands.program_report import print_report

        print_report(Report.load(str(profile)), output)
        return 0
    if once:
        return once_profile(job, output, next_command)
    from fxtui.commands.job_app import watch

    return watch(job, output, stop_on_quit=False)


def _no_running_job(ended: list[JobInfo]) -> int:
    """The README's rule: one sentence on stderr and exit status 2; the latest ended jobs may follow it."""
    say(f"fxtui: no running job of this user's to attach to: fxtui run --detach SCRIPT starts one "
        f"({help_hint('attach')})", sys.stderr)  # fmt: skip
    if ended:
        say("the latest ended (fxtui attach JOB shows one's last profile):", sys.stderr)
        for job in ended:
            say("  " + job.line(), sys.stderr)
    return UsageError.exit_status


class _Several(FxtuiError):
    """Several jobs run and no terminal to ask on: the sentence, then the jobs to name one of."""

    def __init__(self, running: list[JobInfo]) -> None:
        lines = "".join("\n  " + job.line() for job in running)
        super().__init__(f"{len(running)} jobs run: name one (fxtui attach JOB){lines}")


def _is_address(text: str) -> bool:
    host, _, port = text.rpartition(":")
    return bool(host) and port.isdigit()


def _remote(
    address: str, token: str | None, output: OutputSettings, once: bool, next_command: NextCommand | None
) -> int:
    from fxtui.wire.attach_source import AttachSource, remote_job

    if not token:
        raise FxtuiError(f"attaching to {address} needs the job's token (--token, printed when the job started)")
    try:
        key = bytes.fromhex(token)
    except ValueError:
        raise FxtuiError("--token takes the hexadecimal token the job printed when it started") from None
    job = remote_job(address)
    if once:
        snapshot = AttachSource(job, key).take(kind=output.kind or None)
        if snapshot is None or snapshot.graph is None:
            raise FxtuiError(f"the job at {address} has no figures yet (it is still warming up)")
        from fxtui.commands.program_report import print_snapshot

        print_snapshot(snapshot, output, next_command)
        return 0
    from fxtui.commands.job_app import watch

    return watch(job, output, stop_on_quit=False, token=key)


def once_profile(job: JobInfo, output: OutputSettings, next_command: NextCommand | None = None) -> int:
    """The job's current profile, printed (and exported) as ``fxtui run --once`` prints one; the job goes on."""
    from fxtui.wire.attach_source import AttachSource

    snapshot = AttachSource(job).take(kind=output.kind or None)
    if snapshot is None or snapshot.graph is None:
        raise FxtuiError(f"job {job.id} has no figures yet (it is still warming up)")
    say(f"job {job.id}: {' '.join(job.command)} (pid {job.program_pid}), its profile so far:")
    from fxtui.commands.program_report import print_snapshot

    print_snapshot(snapshot, output, next_command)
    return 0
