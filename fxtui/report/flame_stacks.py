"""A step's time as stacks for a flame graph: the module tree as nested frames, each node a leaf frame.

What the speedscope (:mod:`fxtui.report.speedscope`) and folded-stack (:mod:`fxtui.report.folded`)
exports draw. Each node row is one stack: the root frame (the model or the script), one frame per
module from the top down to the node's module, and the node itself; its weight is the node's median
in seconds. A module's width is then its inclusive time (the sum of its nodes' medians), as in the
module table, and the root's is the sum of every node's median. A distributed job has one set of
stacks per rank.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fxtui.core.nodes import module_ancestors
from fxtui.core.rows import NodeRow
from fxtui.report.data import ReportData


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame: a module (``kind`` ``module``) or a node (``node``), with the source line a node has."""

    name: str
    kind: str
    file: str = ""
    line: int = 0


@dataclass(frozen=True, slots=True)
class Stack:
    """One node's stack, root frame first, and its weight: the node's median, seconds."""

    frames: tuple[Frame, ...]
    weight_s: float


def rank_stacks(report: ReportData) -> dict[int | None, list[Stack]]:
    """The stacks of each rank of a distributed job (by rank), or of the one process (under ``None``), graph order.

    Nodes with no time (a median of 0) draw nothing and are left out.
    """
    classes = {m.path: m.class_name for m in report.modules}
    root = report.model or "model"
    summary = report.rank_summary
    ranked: dict[int | None, list[NodeRow]] = {summary.shown if summary is not None else None: report.rows}
    ranked.update(report.rank_rows.items())
    return {
        rank: [Stack(_frames(row, root, classes), row.median_s) for row in rows if row.median_s > 0]
        for rank, rows in sorted(ranked.items(), key=lambda kv: -1 if kv[0] is None else kv[0])
    }


def _frames(row: NodeRow, root: str, classes: dict[str, str]) -> tuple[Frame, ...]:
    modules = [
        Frame(_module_name(path, root, classes.get(path, "")), "module") for path in module_ancestors(row.module_path)
    ]
    file, line = _source(row.info.source)
    return (*modules, Frame(row.name, "node", file, line))


def _module_name(path: str, root: str, class_name: str) -> str:
    """``layer1.0 (Block)``; the root is the model's name."""
    if not path:
        return root
    return f"{path} ({class_name})" if class_name else path


_SOURCE = re.compile(r"^(\S+?):(\d+)\b")


def _source(text: str) -> tuple[str, int]:
    """The file and line of a node's source text (``train.py:20  loss.backward()``), or none."""
    found = _SOURCE.match(text)
    return (found.group(1), int(found.group(2))) if found else ("", 0)
