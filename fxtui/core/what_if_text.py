"""What-if results as text: one block per what-if for the terminal, and the sentences the app reuses.

Torch-free, like the results themselves (:class:`~fxtui.core.findings.WhatIf`).
"""

from __future__ import annotations

from collections.abc import Iterable

from fxtui.core.findings import Change, ModuleChange, NodeChange, WhatIf
from fxtui.core.units import format_bytes, format_seconds, format_signed_seconds

#: How the relative output difference is defined, said once wherever it is shown.
REL_DIFF_DEFINITION = "max|a−b| ÷ max|a| per floating output"


def spread(low: float | None, high: float | None) -> str:
    """``180–185 ms``: a p25–p75 range in one unit."""
    if low is None or high is None:
        return "–"
    a, b = format_seconds(low).split(" "), format_seconds(high).split(" ")
    return f"{a[0]}–{b[0]} {b[1]}" if a[1] == b[1] else f"{format_seconds(low)}–{format_seconds(high)}"


def change_text(result: WhatIf) -> str:
    """``22.5% faster``, ``3.1% slower``, ``12.1× slower`` or ``+1.2% run time (… no verdict)``."""
    pct = result.saving_pct
    if pct is None:
        return "–"
    if result.verdict == "slower" and result.before_s and (result.after_s or 0) >= 2 * result.before_s:
        return f"{(result.after_s or 0) / result.before_s:.1f}× slower"  # "1109.9% slower" reads worse
    if result.verdict:
        return f"{abs(pct):.1f}% {result.verdict}"
    return f"{-pct:+.1f}% run time (p25–p75 ranges overlap: no verdict)"


def summary(result: WhatIf) -> str:
    """One line: ``182 ms → 141 ms, 22.5% faster``, or why it could not be measured (``generate()`` calls: the
    tokens/s and how many tokens agree too)."""
    if result.error:
        return f"cannot apply: {result.error}"
    said = f"{format_seconds(result.before_s)} → {format_seconds(result.after_s)}, {change_text(result)}"
    return f"{said}; {tokens_line(result)}" if result.tokens else said


def tokens_line(result: WhatIf) -> str:
    """``tokens/s 29.7 → 41.2; 61 of 64 greedy tokens identical, the first difference at token 12``."""
    before, after = result.tokens_per_s
    rate = f"tokens/s {_rate(before)} → {_rate(after)}"
    if result.tokens_same is None or not result.tokens_total:
        return f"{rate}; tokens not compared"
    agree = f"{result.tokens_same} of {result.tokens_total} greedy tokens identical"
    if result.first_difference is not None:
        agree += f", the first difference at token {result.first_difference}"
    return f"{rate}; {agree}"


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def run_line(result: WhatIf) -> str:
    """Before → after with each side's p25–p75 spread, the change and the pairs."""
    pairs = f"{result.pairs} interleaved pair{'s' if result.pairs != 1 else ''}"
    return (
        f"{format_seconds(result.before_s)} (p25–p75 {spread(result.before_p25_s, result.before_p75_s)}) → "
        f"{format_seconds(result.after_s)} ({spread(result.after_p25_s, result.after_p75_s)}): "
        f"{change_text(result)}; uninstrumented medians, {pairs}"
    )


def diff_text(value: float | None) -> str:
    """An output difference: ``2.4e-06``, ``0``, ``inf`` or ``–`` (not compared)."""
    if value is None:
        return "–"
    if value == 0:
        return "0"
    return "inf" if value == float("inf") else f"{value:.1e}"


def outputs_line(result: WhatIf) -> str:
    """The output difference against the original, both measures."""
    if result.max_abs_diff is None:
        return "not compared"
    return (
        f"max abs diff {diff_text(result.max_abs_diff)} · max rel diff {diff_text(result.max_rel_diff)} "
        f"({REL_DIFF_DEFINITION})"
    )


def setup_line(result: WhatIf) -> str:
    """What making the changed model cost: the compile time, or the recapture."""
    if result.name == "compile":
        return f"compile time {format_seconds(result.setup_s)} (the first call)"
    # Under a millisecond nothing was made (the same graphs under a context): not worth a line.
    return f"{format_seconds(result.setup_s)} to make the changed model" if result.setup_s >= 1e-3 else ""


def memory_line(result: WhatIf) -> str:
    """The process's peak resident memory during the what-if against before it ("" when unknown)."""
    if result.peak_rss_bytes is None:
        return ""
    line = f"peak RSS {format_bytes(result.peak_rss_bytes)} during the what-if"
    if result.rss_before_bytes is not None:
        grew = result.peak_rss_bytes - result.rss_before_bytes
        sign = "+" if grew >= 0 else "−"
        line += f" ({sign}{format_bytes(abs(grew))} over the {format_bytes(result.rss_before_bytes)} before)"
    return line


def ratio(before: float | None, after: float | None) -> str:
    """``×0.07``; ``gone`` / ``new`` for a node on one side only."""
    if after is None:
        return "gone"
    if before is None:
        return "new"
    return f"×{after / before:.2f}" if before > 0 else "–"


def change_cells(c: Change) -> list[str]:
    """A change's cells: before, after, change, ratio."""
    return [
        format_seconds(c.before_s),
        format_seconds(c.after_s),
        format_signed_seconds(c.change_s),
        ratio(c.before_s, c.after_s),
    ]


def node_rows(changes: Iterable[NodeChange]) -> list[list[str]]:
    """Table rows: node, module path, before, after, change, ratio."""
    return [[c.name, c.module_path or "(root)", *change_cells(c)] for c in changes]


def module_rows(changes: Iterable[ModuleChange]) -> list[list[str]]:
    """Table rows: module path, before, after, change, ratio."""
    return [[c.path or "(root)", *change_cells(c)] for c in changes]
