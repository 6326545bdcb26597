"""The headless header of a program profiled as it ran (``fxtui run``): what ran, its steps and their phases."""

from __future__ import annotations

import shlex
from collections.abc import Callable

from fxtui.core.nodes import Spread
from fxtui.core.program_run import ALIKE, STEP_PHASES, KindSummary, StepSummary, gone_ranks, holds_text, overcount_doubt
from fxtui.core.units import format_range, format_ratio, format_seconds
from fxtui.report.aside_lines import aside_lines
from fxtui.report.data import ReportData
from fxtui.report.generation_text import generation_lines, unfigured_text
from fxtui.report.process_text import process_lines
from fxtui.report.step_shapes_text import step_shapes_lines
from fxtui.report.waiting_text import in_ops_line, split_lines

#: Page faults a step from which the header names them (4 MiB mapped afresh every step).
FAULTS_HINT = 1000


def program_lines(report: ReportData) -> list[str]:
    """The lines that say what ran and how its steps went, in place of a model's: the kind of step the figures are
    of first (training when there is any), then a line for every other kind."""
    program, steps = report.program, report.steps
    assert program is not None
    status = program.status_text() if program.exit_code is not None or not program.running else "running"
    lines = [f"program    {shlex.join(program.command)}   {status}   threads {report.threads}"]
    if steps is None or not (steps.steps or steps.warmup):
        called = program.note or "no module was called"
        lines.append(f"steps      none: {called}" if "module" in called else f"steps      none yet: {called}")
        return lines + ([f"disturbed  {program.disturbance}"] if program.disturbance else [])
    lines.append(f"{steps.kind:<10} {_kind_text(steps)}")
    if not steps.steps:
        return lines + _other_kinds(steps) + _warnings(report)
    if steps.kind == "generate" and report.generation is not None:
        return lines + generation_lines(report, steps) + _other_kinds(steps) + _warnings(report)
    sp = report.spreads
    lines.append(
        f"step       {format_seconds(report.eager_median_s)}{_range(sp.eager, format_seconds)} unsampled median   "
        f"{format_seconds(report.run_median_s)}{_range(sp.run, format_seconds)} sampled median"
    )
    total = sum(steps.phase_median_s) or 1e-12
    split = ", ".join(
        f"{phase} {format_seconds(m)} ({100 * m / total:.0f}%)"
        for phase, m in zip(STEP_PHASES, steps.phase_median_s, strict=False)
    )
    # With no unsampled step yet (a program of two long steps), the phases are the sampled steps' own: said so.
    of = "unsampled steps" if steps.step_median_s is not None else "sampled steps: none ran unsampled"
    lines.append(f"phases     {split} (medians of the {of})")
    lines.append(
        f"fidelity   {format_ratio(report.fidelity)}{_range(sp.fidelity, format_ratio)} (a sampled step's ops ÷ the "
        f"unsampled median)   overhead {format_ratio(report.overhead)}{_range(sp.overhead, format_ratio)} (sampled ÷ "
        "unsampled)"
    )
    lead = next((k for k in steps.kinds if k.kind == steps.kind), None)
    measured = lead is not None and lead.waiting is not None and lead.waiting.in_ops
    lines += (in_ops_line(lead) + split_lines(lead)) if lead is not None and measured else _in_ops(steps)
    if (share := steps.sampling_share) is not None:
        lines.append(
            f"cost       sampling took about {100 * share:.1f}% of the steps' time "
            "(the sampled steps' extra over an unsampled step, and their ops resolved after each)"
        )
    if steps.faults_median is not None and steps.faults_median >= FAULTS_HINT:
        lines.append(
            f"faults     {steps.faults_median:,.0f} minor page faults a sampled step (median): memory the program "
            "frees and maps afresh is faulted in 4 KiB at a time, inside the ops that fill it (their time includes "
            "it); fxtui run --keep-freed-memory runs it with glibc keeping freed memory"
        )
    ranks = report.rank_summary
    if ranks is not None and not ranks.collectives:
        lines += process_lines(ranks)
    elif ranks is not None:
        for r in ranks.ranks:
            lines.append(
                f"rank {r.rank:<5} {(r.where or r.host) + ': ' if r.where or r.host else ''}"
                f"step {format_seconds(r.step_median_s)}, "
                + (
                    f"forward+backward ops {format_seconds(r.compute_s)}, "
                    f"waiting in backward {format_seconds(r.comm_s)}"
                    if r.ops_timed
                    else "ops not timed (outside the sample of ranks compared)"
                )
                + ("   (the rows below)" if r.rank == ranks.shown else "")
            )
        if straggler := ranks.straggler():
            lines.append(f"straggler  {straggler}")
        if gone := gone_ranks(ranks.ranks):
            lines.append(f"gone       {gone}")
    if report.generation is not None:  # its generate() calls: each a step, split into prefill and decode
        lines += report.generation.lines(report.phases)
    return lines + _other_kinds(steps) + _warnings(report)


def _kind_text(steps: StepSummary) -> str:
    """``10 training steps after 2 warm-up, 5 of them sampled …; each holds 1 forward, 1 backward, AdamW.step()``."""
    name = KindSummary(steps.kind, steps.steps).name
    what = {"eval": " (model calls without a backward)", "generate": ""}.get(steps.kind, "")
    if not steps.steps:
        return f"{steps.warmup} {KindSummary(steps.kind, steps.warmup).name}{what} so far, all warm-up: figures follow"
    text = (
        f"{steps.steps} {name}{what} after {steps.warmup} warm-up, {steps.sampled} of them sampled (every ATen op "
        "timed); ranges are the steps' p25–p75"
    )
    if steps.kind == "train" and steps.holds:
        text += f"; each holds {holds_text(steps.holds)}"
    return text + unfigured_text(steps)


def _in_ops(steps: StepSummary) -> list[str]:
    """How much of each phase the table's ops account for: where fidelity is low, which phase is Python."""
    lead = next((k for k in steps.kinds if k.kind == steps.kind), None)
    if lead is None or not lead.phase_nodes_s or not lead.phase_median_s:
        return []
    least = 0.01 * (lead.step_median_s or 0.0)  # a phase under 1% of the step is left out: its share is noise
    shares = [
        f"{phase} {100 * ops / phase_s:.0f}%"
        for phase, ops, phase_s in zip(STEP_PHASES, lead.phase_nodes_s, lead.phase_median_s, strict=True)
        if phase_s > least and phase_s > 0
    ]
    if not shares:
        return []
    return [
        f"in ops     {', '.join(shares)} of each phase is in the table's ops (Σ node medians ÷ the phase's "
        "unsampled median); the rest is Python between ops"
    ]


def _other_kinds(steps: StepSummary) -> list[str]:
    """A line for each kind of step the figures are not of: how many, how long, how far to trust them."""
    lines = []
    for kind in steps.kinds:
        if kind.kind == steps.kind:
            continue
        text = f"{kind.kind:<10} {kind.steps} {kind.name} after {kind.warmup} warm-up, {kind.sampled} sampled"
        if kind.step_median_s is not None:
            text += f": {format_seconds(kind.step_median_s)} median"
        if kind.fidelity is not None:
            text += f", fidelity {format_ratio(kind.fidelity)}"
        lines.append(text + f" (their nodes: --kind {kind.kind})")
        doubt = overcount_doubt(kind.kind, kind.fidelity, kind.sampled)
        if doubt:
            lines.append(f"caution    {doubt}")
    return lines


def _confidence(report: ReportData) -> list[str]:
    """One sentence where the steps cannot be read with confidence: what fxtui took as a step, and why it doubts."""
    steps = report.steps
    if steps is None or not steps.steps:
        return []
    name = KindSummary(steps.kind, 2).name
    if steps.holds_share < ALIKE:
        return [
            f"caution    the {name} are not alike: {100 * steps.holds_share:.0f}% hold {holds_text(steps.holds)}, the "
            "rest hold other calls; their medians mix different work"
        ]
    doubt = overcount_doubt(steps.kind, report.fidelity, steps.sampled)
    return [f"caution    {doubt}"] if doubt else []


def _warnings(report: ReportData) -> list[str]:
    program = report.program
    assert program is not None
    lines = _confidence(report)
    if report.steps is not None:
        lines += aside_lines(report.steps.kinds)
    if program.dropped:
        lines.append(f"warning    {program.dropped} step records were dropped: the collector fell behind the program")
    if program.note:
        lines.append(f"warning    {program.note}")
    if program.disturbance:
        lines.append(f"disturbed  {program.disturbance}")
    if report.shapes:
        lines.append(
            f"shapes     {len(report.shapes)} node(s) ran at several output shapes (a last smaller batch …): each row "
            "shows its most frequent shape; --json lists the others"
        )
    lines += step_shapes_lines(report.snapshot.step_shapes, {r.name: r.stats.median_s for r in report.rows})
    return lines


def _range(spread: Spread | None, fmt: Callable[[float], str]) -> str:
    return format_range(spread.q25, spread.q75, fmt) if spread else ""
