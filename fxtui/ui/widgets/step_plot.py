"""A program's recent steps as stacked bars: each step's data, forward, backward, optimizer and other time.

Shown under the table while ``fxtui run`` profiles a program: one column per step (the newest
on the right), its height the step's wall time, split by phase from the bottom up, so a step
that waited on its DataLoader or a slow optimizer stands out at a glance; sampled steps (timed
per node, so a little slower) are marked under their column. The title line gives each phase's
median and share.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.reactive import var
from textual.widget import Widget

from fxtui.core.program_run import STEP_PHASES, StepSummary
from fxtui.core.snapshot import Snapshot
from fxtui.core.units import format_seconds

_BLOCKS = " ▁▂▃▄▅▆▇█"
#: What each phase is called on the title line, and the legend letter marking it.
SHORT = {"data": "data", "forward": "fwd", "backward": "bwd", "optimizer": "opt", "other": "other"}


def stacked_columns(steps: Sequence[Sequence[float]], width: int, height: int) -> list[list[int]]:
    """For each of the last ``width`` steps, the eighths of ``height`` rows each phase fills, bottom phase first.

    Heights are scaled to the tallest step shown; a phase that took any time fills at least one eighth.
    """
    shown = list(steps)[-width:] if width > 0 else []
    walls = sorted(sum(s) for s in shown)
    # Scaled to the 95th percentile, not the tallest: one slow step (a checkpoint, an epoch's end) would
    # flatten every other one; a taller step is drawn to the top.
    tallest = walls[int(0.95 * (len(walls) - 1))] if walls else 1.0
    tallest = tallest or 1.0
    cells = height * 8
    out = []
    for step in shown:
        filled = []
        left = cells
        for seconds in step:
            eighths = min(left, max(round(seconds / tallest * cells), 1) if seconds > 0 else 0)
            filled.append(eighths)
            left -= eighths
        out.append(filled)
    return out


def phase_rows(columns: Sequence[Sequence[int]], height: int) -> list[list[tuple[str, int]]]:
    """The plot's rows, top first: per column, its block character and the phase (index) it shows there."""
    rows: list[list[tuple[str, int]]] = []
    for row in range(height):
        floor = (height - 1 - row) * 8
        line = []
        for filled in columns:
            top, phase, char = 0, -1, " "
            for i, eighths in enumerate(filled):
                bottom, top = top, top + eighths
                if bottom < floor + 8 and top > floor:  # this phase reaches into the row: the highest one wins
                    phase = i
                    char = _BLOCKS[min(max(top - floor, 0), 8)]
            line.append((char, phase))
        rows.append(line)
    return rows


class StepPlot(Widget):
    """The latest steps of a program, stacked by phase; hidden unless the snapshot is a program's."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {f"step-plot--{p}" for p in STEP_PHASES} | {"step-plot--sampled"}
    DEFAULT_CSS = """
    StepPlot { height: 7; padding: 0 1; display: none; }
    StepPlot > .step-plot--data { color: $warning; }
    StepPlot > .step-plot--forward { color: $primary; }
    StepPlot > .step-plot--backward { color: $accent; }
    StepPlot > .step-plot--optimizer { color: $success; }
    StepPlot > .step-plot--other { color: $text-muted; }
    StepPlot > .step-plot--sampled { color: $text-muted; }
    """

    snapshot: var[Snapshot | None] = var(None, always_update=True)
    """The latest snapshot (bound to the main screen's)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._steps: StepSummary | None = None
        self.rows: list[str] = []
        """The plot's rows as drawn last (top first), for tests."""

    def watch_snapshot(self, snapshot: Snapshot | None) -> None:
        steps = snapshot.steps if snapshot is not None else None
        self.display = steps is not None
        if steps is not self._steps:
            self._steps = steps
            self.refresh()

    def render(self) -> Text:
        steps = self._steps
        out = Text(no_wrap=True, overflow="ellipsis")
        if steps is None or not steps.recent_steps:
            out.append("steps: none yet (warm-up)", style="dim")
            self.rows = []
            return out
        out.append(_title(steps) + "\n")
        width = max(self.size.width - 2, 1)
        height = max(self.size.height - 3, 1)
        recent = [steps.recent_step(i) for i in range(steps.recent_steps)]
        columns = stacked_columns(recent, width, height)
        styles = [self.get_component_rich_style(f"step-plot--{p}") for p in STEP_PHASES]
        rows = phase_rows(columns, height)
        self.rows = ["".join(c for c, _ in row) for row in rows]
        for row in rows:
            for char, phase in row:
                out.append(char, style=styles[phase] if phase >= 0 else "")
            out.append("\n")
        sampled = steps.recent_sampled[-len(columns) :]
        marks = "".join("·" if s else " " for s in sampled)
        out.append(marks, style=self.get_component_rich_style("step-plot--sampled"))
        return out


def _title(steps: StepSummary) -> str:
    """``step 6.4 ms · data 3% fwd 37% bwd 46% opt 9% other 4% · · sampled``."""
    shares = steps.shares()
    split = " ".join(f"{SHORT[p]} {100 * shares.get(p, 0.0):.0f}%" for p in STEP_PHASES)
    return f"step {format_seconds(steps.step_median_s)} · {split} · (· sampled)"
