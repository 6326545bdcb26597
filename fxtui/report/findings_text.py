"""The findings as text for the terminal: hints, aten operators, what-ifs and ``fxtui diff``.

Pure functions of torch-free data (:mod:`fxtui.core`); the one-line sentences the app shows
too live beside the data (:mod:`fxtui.core.what_if_text`), the tables here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import tabulate

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


def hints_text(hints: tuple[Hint, ...], what_ifs: Iterable[WhatIf] = ()) -> str:
    """Suggestions, largest estimated saving first, each with its evidence.

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
        lines.append(f"• {h.title}  [{h.rule}]\n    {h.evidence}\n    {saving}")
    return "\n".join(lines)


def aten_text(aten: dict[str, tuple[AtenOp, ...]], rows: list[NodeRow]) -> str:
    """The aten operators inside each of ``rows`` (those explained), with their share of the node."""
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
        blocks.append(
            title
            + "\n"
            + tabulate.tabulate(
                body, headers=["aten operator", "calls", "total", "self", "of node"], disable_numparse=True
            )
        )
    return "\n\n".join(blocks)


def what_if_text(result: WhatIf, top: int | None = 10) -> str:
    """One what-if: what was done, the run before → after, the outputs, then nodes and modules by change."""
    lines = [f"what-if    {result.name}: {result.title}"]
    if result.error:
        lines.append(f"           cannot apply: {result.error}")
        return "\n".join(lines)
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
    if not result.nodes:
        lines.append("nodes      none: measured as one whole run")
        return "\n".join(lines)
    shown = result.nodes[:top] if top else result.nodes
    lines += ["", _table(node_rows(shown), ["node", "module path", "before", "after", "change", "after ÷ before"])]
    if len(shown) < len(result.nodes):
        lines.append(f"… {len(result.nodes) - len(shown)} more nodes (--top 0 or --json shows all)")
    modules = result.modules[: max(top // 2, 1)] if top else result.modules
    lines += ["", _table(module_rows(modules), ["module path", "before", "after", "change", "after ÷ before"])]
    if len(modules) < len(result.modules):
        lines.append(f"… {len(result.modules) - len(modules)} more modules")
    return "\n".join(lines)


def what_ifs_text(results: Iterable[WhatIf], top: int | None = 10) -> str:
    """Every what-if, one block each."""
    return "\n\n".join(what_if_text(r, top) for r in results)


def _table(rows: list[list[str]], headers: list[str]) -> str:
    return tabulate.tabulate(rows, headers=headers, disable_numparse=True)


def diff_table(diff: RunDiff, top: int | None = 20) -> str:
    """Totals, then nodes by absolute change, modules, and nodes found in one run only."""
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
    lines.append("")
    rows = diff.nodes[:top] if top else diff.nodes
    lines.append(
        tabulate.tabulate(
            [[*_row(c, c.name), SPREAD_MARK if c.within_spread else ""] for c in rows],
            headers=["node", "module path", "before", "after", "Δ", "Δ%", ""],
            disable_numparse=True,
        )
    )
    if top and len(diff.nodes) > top:
        lines.append(f"… {len(diff.nodes) - top} more nodes (--top 0 shows all)")
    if diff.within_spread:
        lines.append(spread_legend(diff))
    if (diff.before.get("capture") == "compiled") != (diff.after.get("capture") == "compiled"):
        # A compiled run's rows are kernels: no name is the other run's, and listing them all says nothing.
        lines.append(
            f"\nnodes      the compiled run's kernels and the other run's nodes share no name "
            f"({len(diff.only_before)} before, {len(diff.only_after)} after): the modules below compare"
        )
    else:
        if diff.only_before:
            lines.append(f"\nonly in before ({len(diff.only_before)}): " + ", ".join(diff.only_before))
        if diff.only_after:
            lines.append(f"only in after ({len(diff.only_after)}): " + ", ".join(diff.only_after))
    mods = [m for m in diff.modules if m.name][: top or None]
    if mods:
        lines.append("")
        lines.append(
            tabulate.tabulate(
                [[c.name or "(root)", *_row(c, c.name)[2:]] for c in mods],
                headers=["module path", "before", "after", "Δ", "Δ%"],
                disable_numparse=True,
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
