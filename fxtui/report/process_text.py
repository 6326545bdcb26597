"""The header's lines on the processes of a job without collectives (hogwild workers and their parent)."""

from __future__ import annotations

from fxtui.core.program_run import KindSummary, RankSummary
from fxtui.core.units import format_seconds


def process_lines(ranks: RankSummary) -> list[str]:
    """A line per process: its name and pid, its steps, pace and arithmetic; which one the rows below are of. (The
    processes of such a job are one program's on one machine: no host is named.)"""
    lines = []
    for r in ranks.ranks:
        name = f"{r.role or 'process'}, pid {r.pid}" if r.pid else r.role or f"process {r.rank}"
        steps = f"{r.steps} {KindSummary(r.kind, r.steps).name}, " if r.kind else ""
        lines.append(
            f"process    {name}: {steps}step {format_seconds(r.step_median_s)}, "
            f"forward+backward ops {format_seconds(r.compute_s)}"
            + ("   (the rows below)" if r.rank == ranks.shown else "")
        )
    return lines
