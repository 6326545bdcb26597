"""Compare two saved runs: per node and per module change of the median, totals first.

Works on the reports that ``--json``/``--save`` write (read back by
:meth:`~fxtui.report.api.Report.load`), so it needs neither torch nor the model.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from fxtui.core.rows import ModuleRow, NodeRow
from fxtui.core.units import format_bytes
from fxtui.report.data import ReportData

SPREAD_MARK = "~"
"""Marks a node change that lies within either run's own spread."""
#: Settings that change what a node costs; a difference is named above the tables.
_SETTINGS = ("model", "inputs", "dtype", "threads", "malloc")


@dataclass(frozen=True)
class Change:
    """One node or module present in both runs."""

    name: str
    module_path: str
    before_s: float
    after_s: float
    within_spread: bool = False
    """Either run itself measured this node as slow as the other's median (anywhere from its
    fastest run to its p90): the machine may account for the change, not the model."""

    @property
    def delta_s(self) -> float:
        """After minus before."""
        return self.after_s - self.before_s

    @property
    def delta_pct(self) -> float | None:
        """Change relative to before, in percent (None when before was zero)."""
        return 100.0 * self.delta_s / self.before_s if self.before_s else None


@dataclass(frozen=True)
class RunDiff:
    """Everything that changed between two saved runs."""

    before: dict[str, Any]
    """Metadata of the first run."""
    after: dict[str, Any]
    nodes: list[Change]
    """Nodes in both runs, largest absolute change first."""
    modules: list[Change]
    only_before: list[str]
    """Nodes that exist only in the first run (e.g. removed by a fusion)."""
    only_after: list[str]

    @property
    def differences(self) -> list[str]:
        """How the two runs' settings differ (``threads 2 → 1``); empty when they match."""
        out = []
        for key in _SETTINGS:
            b, a = self.before.get(key), self.after.get(key)
            if b is not None and a is not None and b != a:
                out.append(f"{key} {_setting_text(b)} → {_setting_text(a)}")
        return out

    @property
    def within_spread(self) -> list[Change]:
        """Node changes that either run's own spread covers (see :attr:`Change.within_spread`)."""
        return [c for c in self.nodes if c.within_spread]

    @property
    def run(self) -> Change:
        """The profiled-run medians."""
        return Change("run", "", self.before.get("run_median_s") or 0.0, self.after.get("run_median_s") or 0.0)

    @property
    def eager(self) -> Change:
        """The uninstrumented-run medians."""
        return Change("eager", "", self.before.get("eager_median_s") or 0.0, self.after.get("eager_median_s") or 0.0)

    @property
    def generation(self) -> list[Change]:
        """Two generations' headline figures: time to first token, per output token (median), per token (mean)."""
        b, a = self.before.get("generation"), self.after.get("generation")
        if not isinstance(b, dict) or not isinstance(a, dict):
            return []
        pairs = [
            ("time to first token", b.get("ttft_s"), a.get("ttft_s")),
            ("time per output token", (b.get("tpot_s") or {}).get("median"), (a.get("tpot_s") or {}).get("median")),
            ("mean decode step", (b.get("tpot_s") or {}).get("mean"), (a.get("tpot_s") or {}).get("mean")),
            ("generate() call", b.get("generate_s"), a.get("generate_s")),
        ]
        return [Change(name, "", before, after) for name, before, after in pairs if before and after]

    @property
    def tokens_line(self) -> str:
        """``tokens/s 26.8 → 41.2 (+53.7%)`` for two generations (``""`` otherwise)."""
        b, a = self.before.get("tokens_per_s"), self.after.get("tokens_per_s")
        if not b or not a:
            return ""
        return f"tokens/s   {b:.1f} → {a:.1f} ({100.0 * (a - b) / b:+.1f}%) per whole generate() call"

    @property
    def memory_line(self) -> str:
        """The live peaks of two runs saved with ``--memory`` (``""`` unless both measured memory)."""
        b, a = self.before.get("peak_live_bytes"), self.after.get("peak_live_bytes")
        if b is None or a is None:
            return ""
        pct = f" ({100.0 * (a - b) / b:+.1f}%)" if b else ""
        return (
            f"memory     live peak {format_bytes(b)} → {format_bytes(a)}{pct}, after "
            f"{self.before.get('peak_node', '')} → {self.after.get('peak_node', '')}"
        )


def spread_legend(diff: RunDiff) -> str:
    """The line that explains the ``~`` mark, with how many node changes carry it."""
    return (
        f"{SPREAD_MARK} {len(diff.within_spread)} of {len(diff.nodes)} node changes lie within what either run"
        " measured for that node alone (fastest run to p90): the machine may account for them"
    )


def diff_files(before: str | os.PathLike[str], after: str | os.PathLike[str]) -> RunDiff:
    """Load and compare two saved runs; FxtuiError when either is not an fxtui report."""
    return diff_reports(ReportData.load(before), ReportData.load(after))


def diff_reports(before: ReportData, after: ReportData) -> RunDiff:
    """Compare two reports (profiled now or loaded from files)."""
    b_rows = {r.name: r for r in before.rows}
    a_rows = {r.name: r for r in after.rows}
    nodes = [
        Change(name, a_rows[name].module_path, b_rows[name].median_s, a_rows[name].median_s, _within_spread(b, a))
        for name, b in b_rows.items()
        if (a := a_rows.get(name)) is not None
    ]
    b_mods = {m.path: m for m in before.modules}
    a_mods = {m.path: m for m in after.modules}
    # A compiled model's module fused whole into an ancestor's kernel has no time of its own to compare: it is there.
    a_mods = {p: m for p, m in a_mods.items() if not _fused_whole(m)}
    b_mods = {p: m for p, m in b_mods.items() if not _fused_whole(m)}
    modules = [Change(p, p, b_mods[p].inclusive_s, a_mods[p].inclusive_s) for p in b_mods if p in a_mods]
    pair = ("forward", "backward") if before.training and after.training else ()
    if before.generation is not None and after.generation is not None:
        pair = ("prefill", "decode")  # a generation: each module's prefill (per call) and decode (per token)
    if pair:  # each module's two phases apart
        for phase in pair:
            modules += [
                Change(f"{p} ({phase})", p, getattr(b_mods[p], f"{phase}_s"), getattr(a_mods[p], f"{phase}_s"))
                for p in b_mods
                if p and p in a_mods
            ]
    by_size = lambda c: (-abs(c.delta_s), c.name)  # noqa: E731
    return RunDiff(
        before=before.metadata(),
        after=after.metadata(),
        nodes=sorted(nodes, key=by_size),
        modules=sorted(modules, key=by_size),
        only_before=[n for n in b_rows if n not in a_rows],
        only_after=[n for n in a_rows if n not in b_rows],
    )


def _fused_whole(module: ModuleRow) -> bool:
    """A compiled model's module with no kernel of its own (its eager time shown beside where its work went)."""
    return module.compiled_s is not None and module.nodes == 0


def _within_spread(before: NodeRow, after: NodeRow) -> bool:
    """Is the change within what either run's own samples span?

    Two ranges say so. The node medians' ranges (p25–p75 of each run's window) overlap:
    the two medians are not yet told apart. Or either run's fastest-run-to-p90 range reaches
    the other's median: medians of independent sessions differ by more than one session's
    runs do (the machine drifts, and a node can take twice its fastest run for a whole
    session, ``unsteady``). A change that one run's own samples already span is not evidence
    about the model. Runs saved without these fields (older files) have no range (zero), and no mark.
    """

    def covers(row: NodeRow, value: float) -> bool:
        low, high = row.stats.min_s, row.stats.p90_s
        return high > 0 and low <= value <= high

    a, b = before.stats, after.stats
    overlap = a.q75_s > 0 and b.q75_s > 0 and a.q25_s <= b.q75_s and b.q25_s <= a.q75_s
    return overlap or covers(before, after.median_s) or covers(after, before.median_s)


def _setting_text(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)
