"""A report as folded stacks (``--folded``): the text ``flamegraph.pl`` turns into an SVG and speedscope opens.

One line per node: its frames from the root down, joined by ``;`` — the model (or script), each module
of its path (``layer1.0 (Block)``), the node — then a space and its weight: the node's median in
**nanoseconds** (the format's weights are whole numbers). ``flamegraph.pl --countname ns run.folded >
run.svg`` draws the module tree as a flame graph, each module as wide as its inclusive time. In a
distributed job each rank's stacks start with a ``rank N`` frame.
"""

from __future__ import annotations

from fxtui.core.errors import FxtuiError
from fxtui.report.data import ReportData
from fxtui.report.flame_stacks import rank_stacks


def folded_text(report: ReportData) -> str:
    """One ``frame;frame;…;node weight_ns`` line per timed node (nodes under a nanosecond are left out)."""
    ranked = rank_stacks(report)
    lines = []
    for rank, stacks in ranked.items():
        prefix = [f"rank {rank}"] if rank is not None and len(ranked) > 1 else []
        for stack in stacks:
            weight = round(stack.weight_s * 1e9)
            if weight > 0:
                lines.append(";".join(_name(n) for n in (*prefix, *(f.name for f in stack.frames))) + f" {weight}")
    if not lines:
        raise FxtuiError("this report has no timed node to draw as a flame graph")
    return "\n".join(lines) + "\n"


def _name(name: str) -> str:
    """A frame's name as the format allows: no ``;`` (it separates frames) and on one line."""
    return " ".join(name.replace(";", ",").split()) or "?"
