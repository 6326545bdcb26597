"""The headless command (``fxtui MODEL --once``): profile, measure what was asked, then print and export.

Imports only the engine, never Textual; torch is imported once the settings are checked,
so every mistake a user can make is reported before a model loads. Everything is measured
before anything prints: on a terminal a progress line on stderr says what is being done
meanwhile, and is erased before the results.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from fxtui.commands.next_command import model_next_command
from fxtui.commands.output import say, table_width, write_exports
from fxtui.commands.progress import ProgressLine, eta_text
from fxtui.commands.signals import StopOnSignal
from fxtui.core.errors import FxtuiError, Interrupted
from fxtui.core.settings import ModelSettings, OutputSettings

if TYPE_CHECKING:
    from fxtui.core.findings import WhatIf
    from fxtui.measure.session import Session
    from fxtui.report.api import Report


def run(settings: ModelSettings, output: OutputSettings, argv: Sequence[str] = ()) -> int:
    """Profile as ``settings`` say and print the results as ``output`` says; returns the exit status.

    ``argv`` is the command line as typed, for the next command the table suggests.
    """
    if settings.malloc == "keep":
        from fxtui.measure.allocator import keep_freed_memory

        keep_freed_memory()
    from fxtui.report.export import names_stdout

    stop = StopOnSignal()
    # An export into fxtui's own stdout (--json /dev/stdout | jq) gets stdout to itself: the tables go to stderr.
    text = contextlib.redirect_stdout(sys.stderr) if names_stdout(output.export_paths) else contextlib.nullcontext()
    with stop, text:  # the whole run, printing and exports included: a signal never leaves half a result
        with ProgressLine() as progress:
            report, cut_short = _measure(settings, output, stop, progress)
        _print(report, settings, output, argv, cut_short)
        return 0


def _measure(
    settings: ModelSettings, output: OutputSettings, stop: StopOnSignal, progress: ProgressLine
) -> tuple[Report, tuple[str, ...]]:
    """Everything asked for, measured: the report, and what a signal left unmeasured (said in the header)."""
    from fxtui.measure.analysis.cpu_setup import thread_limit
    from fxtui.measure.pipeline import make_report, run_profile, session_for_target
    from fxtui.measure.whatif.measure import MAX_PAIRS
    from fxtui.measure.whatif.runner import run_what_ifs

    names = settings.what_ifs
    skipped: list[str] = []
    with thread_limit(settings.session_threads):
        session = session_for_target(
            settings.target,
            progress=lambda state, message: progress.stage(message),
            analyse=settings.analyse,
            memory=settings.memory,
            keep_disturbed=settings.keep_disturbed,
        )
        progress.stage(f"warming up: {settings.warmup} run{'s' if settings.warmup != 1 else ''}")
        done = run_profile(
            session,
            settings.runs,
            settings.warmup,
            should_stop=stop.is_set,
            on_run=_RunProgress(progress, settings.runs, stop),
        )
        if session.samples.count == 0:
            if session.last_error is not None:
                raise FxtuiError(f"every run failed; last: {session.last_error.message}")
            signum = stop.signum or signal.SIGINT
            raise Interrupted(
                f"stopped by {signal.Signals(signum).name} before the first profiled run; nothing to report", signum
            )
        warnings: list[str] = []
        if done < settings.runs and not stop.is_set():
            warnings.append(f"stopped: too many runs failed after {done} of {settings.runs} runs; "
                            "figures are from those runs")  # fmt: skip
        if settings.hints:
            if stop.is_set():
                skipped.append("--hints")
            else:
                from fxtui.measure.explain import hints_for

                progress.step("finding hints")
                session.hints = hints_for(session)
                # The Conv-BN fold is the one suggestion cheap enough to measure on every --hints.
                if any(h.what_if == "fold-bn" for h in session.hints):
                    names = tuple(dict.fromkeys((*names, "fold-bn")))
        if names:
            measured: tuple[WhatIf, ...] = ()
            if not stop.is_set():
                pairs = min(settings.runs, MAX_PAIRS)
                measured = run_what_ifs(session, names, pairs=pairs, progress=progress.step, cancelled=stop.is_set)
            missed = [n for n in names if n not in {w.name for w in measured}]
            if missed:
                skipped.append(f"what-if {', '.join(missed)}")
        # Decided once: the aten breakdown is three runs of the top nodes, not worth a second signal.
        explain = bool(settings.aten) and not stop.is_set()
        if settings.aten and not explain:
            skipped.append("--aten")
        if stop.is_set():
            warnings.insert(0, _interrupted(stop, session, done, settings.runs, skipped))
        progress.step("making the report")
        report = make_report(session, timeline="chrome_trace" in output.export_paths, warnings=tuple(warnings))
        if explain:
            from fxtui.measure.explain import explain_nodes

            progress.step("finding the aten operators of the top nodes")
            shown = report.select(output.spec, output.sort, settings.aten)
            report = report.replace(aten=explain_nodes(session, [r.name for r in shown]))
    return report, tuple(skipped)


def _interrupted(stop: StopOnSignal, session: Session, done: int, runs: int, skipped: Sequence[str]) -> str:
    """The header's sentence on a profile a signal cut short: what it kept, and what it left unmeasured."""
    name = signal.Signals(stop.signum or signal.SIGINT).name
    left_out = session.disturbed_steps if not session.keep_disturbed else 0
    if done < runs:
        kept = f"after {done} of {runs} runs; figures are from those runs"
    elif left_out and session.quiet_steps < runs:
        # The runs asked for were made, but disturbed ones are being replaced: fewer quiet runs than asked.
        kept = (
            f"after {done} runs, {session.quiet_steps} of the {runs} quiet ones asked for "
            f"({left_out} disturbed left out while they were replaced)"
        )
    else:
        kept = f"after all {runs} runs"
    rest = f"; not measured: {', '.join(skipped)}" if skipped else ""
    return f"interrupted by {name} {kept}{rest}"


class _RunProgress:
    """``run 12 of 30, about 8 s left`` on the progress line after the warm-up and each profiled run (drawn between
    runs: the progress line's own thread sleeps from the first)."""

    def __init__(self, progress: ProgressLine, runs: int, stop: StopOnSignal) -> None:
        self.progress, self.runs, self.stop = progress, runs, stop
        self.started: float | None = None

    def __call__(self, done: int, quiet: int, disturbed: int) -> None:
        now = time.monotonic()
        if self.started is None:  # warmed up: the pace is of the timed runs only
            self.started = now
        if self.stop.is_set():
            self.progress.step(f"stopping after run {done} (again: stop at once)")
            return
        if done < self.runs:  # the run being made, and when the last should end
            eta = eta_text(now - self.started, done, self.runs)
            self.progress.step(f"run {done + 1} of {self.runs}" + (f", {eta}" if eta else ""))
            return
        if done == self.runs:
            self.progress.step(f"run {done} of {self.runs}")
            return
        # More runs than asked: disturbed ones are being replaced by quiet ones.
        self.progress.step(
            f"run {done}: replacing disturbed runs ({quiet} of {self.runs} quiet; {disturbed} disturbed left out, "
            f"at most {2 * self.runs} runs)"
        )


def _print(
    report: Report, settings: ModelSettings, output: OutputSettings, argv: Sequence[str], skipped: Sequence[str]
) -> None:
    from fxtui.report.findings_text import aten_text, hints_text, what_ifs_text
    from fxtui.report.text import header, module_table, table

    width = table_width()
    say(header(report, width=width) + "\n")
    top = output.top or None
    if output.modules:
        say(module_table(report, top=top, path=output.spec.path, width=width))
    else:
        say(table(report, sort=output.sort, top=top, spec=output.spec, columns=output.columns, width=width))
    if report.aten:
        shown = report.select(output.spec, output.sort, settings.aten)
        say("\n" + aten_text(report.aten, shown, width=width))
    if settings.hints and "--hints" not in skipped:
        say("\n" + hints_text(report.hints, report.what_ifs, width=width))
    if report.what_ifs:
        say("\n" + what_ifs_text(report.what_ifs, top=min(output.top, 10) if output.top else None, width=width))
    write_exports(report, output.export_paths)
    suggestion = model_next_command(argv, settings, output, report)
    if suggestion is not None:
        say("\n" + suggestion.text(width))
