"""The headless command (``fxtui TARGET --once``): profile, print the tables, measure what-ifs, export.

Imports only the engine, never Textual; torch is imported once the settings are checked,
so every mistake a user can make is reported before a model loads.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from fxtui.commands.output import say
from fxtui.commands.signals import StopOnSignal
from fxtui.core.columns import check_extra, sort_column
from fxtui.core.errors import FxtuiError, Interrupted
from fxtui.core.settings import ModelSettings, OutputSettings

if TYPE_CHECKING:
    from fxtui.report.api import Report


def check(output: OutputSettings) -> None:
    """Everything the user could have mistyped, checked before the model is loaded."""
    from fxtui.report.export import check_exports

    sort_column(output.sort)
    check_extra(output.columns)
    check_exports(output.export_paths)


def run(settings: ModelSettings, output: OutputSettings) -> int:
    """Profile as ``settings`` say and print the results as ``output`` says; returns the exit status."""
    check(output)
    if settings.malloc == "keep":
        from fxtui.measure.allocator import keep_freed_memory

        keep_freed_memory()
    from fxtui.report.export import names_stdout

    stop = StopOnSignal()
    # An export into fxtui's own stdout (--json /dev/stdout | jq) gets stdout to itself: the tables go to stderr.
    text = contextlib.redirect_stdout(sys.stderr) if names_stdout(output.export_paths) else contextlib.nullcontext()
    with stop, text:  # the whole run, printing and exports included: a signal never leaves half a result
        return _profile_and_print(settings, output, stop)


def _profile_and_print(settings: ModelSettings, output: OutputSettings, stop: StopOnSignal) -> int:
    from fxtui.measure.analysis.cpu_setup import thread_limit
    from fxtui.measure.pipeline import make_report, run_profile, session_for_target
    from fxtui.measure.whatif.measure import MAX_PAIRS
    from fxtui.measure.whatif.runner import run_what_ifs
    from fxtui.report.findings_text import aten_text, hints_text, what_ifs_text

    names = settings.what_ifs
    with thread_limit(settings.session_threads):
        session = session_for_target(
            settings.target,
            analyse=settings.analyse,
            memory=settings.memory,
            keep_disturbed=settings.keep_disturbed,
        )
        done = run_profile(session, settings.runs, settings.warmup, should_stop=stop.is_set)
        if session.samples.count == 0:
            if session.last_error is not None:
                raise FxtuiError(f"every run failed; last: {session.last_error.message}")
            signum = stop.signum or signal.SIGINT
            raise Interrupted(
                f"stopped by {signal.Signals(signum).name} before the first profiled run; nothing to report", signum
            )
        warnings: tuple[str, ...] = ()
        if done < settings.runs:
            why = "interrupted" if stop.is_set() else "stopped: too many runs failed"
            warnings = (f"{why} after {done} of {settings.runs} runs; figures are from those runs",)
        if settings.hints and not stop.is_set():
            from fxtui.measure.explain import hints_for

            session.hints = hints_for(session)
            # The Conv-BN fold is the one suggestion cheap enough to measure on every --hints.
            if any(h.what_if == "fold-bn" for h in session.hints):
                names = tuple(dict.fromkeys((*names, "fold-bn")))
        if names and not stop.is_set():
            with _ProgressLine() as progress:
                pairs = min(settings.runs, MAX_PAIRS)
                run_what_ifs(session, names, pairs=pairs, progress=progress, cancelled=stop.is_set)
        report = make_report(session, timeline="chrome_trace" in output.export_paths, warnings=warnings)
    say(report.header() + "\n")
    top = output.top or None
    if output.modules:
        say(report.module_table(top=top, path=output.spec.path))
    else:
        say(report.table(sort=output.sort, top=top, spec=output.spec, columns=output.columns))
    if settings.aten and not stop.is_set():
        from fxtui.measure.explain import explain_nodes

        shown = report.select(output.spec, output.sort, settings.aten)
        with thread_limit(settings.session_threads):
            report = dataclasses.replace(report, aten=explain_nodes(session, [r.name for r in shown]))
        say("\n" + aten_text(report.aten, shown))
    if settings.hints and not stop.is_set():
        say("\n" + hints_text(report.hints, report.what_ifs))
    if report.what_ifs:
        say("\n" + what_ifs_text(report.what_ifs, top=min(output.top, 10) if output.top else None))
    write_exports(report, output.export_paths)
    return 0


def write_exports(report: Report, paths: Mapping[str, str]) -> None:
    """Write every export asked for and say where each went, the ones written before a failure too."""
    from fxtui.report.export import ExportError, export

    try:
        written = export(report, paths)
    except ExportError as e:
        for path in e.written:
            say(f"wrote {path}")
        raise
    for path in written:
        say(f"wrote {path}")


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
