"""The header's lines on a program's step as ops, its own Python and waiting for a CPU (``fxtui run``).

The ``in ops`` shares are medians of per-step values (:mod:`fxtui.jobs.step_wait`), printed with their p25–p75.
The ``split`` is one typical step whose three parts add up (:mod:`fxtui.core.step_split`): the same figures here,
in the JSON and in the app's ``T`` panel (:func:`split_text`). A step that waited for a CPU is never explained as
the program's Python.
"""

from __future__ import annotations

from fxtui.core.nodes import Spread
from fxtui.core.program_run import STEP_PHASES, KindSummary
from fxtui.core.step_split import whole_percents
from fxtui.core.step_waiting import StepWaiting
from fxtui.core.units import format_seconds


def pct_range(spread: Spread | None) -> str:
    """``61% (55–70%)``: a share and its p25–p75."""
    if spread is None:
        return "–"
    return f"{100 * spread.median:.0f}% ({100 * spread.q25:.0f}–{100 * spread.q75:.0f}%)"


def split_text(waiting: StepWaiting | None) -> str:
    """``ops 23%, waiting for a CPU 70% (…), the program's Python 7% of the median step``: three parts that add up
    to 100; ``""`` where a part was not measured."""
    split = waiting.split if waiting is not None and waiting.known else None
    if waiting is None or split is None:
        return ""
    ops, _waiting, python = whole_percents(split)
    less = " (less the time they waited)" if waiting.ops_less_wait else ""
    return f"ops {ops}%{less}, {waiting.waiting_text()}, the program's Python {python}% of the median step"


def split_lines(lead: KindSummary) -> list[str]:
    """``split`` (ops, waiting for a CPU, the program's Python) and, under load, what the node figures are."""
    waiting = lead.waiting
    if waiting is None or not waiting.known:
        return []
    said = split_text(waiting)
    if said:
        less = waiting.ops_less_wait  # then the ops say it themselves
        lines = [f"split      {said} (the three add up{'' if less else '; ops is the fidelity'})"]
    else:  # the ops are not known yet (no sampled step counted): the wait alone
        lines = [f"split      {waiting.waiting_text() or 'waiting for a CPU –'} of a step (median of per-step shares)"]
    if figures := waiting.figures_text():
        lines.append(f"waited     {figures}")
    return lines


def in_ops_line(lead: KindSummary) -> list[str]:
    """How much of each phase the sampled steps' ops account for, each the median of per-step ratios."""
    waiting = lead.waiting
    if waiting is None or not waiting.in_ops or not lead.phase_median_s:
        return []
    least = 0.01 * (lead.step_median_s or 0.0)  # a phase under 1% of the step is left out: its share is noise
    shares = [
        f"{phase} {pct_range(spread)}"
        for phase, spread, phase_s in zip(STEP_PHASES, waiting.in_ops, lead.phase_median_s, strict=False)
        if spread is not None and phase_s > least and phase_s > 0
    ]
    if not shares:
        return []
    return [
        f"in ops     {', '.join(shares)} of each phase (each sampled step's ops in it ÷ the phase's unsampled "
        "median); the rest is Python between ops, or waiting"
    ]


def unattributed_line(waiting: StepWaiting | None, step_s: float | None) -> str | None:
    """What no node accounts for, split into waiting for a CPU and the program's own Python (the split's shares of
    the unsampled median); None where the wait was not measured (the plain line then says it)."""
    if waiting is None or not waiting.known or not step_s or waiting.python_share is None:
        return None
    wait_s = (waiting.waiting_share or 0.0) * step_s
    python_s = waiting.python_share * step_s
    return (
        f"unattributed {format_seconds(wait_s + python_s)} of the unsampled step: {format_seconds(wait_s)} waiting "
        f"for a CPU, {format_seconds(python_s)} the program's own Python between ops (its loop, data loading code, "
        "logging, waits such as .item()), not charged to any node"
    )


def waiting_json(waiting: StepWaiting | None) -> dict[str, object]:
    """A program's split at the top of its JSON file (the kind's full figures are under ``steps.kinds``)."""
    if waiting is None or not waiting.known:
        return {}
    split = waiting.split
    return {
        "waiting_line": waiting.waiting_text() or None,
        "split_line": split_text(waiting) or None,
        "waiting_share": waiting.waiting_share,
        "python_share": waiting.python_share,
        "ops_share": split.ops if split is not None else waiting.ops_share,
        "waiting_measured_share": waiting.measured_waiting_share,
        "waited_line": waiting.figures_text() or None,
    }
