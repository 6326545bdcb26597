"""The findings as text for the terminal: hints, aten operators, what-ifs and ``fxtui diff``.

Pure functions of torch-free data (:mod:`fxtui.core`); the one-line sentences the app shows
too live beside the data (:mod:`fxtui.core.what_if_text`), the tables here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from fxtui.core.findings import AtenOp, Hint, WhatIf
from fxtui.core.rows import NodeRow
from fxtui.core.units import format_pct, format_seconds, format_signed_pct, format_signed_seconds
from fxtui.core.what_if_text import (
    memory_line,
    module_rows,
    node_rows,
    outputs_line,
    run_line,
    setup_line,
    summary,
    tokens_line,
)
from fxtui.report.diff import SPREAD_MARK, Change, RunDiff, spread_legend
from fxtui.report.table_fit import Col, fit_table, wrap_line

#: A node's name and its module path: the end of each says most when a narrow terminal shortens them.
_NODE = Col("node", cut="start", floor=16)
_MODULE = Col("module path", cut="start", drop=1)


def _figures(*headers: str) -> list[Col]:
    return [Col(h, numeric=True) for h in headers]


def hints_text(hints: tuple[Hint, ...], what_ifs: Iterable[WhatIf] = (), width: int | None = None) -> str:
    """Suggestions, largest estimated saving first, each with its evidence (wrapped within ``width`` when given).

    A hint whose what-if was measured (``what_ifs``) shows the measured change instead of the estimate.
    """
    if not hints:
        return "hints      none: no rule found anything worth changing"
    measured = {w.name: w for w in what_ifs if w.measured}
    lines = []
    for h in hints:
        tried = measured.get(h.what_if)
        if tried is not None:
            saving = f"measured (what-if {tried.name}): {summary(tried)}"
        elif h.saving_s is not None:
            saving = f"saves about {format_seconds(h.saving_s)} ({format_pct(h.saving_pct)} of the run)"
        else:
            saving = "saving: try it and measure" + (f" (--what-if {h.what_if})" if h.what_if else "")
        title = wrap_line(f"• {h.title}  [{h.rule}]", width, indent=2)
        lines.append(f"{title}\n{wrap_line('    ' + h.evidence, width, 4)}\n{wrap_line('    ' + saving, width, 4)}")
    return "\n".join(lines)


def aten_text(aten: dict[str, tuple[AtenOp, ...]], rows: list[NodeRow], width: int | None = None) -> str:
    """The aten operators inside each of ``rows`` (those explained), with their share of the node; within
    ``width`` when given."""
    blocks = []
    for r in rows:
        ops = aten.get(r.name)
        if ops is None:
            continue
        body = [
            [
                "  " * op.depth + op.name,
                f"{op.calls:g}",
                format_seconds(op.total_s),
                format_seconds(op.self_s),
                f"{op.share:.0%}",
            ]
            for op in ops
        ]
        title = f"{r.name} ({r.info.target}, median {format_seconds(r.median_s)})"
        if not body:
            blocks.append(f"{title}: no aten operator (pure Python or a view)")
            continue
        cols = [Col("aten operator", cut="end", floor=16), *_figures("calls", "total", "self", "% of node")]
        blocks.append(title + "\n" + fit_table(body, cols, width))
    return "\n\n".join(blocks)


def what_if_text(result: WhatIf, top: int | None = 10, width: int | None = None) -> str:
    """One what-if: what was done, the run before → after, the outputs, then nodes and modules by change;
    the tables within ``width`` when given."""
    lines = [f"what-if    {result.name}: {result.title}"]
    if result.error:
        lines.append(f"           cannot apply: {result.error}")
        return "\n".join(wrap_line(line, width) for line in lines)
    lines.append(f"run        {run_line(result)}")
    if result.tokens:
        lines.append(f"tokens     {tokens_line(result)} (whole generate() calls)")
    lines.append(f"outputs    {outputs_line(result)}" + (" of the prefill's logits" if result.tokens else ""))
    if setup := setup_line(result):
        lines.append(f"setup      {setup}")
    if memory := memory_line(result):
        lines.append(f"memory     {memory}")
    if result.note:
        lines.append(f"note       {result.note}")
    lines = [wrap_line(line, width) for line in lines]
    if not result.nodes:
        lines.append("nodes      none: measured as one whole run")
        return "\n".join(lines)
    shown = result.nodes[:top] if top else result.nodes
    changes = _figures("before", "after", "change", "after ÷ before")
    lines += ["", fit_table(node_rows(shown), [_NODE, _MODULE, *changes], width)]
    if len(shown) < len(result.nodes):
        lines.append(f"… {len(result.nodes) - len(shown)} more nodes (--top 0 or --json shows all)")
    modules = result.modules[: max(top // 2, 1)] if top else result.modules
    lines += ["", fit_table(module_rows(modules), [replace(_MODULE, drop=0, floor=16), *changes], width)]
    if len(modules) < len(result.modules):
        lines.append(f"… {len(result.modules) - len(modules)} more modules")
    return "\n".join(lines)


def what_ifs_text(results: Iterable[WhatIf], top: int | None = 10, width: int | None = None) -> str:
    """Every what-if, one block each."""
    return "\n\n".join(what_if_text(r, top, width) for r in results)


def diff_table(diff: RunDiff, top: int | None = 20, width: int | None = None) -> str:
    """Totals, then nodes by absolute change, modules, and nodes found in one run only; the tables within
    ``width`` when given."""
    lines = [
        f"before     {_describe(diff.before)}",
        f"after      {_describe(diff.after)}",
        f"run        {_change_text(diff.run)} (profiled median)",
        f"uninstr.   {_change_text(diff.eager)} (uninstrumented median)",
    ]
    for change in diff.generation:  # two generations: what a user waits for, before the nodes
        lines.append(f"{change.name:<22} {_change_text(change)} (uninstrumented)")
    if diff.tokens_line:
        lines.append(diff.tokens_line)
    if diff.memory_line:
        lines.append(diff.memory_line)
    if diff.differences:
        lines.append(f"settings   differ: {'; '.join(diff.differences)}")
    lines = [wrap_line(line, width) for line in lines]
    lines.append("")
    rows = diff.nodes[:top] if top else diff.nodes
    changes = _figures("before", "after", "Δ", "Δ%")
    lines.append(
        fit_table(
            [[*_row(c, c.name), SPREAD_MARK if c.within_spread else ""] for c in rows],
            # The last column marks a change within either run's own spread (the legend below says so).
            [_NODE, _MODULE, *changes, Col("in spread", cut="never")],
            width,
        )
    )
    if top and len(diff.nodes) > top:
        lines.append(f"… {len(diff.nodes) - top} more nodes (--top 0 shows all)")
    if diff.within_spread:
        lines.append(wrap_line(spread_legend(diff), width, indent=2))
    if (diff.before.get("capture") == "compiled") != (diff.after.get("capture") == "compiled"):
        # A compiled run's rows are kernels: no name is the other run's, and listing them all says nothing.
        said = (
            f"nodes      the compiled run's kernels and the other run's nodes share no name "
            f"({len(diff.only_before)} before, {len(diff.only_after)} after): the modules below compare"
        )
        lines.append("\n" + wrap_line(said, width))
    else:
        if diff.only_before:
            only = f"only in before ({len(diff.only_before)}): " + ", ".join(diff.only_before)
            lines.append("\n" + wrap_line(only, width, indent=2))
        if diff.only_after:
            only = f"only in after ({len(diff.only_after)}): " + ", ".join(diff.only_after)
            lines.append(wrap_line(only, width, indent=2))
    mods = [m for m in diff.modules if m.name][: top or None]
    if mods:
        lines.append("")
        lines.append(
            fit_table(
                [[c.name or "(root)", *_row(c, c.name)[2:]] for c in mods],
                [replace(_MODULE, drop=0, floor=16), *changes],
                width,
            )
        )
    return "\n".join(lines)


def _describe(meta: dict[str, Any]) -> str:
    inputs = ", ".join(str(i) for i in meta.get("inputs", []))
    threads, runs = meta.get("threads", "?"), meta.get("runs", "?")
    return f"{meta.get('model', '?')}   inputs {inputs}   threads {threads}   runs {runs}"


def _change_text(c: Change) -> str:
    return (
        f"{format_seconds(c.before_s)} → {format_seconds(c.after_s)}   "
        f"Δ {format_signed_seconds(c.delta_s)} ({format_signed_pct(c.delta_pct)})"
    )


def _row(c: Change, name: str) -> list[str]:
    return [
        name,
        c.module_path or "(root)",
        format_seconds(c.before_s),
        format_seconds(c.after_s),
        format_signed_seconds(c.delta_s),
        format_signed_pct(c.delta_pct),
    ]
