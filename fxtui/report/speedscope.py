"""A report as a speedscope profile (``--speedscope``): a step's time by module and node, for https://www.speedscope.app.

speedscope's own file format (``https://www.speedscope.app/file-format-schema.json``), one *sampled*
profile: each node row is one sample whose stack is the module tree from the root down to the node
(:mod:`fxtui.report.flame_stacks`) and whose weight is the node's median in seconds. speedscope's
"Left Heavy" view is then the flame graph of the module tree: a module as wide as its inclusive time;
"Sandwich" lists the nodes by their time. A distributed job has one profile per rank (speedscope's
profile menu switches between them). Open the file at https://www.speedscope.app, or with
``speedscope FILE`` (``npm install -g speedscope``).
"""

from __future__ import annotations

import json
from typing import Any

from fxtui.core.errors import FxtuiError
from fxtui.report.data import ReportData
from fxtui.report.flame_stacks import Frame, rank_stacks

#: The schema speedscope validates its files against.
SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def speedscope_profile(report: ReportData) -> dict[str, Any]:
    """The report as speedscope's JSON data: shared frames, one sampled profile per rank (or one)."""
    ranked = rank_stacks(report)
    if not any(ranked.values()):
        raise FxtuiError("this report has no timed node to draw as a flame graph")
    frames: dict[Frame, int] = {}
    profiles = []
    for rank, stacks in ranked.items():
        samples = [[frames.setdefault(frame, len(frames)) for frame in stack.frames] for stack in stacks]
        weights = [stack.weight_s for stack in stacks]
        name = report.model + (f" rank {rank}" if rank is not None and len(ranked) > 1 else "")
        profiles.append(
            {
                "type": "sampled",
                "name": f"{name}: each node's median by module",
                "unit": "seconds",
                "startValue": 0,
                "endValue": sum(weights),
                "samples": samples,
                "weights": weights,
            }
        )
    return {
        "$schema": SPEEDSCOPE_SCHEMA,
        "shared": {"frames": [_frame(frame) for frame in frames]},
        "profiles": profiles,
        "name": f"fxtui {report.model}",
        "activeProfileIndex": 0,
        "exporter": "fxtui",
    }


def speedscope_json(report: ReportData) -> str:
    """:func:`speedscope_profile` as JSON text."""
    return json.dumps(speedscope_profile(report), allow_nan=False) + "\n"


def _frame(frame: Frame) -> dict[str, Any]:
    out: dict[str, Any] = {"name": frame.name}
    if frame.file:
        out["file"] = frame.file
        out["line"] = frame.line
    return out
