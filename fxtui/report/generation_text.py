"""The header of a program whose figures are of its ``generate()`` calls: every line on the same calls and units.

A prefill node's time is per call and a decode node's per token, so the figures are counted in
*the prompt and one token* (:mod:`fxtui.jobs.generation_figures`): the prefill and decode lines
give each phase's own fidelity, the rows their share of their own phase, and no line divides Σ
node medians by a whole call. What a few calls cannot tell is said once.
"""

from __future__ import annotations

from fxtui.core.program_run import STEP_PHASES, KindSummary, StepSummary
from fxtui.core.units import format_seconds
from fxtui.report.data import ReportData


def generation_lines(report: ReportData, steps: StepSummary) -> list[str]:
    """The lines after the kind's: the calls' phases, how the rows read, the generation's own lines."""
    assert report.generation is not None
    total = sum(steps.phase_median_s) or 1e-12
    split = ", ".join(
        f"{phase} {format_seconds(m)} ({100 * m / total:.0f}%)"
        for phase, m in zip(STEP_PHASES, steps.phase_median_s, strict=False)
        if m > 0
    )
    of = "unsampled calls" if steps.step_median_s is not None else "sampled calls: none ran unsampled"
    lines = [
        f"phases     {split} of a call (medians of the {of}): forward is the model's, other generate()'s own loop",
        "rows       a prefill node's time is per call, a decode node's per token; % of phase: of the profiled time to "
        "first token or mean decode step (the uninstrumented ones' while no profiled call counts)",
    ]
    ranks = report.rank_summary
    if ranks is not None and ranks.straggler():
        lines.append(f"straggler  {ranks.straggler()}")
    return lines + report.generation.lines(report.phases)


def unfigured_text(steps: StepSummary) -> str:
    """Said once where every sampled step noted its nodes' inputs (slower, so no sampled median): why it has none."""
    if not steps.sampled or steps.sampled_median_s is not None:
        return ""
    name = KindSummary(steps.kind, steps.sampled).name
    if steps.sampled == 1:
        return (
            f"; the sampled {name} also noted its nodes' inputs and source lines (slower), so its ops are timed but "
            "its wall time is no figure: no sampled median, no overhead"
        )
    return (
        f"; the sampled {name} also noted their nodes' inputs and source lines (slower), so their ops are timed but "
        "their wall times are no figure: no sampled median, no overhead"
    )
