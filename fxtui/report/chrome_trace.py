"""A report as a Chrome trace (``--chrome-trace``): one representative run as nested spans, for Perfetto or
``chrome://tracing``.

The run is the one whose wall time was the median of a few (``timeline``); a program's is the latest
sampled step of each rank, on one clock. Spans nest as the module tree does (module → node), a training
step's phases around its modules. A step of more ops than its agent sends raw is drawn from its first ones, and its
process's name says so.
"""

from __future__ import annotations

import json
from typing import Any

from fxtui.core.errors import FxtuiError
from fxtui.core.nodes import module_ancestors
from fxtui.report.data import ReportData


def chrome_trace(report: ReportData) -> dict[str, Any]:
    """One representative run as nested spans (module → node) in the Chrome trace event format.

    A distributed job's trace has one process per rank (its latest sampled step), on one clock, so
    Perfetto shows the ranks stacked and their waits line up.
    """
    timelines = report.timelines or ({0: report.timeline} if report.timeline else {})
    if not any(timelines.values()):
        raise FxtuiError("this report has no recorded run to export as a trace")
    origin = min(start for spans in timelines.values() for _, start, _ in spans)
    events: list[dict[str, Any]] = []
    for pid, (rank, spans) in enumerate(sorted(timelines.items()), start=1):
        label = f"fxtui {report.model}" + (f" rank {rank}" if report.timelines and len(timelines) > 1 else "")
        if left := report.trace_left_out.get(rank, 0) if report.timelines else 0:
            label += f" (the step's first {len(spans):,} ops drawn, {left:,} more left out)"
        events.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": label}})
        events += _spans(report, [(n, s - origin, d) for n, s, d in spans], pid)
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def _spans(report: ReportData, timeline: list[tuple[str, float, float]], pid: int) -> list[dict[str, Any]]:
    """One run's nodes as nested spans: module → node (a training step's phases around its modules)."""
    paths = {r.name: r.module_path for r in report.rows}
    phases = {r.name: r.info.phase for r in report.rows}
    ops = {r.name: (r.info.op, r.info.target) for r in report.rows}
    fused = {r.name: r.info.fused_nodes for r in report.rows if r.info.kernel}
    events: list[dict[str, Any]] = []
    open_spans: list[tuple[str, float]] = []  # (module path, start) from the root's children down
    end = 0.0

    def close_until(keep: int) -> None:
        while len(open_spans) > keep:
            path, start = open_spans.pop()
            if path.startswith(_PHASE):  # a training step's forward or backward pass around its modules
                events.append(_span(path[len(_PHASE) :], "phase", start, end - start, {}, pid))
            else:
                name = path.rpartition(".")[2] or path
                events.append(_span(name, "module", start, end - start, {"path": path}, pid))

    for name, start, dur in timeline:
        phase = phases.get(name, "")
        chain = ([_PHASE + phase] if phase else []) + module_ancestors(paths.get(name, ""))[1:]
        common = 0
        while common < min(len(chain), len(open_spans)) and open_spans[common][0] == chain[common]:
            common += 1
        close_until(common)
        for path in chain[common:]:
            open_spans.append((path, start))
        op, target = ops.get(name, ("", ""))
        args: dict[str, Any] = {"target": target, "module": paths.get(name, "")}
        if name in fused:  # a compiled model's kernel: the source nodes it computes
            args["fused_nodes"] = list(fused[name])
        events.append(_span(name, op, start, dur, args, pid))
        end = max(end, start + dur)
    close_until(0)
    return events


#: Marks a phase among the open spans of :func:`chrome_trace` (module paths never start with it).
_PHASE = "\x00"


def _span(name: str, cat: str, start: float, dur: float, args: dict[str, Any], pid: int = 1) -> dict[str, Any]:
    return {"name": name, "cat": cat, "ph": "X", "ts": start * 1e6, "dur": dur * 1e6, "pid": pid, "tid": 1,
            "args": args}  # fmt: skip


def trace_json(report: ReportData) -> str:
    """:func:`chrome_trace` as JSON text."""
    return json.dumps(chrome_trace(report)) + "\n"
