"""The headless command (``fxtui TARGET --once``): profile, print the tables, measure what-ifs, export.

Imports only the engine, never Textual; torch is imported once the arguments are checked,
so every mistake a user can make is reported before a model loads.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from fxtui.core.errors import FxtuiError
from fxtui.core.filters import FilterSpec
from fxtui.core.settings import Target
from fxtui.output import say
from fxtui.signals import StopOnSignal


def what_if_names(args: argparse.Namespace) -> tuple[str, ...]:
    """The what-ifs asked for: ``--what-if`` and every thread count of ``--threads`` after the first."""
    from fxtui.core.what_ifs import parse_what_ifs

    names = parse_what_ifs(args.what_if) if args.what_if else ()
    extra = tuple(f"threads={n}" for n in (args.threads or ())[1:])
    return tuple(dict.fromkeys((*names, *extra)))


def run(args: argparse.Namespace, spec: FilterSpec, target: Target) -> int:
    """Profile ``target`` as ``args`` say and print the results; returns the exit status."""
    from fxtui.engine.export import check_writable
    from fxtui.engine.render import EXTRA_COLUMNS, MEMORY_COLUMNS
    from fxtui.engine.report import sort_key

    # Everything the user could have mistyped is checked before the model is loaded.
    sort_key(args.sort)
    names = what_if_names(args)
    columns = tuple(c.strip() for c in (args.columns or "").split(",") if c.strip())
    unknown = [c for c in columns if c not in EXTRA_COLUMNS]
    if unknown:
        raise FxtuiError(f"--columns: no column {unknown[0]!r}; choose from {', '.join(EXTRA_COLUMNS)}")
    for path in (args.json, args.csv, args.chrome_trace):
        if path:
            check_writable(path)
    # A memory column or sort asks for the memory pass as --memory does.
    args.memory = args.memory or bool({*columns, args.sort} & {*MEMORY_COLUMNS, "saved"})
    if args.memory:
        wanted = (*MEMORY_COLUMNS, "saved") if args.train else MEMORY_COLUMNS
        columns += tuple(c for c in wanted if c not in columns)

    # FLOPs, bytes, source lines and the machine's peaks cost about a second more; only
    # when the output shows them.
    analyse = bool(args.json or args.csv or args.hints or set(columns) - {"mean", "min", "max", "iqr"})
    if args.malloc == "keep":
        from fxtui.engine.allocator import keep_freed_memory

        keep_freed_memory()
    stop = StopOnSignal()
    with stop:  # the whole run, printing and exports included: a signal never leaves half a result
        return _profile_and_print(args, spec, target, columns, names, analyse, stop)


def _profile_and_print(
    args: argparse.Namespace,
    spec: FilterSpec,
    target: Target,
    columns: tuple[str, ...],
    names: tuple[str, ...],
    analyse: bool,
    stop: StopOnSignal,
) -> int:
    from fxtui.core.what_if_text import what_ifs_text
    from fxtui.engine.export import export
    from fxtui.engine.pipeline import make_report, run_profile, session_for_target
    from fxtui.engine.render import aten_text, hints_text
    from fxtui.engine.session import thread_limit
    from fxtui.engine.whatif.measure import MAX_PAIRS
    from fxtui.engine.whatif.run import run_what_ifs

    with thread_limit(args.threads[0] if args.threads else None):
        session = session_for_target(target, analyse=analyse, memory=args.memory, keep_disturbed=args.keep_disturbed)
        done = run_profile(session, args.runs, args.warmup, should_stop=stop.is_set)
        if session.samples.count == 0:
            if session.last_error is not None:
                raise FxtuiError(f"every run failed; last: {session.last_error.message}")
            raise FxtuiError("interrupted before the first profiled run; nothing to report")
        warnings: tuple[str, ...] = ()
        if done < args.runs:
            why = "interrupted" if stop.is_set() else "stopped: too many runs failed"
            warnings = (f"{why} after {done} of {args.runs} runs; figures are from those runs",)
        if args.hints and not stop.is_set():
            from fxtui.engine.explain import hints_for

            session.hints = hints_for(session)
            # The Conv-BN fold is the one suggestion cheap enough to measure on every --hints.
            if any(h.what_if == "fold-bn" for h in session.hints):
                names = tuple(dict.fromkeys((*names, "fold-bn")))
        if names and not stop.is_set():
            with _ProgressLine() as progress:
                run_what_ifs(session, names, pairs=min(args.runs, MAX_PAIRS), progress=progress, cancelled=stop.is_set)
        report = make_report(session, timeline=bool(args.chrome_trace), warnings=warnings)
    say(report.header() + "\n")
    if args.modules:
        say(report.module_table(top=args.top or None, path=spec.path))
    else:
        say(report.table(sort=args.sort, top=args.top or None, spec=spec, columns=columns))
    if args.aten and not stop.is_set():
        from fxtui.engine.explain import explain_nodes

        shown = report.select(spec, args.sort, args.aten)
        with thread_limit(args.threads[0] if args.threads else None):
            report = dataclasses.replace(report, aten=explain_nodes(session, [r.name for r in shown]))
        say("\n" + aten_text(report.aten, shown))
    if args.hints and not stop.is_set():
        say("\n" + hints_text(report.hints, report.what_ifs))
    if report.what_ifs:
        say("\n" + what_ifs_text(report.what_ifs, top=min(args.top, 10) if args.top else None))
    for path in export(report, json_path=args.json, csv_path=args.csv, trace_path=args.chrome_trace):
        say(f"wrote {path}")
    return 0


class _ProgressLine:
    """What the what-ifs are doing, on one line of stderr rewritten in place (only on a terminal)."""

    def __init__(self) -> None:
        self.shown = sys.stderr.isatty()

    def __call__(self, message: str) -> None:
        if self.shown:
            sys.stderr.write(f"\r\x1b[K{message}")
            sys.stderr.flush()

    def __enter__(self) -> _ProgressLine:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
