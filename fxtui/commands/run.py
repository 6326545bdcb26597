"""``fxtui run [OPTIONS] SCRIPT [ARGS…]`` and ``fxtui run [OPTIONS] -m MODULE [ARGS…]``: profile the user's program.

Everything after the script (or ``-m MODULE``) is the program's own. On a terminal the app
opens at once and fills as steps happen; with ``--once``, or when stdout is not a terminal,
the program runs to its end (or Ctrl+C) with its own stdout and stderr, then the header and
the table print, and fxtui exits with the program's status.
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from fxtui.commands.options import (
    add_export_options,
    add_kind_option,
    add_table_options,
    check_output,
    count_type,
    program_output,
)
from fxtui.commands.output import say
from fxtui.commands.usage import UsageError, help_hint, pointing_at
from fxtui.core.settings import OutputSettings, ProgramSettings
from fxtui.wire.agent_contract import AgentOptions

if TYPE_CHECKING:
    from fxtui.commands.next_command import NextCommand
    from fxtui.core.snapshot import Snapshot

# What prints and shows a profile (the report, the app's job) is imported where it is used: before the program
# starts only the parser and the launch run, and every import there is fxtui run's fixed cost.

USAGE = "fxtui run [OPTIONS] SCRIPT [ARGS…] | fxtui run [OPTIONS] -m MODULE [ARGS…]"
DESCRIPTION = "Profile your own program as it runs, unchanged: its steps by phase, and a sample of them per ATen op."
EPILOG = """\
Everything after SCRIPT (or -m MODULE) is the program's own: it runs as
python SCRIPT ARGS… would (sys.argv, __name__ == "__main__", its working
directory, its output and exit status). fxtui finds the model (the outermost
nn.Module called) and its steps by kind: training steps (an iteration: its
forwards, backwards and optimizer steps), evaluation calls (no gradients) and
generate() calls; it times a sample of each kind per ATen op, charged to the
module it runs in (--kind chooses which the table shows).

On a terminal the app opens at once and fills as steps happen; with --once, or
when stdout is not a terminal, the program runs to its end (or Ctrl+C), then
the profile prints, and fxtui exits with the program's status.

examples:
  fxtui run train.py --epochs 1           the app on your training script
  fxtui run --once train.py               run it to its end, then a table
  fxtui run --once --modules -m pkg.train  a module, the table by module
  fxtui run --detach train.py             in the background: fxtui attach watches it
  fxtui run --once torchrun --nproc-per-node 2 train.py   every rank of a torchrun job
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``fxtui run`` (the program and its arguments are split off first by the parser)."""
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
        help="time one step in N per op (default: as often as costs the program at most 2%% of its time)",
    )
    s.add_argument(
        "--keep-freed-memory",
        action="store_true",
        help="run the program with glibc keeping the memory it frees (MALLOC_MMAP_MAX_=0, MALLOC_TRIM_THRESHOLD_): "
        "blocks it allocates afresh every step stop costing page faults; its peak stays resident",
    )
    s.add_argument(
        "--keep-disturbed",
        action="store_true",
        help="keep in the node figures the sampled steps that waited for a CPU more than 10%% of their time "
        "(other processes held the cores); by default they are left out while 5 quiet ones remain",
    )
    s.add_argument(
        "--timer",
        choices=("mode", "native"),
        default="native",
        help="how sampled steps time each op: native (the default: a C++ RecordFunction callback, 1–3 µs an op, built "
        "with the system's compiler as the first program ends; the dispatch mode until then, and on a machine "
        "without a compiler) or mode (a Python dispatch mode, 10–17 µs an op)",
    )
    add_table_options(p, program=True)
    add_kind_option(p)
    add_export_options(p)


def run(args: argparse.Namespace) -> int:
    """``fxtui run``; returns the exit status (the program's)."""
    with pointing_at("run"):
        output = program_output(args)
        check_output(output)
    command = list(getattr(args, "program", ()))
    if not command:
        raise UsageError(f"fxtui run needs a script to run: fxtui run train.py [ARGS…] or fxtui run -m MODULE [ARGS…] "
                         f"({help_hint('run')})")  # fmt: skip
    from fxtui.jobs.launch import check_command

    check_command(command)
    settings = ProgramSettings(
        tuple(command),
        warmup=args.warmup_steps,
        every=args.sample_every,
        keep_freed_memory=args.keep_freed_memory,
        keep_disturbed=args.keep_disturbed,
        timer=args.timer,
    )
    if args.detach:
        return detach(settings, args.listen)
    if args.once or not sys.stdout.isatty():
        return headless(settings, output, argv=getattr(args, "argv", ()))
    return live(settings, output, args.listen)


def detach(settings: ProgramSettings, listen: str = "") -> int:
    """Start the job in the background and say how to watch it."""
    from fxtui.jobs.job_start import prune_ended, start_detached
    from fxtui.jobs.launch import SITE_DIR
    from fxtui.wire.job_directory import LOG, read_key

    prune_ended()  # ended jobs' directories older than a week
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


def headless(settings: ProgramSettings, output: OutputSettings, argv: Sequence[str] = ()) -> int:
    """Become the program, its collector beside it printing the profile (and the next command to try, from the
    command line ``argv``) as it ends (:mod:`fxtui.jobs.beside`): its pid, signals and exit status are its own.
    Where processes cannot fork, run it as a child instead."""
    if hasattr(os, "fork"):
        from fxtui.jobs.beside import become_the_program

        @functools.cache
        def suggestion() -> NextCommand | None:
            return _next_command(argv, settings, output)

        def prepare() -> None:  # in the collector as the program starts: not before its first line nor after its last
            from fxtui.commands import program_report  # noqa: F401  (what prints the profile)
            from fxtui.jobs.job_start import prune_ended

            suggestion()
            prune_ended()  # ended jobs' directories older than a week

        def report(snapshot: Snapshot) -> None:  # in the collector, as the program ends
            from fxtui.commands.program_report import print_snapshot

            print_snapshot(snapshot, output, suggestion())

        become_the_program(settings, report, kind=output.kind or None, prepare=prepare)
    return _headless_child(settings, output, _next_command(argv, settings, output))


def _next_command(argv: Sequence[str], settings: ProgramSettings, output: OutputSettings) -> NextCommand | None:
    """The command a program's table suggests next. ``--once``'s collector works it out as the program starts: it
    reads every command's options (each command's module imported), time the program would otherwise wait for
    before its first line."""
    from fxtui.commands.next_command import program_next_command

    return program_next_command(argv, settings.command, output, "run")


def _headless_child(settings: ProgramSettings, output: OutputSettings, next_command: NextCommand | None = None) -> int:
    """Run the program with the terminal its own, then print the profile; the program's exit status."""
    from fxtui.core.snapshot import State
    from fxtui.jobs.job_start import prune_ended
    from fxtui.jobs.launch import ProgramJob, exit_status
    from fxtui.jobs.ranks import JobCollector

    prune_ended()  # ended jobs' directories older than a week
    collector = JobCollector(settings.command, warmup=settings.warmup, keep_disturbed=settings.keep_disturbed)
    lock = threading.Lock()

    def receive(message: object, agent: int) -> None:
        with lock:
            collector.receive(message, agent)

    options = AgentOptions.of(settings)
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
    from fxtui.commands.program_report import print_snapshot

    print_snapshot(snapshot, output, next_command)
    return exit_status(code)


def live(settings: ProgramSettings, output: OutputSettings, listen: str = "") -> int:
    """The app on the program, run as a job (so it can be detached: D); when the app closes, the program stops
    as Ctrl+C would, its profile prints, and fxtui exits with its status."""
    from fxtui.commands.job_app import watch
    from fxtui.jobs.job_start import prune_ended, start_detached

    prune_ended()  # ended jobs' directories older than a week
    job, _ = start_detached(settings, listen)
    return watch(job, output, stop_on_quit=True)
