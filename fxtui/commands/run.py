"""``fxtui run [OPTIONS] SCRIPT [ARGS…]`` and ``fxtui run [OPTIONS] -m MODULE [ARGS…]``: profile the user's program.

Everything after the script (or ``-m MODULE``) is the program's own. On a terminal the app
opens at once and fills as steps happen; with ``--once``, or when stdout is not a terminal,
the program runs to its end (or Ctrl+C) with its own stdout and stderr, then the header and
the table print, and fxtui exits with the program's status.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from fxtui.commands.output import say
from fxtui.core.errors import FxtuiError
from fxtui.core.settings import OutputSettings, ProgramSettings

if TYPE_CHECKING:
    from fxtui.jobs.directory import JobInfo

_EPILOG = """\
Everything after SCRIPT (or -m MODULE) is the program's own: it runs as
python SCRIPT ARGS… would (sys.argv, __name__ == "__main__", its working
directory, its output and exit status). fxtui finds the model (the outermost
nn.Module called), the steps (one optimizer.step() each, or one model call),
and times a sample of the steps per ATen op, charged to the module it runs in.
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise FxtuiError(f"{message} (see fxtui run --help)")


def build_parser() -> argparse.ArgumentParser:
    """The options of ``fxtui run`` (the program and its arguments are split off first: :func:`split`)."""
    from fxtui.commands.options import add_export_options, add_kind_option, add_table_options, count_type

    p = _Parser(
        prog="fxtui run",
        usage="fxtui run [OPTIONS] SCRIPT [ARGS…] | fxtui run [OPTIONS] -m MODULE [ARGS…]",
        description="Profile your own program as it runs: its steps by phase, and a sample of them per node.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--once", action="store_true", help="run the program to its end, then print a table (no app)")
    p.add_argument(
        "--detach",
        action="store_true",
        help="start the program in the background (its own session; a closed terminal does not end it), print "
        "its job id and how to attach (fxtui attach), and return at once",
    )
    p.add_argument(
        "--listen",
        metavar="HOST:PORT",
        default="",
        help="also serve viewers on TCP (loopback unless HOST says otherwise; a viewer needs the token printed "
        "at start)",
    )
    s = p.add_argument_group("steps")
    s.add_argument(
        "--warmup-steps",
        type=count_type("--warmup-steps", 0),
        default=5,
        metavar="N",
        help="steps at the start left out of every figure (default 5)",
    )
    s.add_argument(
        "--sample-every",
        type=count_type("--sample-every", 1),
        default=0,
        metavar="N",
        help="time one step in N per node (default: as often as costs the program at most 2%% of its time)",
    )
    s.add_argument(
        "--keep-freed-memory",
        action="store_true",
        help="run the program with glibc keeping the memory it frees (MALLOC_MMAP_MAX_=0, MALLOC_TRIM_THRESHOLD_): "
        "blocks it allocates afresh every step stop costing page faults; its peak stays resident",
    )
    add_table_options(p)
    add_kind_option(p)
    add_export_options(p)
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def split(argv: Sequence[str], parser: argparse.ArgumentParser) -> tuple[list[str], list[str]]:
    """fxtui's own options, and the program: from the first argument that is not an option of fxtui run's (or
    ``-m``) on."""
    takes_value = {flag for action in parser._actions if action.nargs != 0 for flag in action.option_strings}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return list(argv[:i]), list(argv[i + 1 :])
        if arg == "-m":
            return list(argv[:i]), list(argv[i:])
        if not arg.startswith("-") or arg == "-":
            return list(argv[:i]), list(argv[i:])
        i += 1 if "=" in arg or arg not in takes_value else 2
    return list(argv), []


def main(argv: Sequence[str]) -> int:
    """``fxtui run``; returns the exit status (the program's)."""
    from fxtui.commands.options import program_output

    parser = build_parser()
    own, command = split(argv, parser)
    if not command and any(a in ("-h", "--help") for a in own):
        parser.print_help()
        return 0
    args = parser.parse_args(own)
    from fxtui.jobs.launch import check_command

    check_command(command)
    from fxtui.jobs.directory import prune_ended

    prune_ended()  # ended jobs' directories older than a week
    settings = ProgramSettings(
        tuple(command), warmup=args.warmup_steps, every=args.sample_every, keep_freed_memory=args.keep_freed_memory
    )
    output = program_output(args)
    from fxtui.commands.model_headless import check

    check(output)
    if args.detach:
        return detach(settings, args.listen)
    if args.once or not sys.stdout.isatty():
        return headless(settings, output)
    return live(settings, output, args.listen)


def detach(settings: ProgramSettings, listen: str = "") -> int:
    """Start the job in the background and say how to watch it."""
    from fxtui.jobs.directory import LOG, read_key, start_detached
    from fxtui.jobs.launch import SITE_DIR

    job, directory = start_detached(settings, listen)
    say(f"started job {job.id}: {' '.join(settings.command)} (pid {job.program_pid})")
    say(f"  its output: {directory / LOG}")
    say(f"  watch it:   fxtui attach {job.id}")
    if job.listen:
        token = read_key(job).hex()
        say(f"  over TCP:   fxtui attach {job.listen} --token {token}")
        say(f"  ranks on other servers: FXTUI_AGENT={job.agents} FXTUI_AGENT_KEY={token} PYTHONPATH={SITE_DIR} "
            "torchrun … (on each of them)")  # fmt: skip
    return 0


def headless(settings: ProgramSettings, output: OutputSettings) -> int:
    """Become the program, its collector beside it printing the profile as it ends (:mod:`fxtui.jobs.beside`):
    its pid, signals and exit status are its own. Where processes cannot fork, run it as a child instead."""
    if hasattr(os, "fork"):
        from fxtui.jobs.beside import become_the_program

        become_the_program(settings, lambda snapshot: print_report(snapshot, output), kind=output.kind or None)
    return _headless_child(settings, output)


def _headless_child(settings: ProgramSettings, output: OutputSettings) -> int:
    """Run the program with the terminal its own, then print the profile; the program's exit status."""
    from fxtui.core.agent_contract import AgentOptions
    from fxtui.core.snapshot import State
    from fxtui.jobs.launch import ProgramJob, exit_status
    from fxtui.jobs.ranks import JobCollector

    collector = JobCollector(settings.command, warmup=settings.warmup)
    lock = threading.Lock()

    def receive(message: object, agent: int) -> None:
        with lock:
            collector.receive(message, agent)

    options = AgentOptions(settings.warmup, settings.every, settings.budget)
    job = ProgramJob(settings.command, receive, options=options, env=settings.program_env())
    # Ctrl+C reaches the program (the terminal signals the whole process group): it stops as it would
    # without fxtui, and the profile so far is printed here once it has.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    forward = signal.signal(signal.SIGTERM, lambda sig, frame: job.interrupt(signal.SIGTERM))
    try:
        job.start()
        # As the detached collector does: after the program started (it keeps its own priority), this
        # process yields the cores to it. It only collects until the program ends.
        os.nice(10)
        code = job.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, forward)
        job.close()
    with lock:
        collector.ended(code)
        snapshot = collector.snapshot(State.DONE, kind=output.kind or None)
    print_report(snapshot, output)
    return exit_status(code)


def print_report(snapshot: object, output: OutputSettings) -> None:
    """The header and the table of a program's profile, then the exports (``wrote …``)."""
    from fxtui.report.api import Report

    print_report_data(Report.from_snapshot(snapshot), output)  # type: ignore[arg-type]


def print_report_data(report: object, output: OutputSettings) -> None:
    """A report's header and table (a program's last profile saved to a file too), then the exports."""
    from fxtui.commands.model_headless import write_exports
    from fxtui.report.api import Report

    assert isinstance(report, Report)
    sys.stdout.flush()
    say("\n" + report.header() + "\n")
    if report.rows:
        top = output.top or None
        if output.modules:
            say(report.module_table(top=top, path=output.spec.path))
        else:
            say(report.table(sort=output.sort, top=top, spec=output.spec, columns=output.columns))
    write_exports(report, output.export_paths)


def live(settings: ProgramSettings, output: OutputSettings, listen: str = "") -> int:
    """The app on the program, run as a job (so it can be detached: D); when the app closes, the program stops
    as Ctrl+C would, its profile prints, and fxtui exits with its status."""
    from fxtui.jobs.directory import start_detached

    job, _ = start_detached(settings, listen)
    return watch(job, output, stop_on_quit=True)


def watch(job: JobInfo, output: OutputSettings, *, stop_on_quit: bool, token: bytes | None = None) -> int:
    """The app attached to ``job``. Quitting stops the program when ``stop_on_quit`` (fxtui run), else leaves it
    running (fxtui attach); D always leaves it running."""
    from fxtui.core.commands import StopProgram
    from fxtui.jobs.attach_source import AttachSource
    from fxtui.jobs.directory import LOG, job_dir
    from fxtui.jobs.launch import exit_status
    from fxtui.ui.app import FxtuiApp

    source = AttachSource(job, token)
    app = FxtuiApp(source, title=f"fxtui {'run' if stop_on_quit else 'attach'} {' '.join(job.command)}")
    app.run()
    detached = app.detached
    fatal = getattr(app, "fatal_error", None)
    if fatal:
        raise FxtuiError(fatal)
    if detached or (not stop_on_quit and source.exit_code is None):
        say(f"job {job.id} goes on: {' '.join(job.command)}; fxtui attach {job.id} watches it again")
        return 0
    final, code = source.last, source.exit_code
    if code is None:  # quit while the program runs: stop it as Ctrl+C would, and wait for its last profile
        stopper = AttachSource(job, token)
        stopper.send(StopProgram())
        stopper.run(lambda snapshot: None)  # until the collector has sent the last profile and the status
        final, code = stopper.last or final, stopper.exit_code
    if final is not None:
        print_report(final, OutputSettings(top=10, exports=output.exports))
    if job.pid:  # a job of this machine's (a remote one keeps its output where it runs)
        say(f"the program's output: {job_dir(job.id) / LOG}")
    return exit_status(code) if code is not None else 1


__all__ = ["build_parser", "headless", "live", "main", "os", "split"]
