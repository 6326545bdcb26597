"""What fxtui's analysis finds, as plain torch-free data the UI and exports can carry.

The analysis itself (:mod:`fxtui.measure.analysis`) needs torch; its results do not,
so they live here and travel inside snapshots.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Bound = Literal["compute-bound", "memory-bound"]


@dataclass(frozen=True, slots=True)
class MachinePeaks:
    """Measured ceilings of this machine at a thread count."""

    gflops: float
    """Float32 matrix-multiply speed, GFLOP/s."""
    gbytes_per_s: float
    """Large-copy bandwidth, GB/s (bytes read plus bytes written per second)."""
    threads: int

    @property
    def ridge(self) -> float:
        """FLOPs per byte above which a node is compute-bound."""
        return self.gflops / self.gbytes_per_s


@dataclass(frozen=True, slots=True)
class Roofline:
    """One node placed on the roofline."""

    bound: Bound
    intensity: float
    """FLOPs per byte."""
    gflops: float
    """Achieved GFLOP/s."""
    gbytes_per_s: float
    """Achieved GB/s."""
    ceiling_gflops: float
    """The roofline at this intensity: min(peak GFLOP/s, intensity × peak GB/s)."""
    fraction: float
    """Achieved over attainable: for a compute-bound node GFLOP/s over the ceiling; for a
    memory-bound one GB/s over peak bandwidth (so nodes without FLOPs still get a figure).
    Peak bandwidth is measured on a copy far larger than the caches, so a node whose
    data stays in cache (an element-wise op on a few MB) can exceed 1."""


def place_on_roofline(flops: float, bytes_moved: float, median_s: float, peaks: MachinePeaks) -> Roofline | None:
    """Where a node doing ``flops`` and moving ``bytes_moved`` in ``median_s`` sits under ``peaks``.

    ``None`` when the node moves no data or takes no time.
    """
    if bytes_moved <= 0 or median_s <= 0:
        return None
    intensity = flops / bytes_moved
    gflops, gbps = flops / median_s / 1e9, bytes_moved / median_s / 1e9
    ceiling = min(peaks.gflops, intensity * peaks.gbytes_per_s)
    if intensity >= peaks.ridge:
        return Roofline("compute-bound", intensity, gflops, gbps, ceiling, gflops / peaks.gflops)
    return Roofline("memory-bound", intensity, gflops, gbps, ceiling, gbps / peaks.gbytes_per_s)


@dataclass(frozen=True, slots=True)
class AtenOp:
    """One aten operator as seen inside one node, per run of the model.

    Times are means per run. ``depth`` 0 marks an operator the node called directly;
    the totals of those add up to about the node's time (the rest is Python glue).
    Deeper operators are nested inside another one, so their totals overlap their
    parent's; their self times do not, and every op's self time adds up to the
    time spent in aten.
    """

    name: str
    depth: int
    self_s: float
    total_s: float
    calls: float
    """Calls per run (a mean, so a node that calls an op every other run shows 0.5)."""
    share: float
    """``total_s`` over the node's time, 0..1."""


@dataclass(frozen=True, slots=True)
class Hint:
    """One suggestion for the user."""

    rule: str
    """Stable rule id, e.g. ``"conv-bn-fold"``."""
    title: str
    """One line saying what to do."""
    nodes: tuple[str, ...]
    """FX node names involved, most important first."""
    evidence: str
    """The measurements that triggered the rule."""
    saving_s: float | None
    """Estimated saving per run in seconds; ``None`` when it cannot be estimated without trying."""
    saving_pct: float | None
    """``saving_s`` as a share of the run median, in percent."""
    what_if: str = ""
    """The what-if that measures this suggestion (``fold-bn``, ``channels-last``, ``threads=2`` …), or ``""``."""


class Change:
    """A time before and after a what-if (``None`` on a side that lacks what it is of)."""

    __slots__ = ()
    before_s: float | None
    after_s: float | None

    @property
    def change_s(self) -> float:
        """After minus before; what is gone counts as 0 after, what is new as 0 before."""
        return (self.after_s or 0.0) - (self.before_s or 0.0)


@dataclass(frozen=True, slots=True)
class NodeChange(Change):
    """One node's median before and after a what-if (``None`` on the side whose graph lacks the node)."""

    name: str
    module_path: str
    before_s: float | None
    after_s: float | None


@dataclass(frozen=True, slots=True)
class ModuleChange(Change):
    """One module's inclusive time (sum of its nodes' medians) before and after a what-if."""

    path: str
    before_s: float | None
    after_s: float | None


@dataclass(frozen=True, slots=True)
class WhatIf:
    """A change tried on a copy of the model and measured against the original, runs interleaved.

    Whole-run figures are uninstrumented run medians with their p25–p75 spread; per-node and
    per-module figures are profiled medians, sorted by absolute change (largest first). A
    what-if that could not be applied has ``error`` set and no figures.
    """

    name: str
    """The what-if's name as the user gives it: ``channels-last``, ``bf16``, ``threads=1`` …"""
    title: str
    """What was done, one line (``bfloat16 autocast …``, ``fold 20 BatchNorm2d …``)."""
    error: str = ""
    """Why it could not be applied or measured, one sentence; ``""`` when it was measured."""
    before_s: float | None = None
    """Median of the original's uninstrumented runs."""
    before_p25_s: float | None = None
    before_p75_s: float | None = None
    after_s: float | None = None
    """Median of the changed model's uninstrumented runs, interleaved with the original's."""
    after_p25_s: float | None = None
    after_p75_s: float | None = None
    pairs: int = 0
    """Interleaved pairs measured (each side: a profiled and an uninstrumented run, or one run)."""
    max_abs_diff: float | None = None
    """Largest ``|a − b|`` between the original's and the changed model's outputs (floating outputs,
    compared in float32); ``None`` when there was nothing to compare."""
    max_rel_diff: float | None = None
    """Per floating output, ``max|a − b| ÷ max|a|``; the largest over the outputs. ``None`` as above."""
    setup_s: float = 0.0
    """Seconds spent making the changed model: recapturing it, or ``torch.compile``'s first call."""
    nodes: tuple[NodeChange, ...] = ()
    """Per node, largest absolute change first (empty for a whole-run-only what-if: ``compile``)."""
    modules: tuple[ModuleChange, ...] = ()
    """Per module path, largest absolute change first."""
    note: str = ""
    """What else the reader should know: the time budget cut the pairs short, outputs not compared …"""
    serial: int = 0
    """Which measurement of the session this was (1, 2 …): a later one of the same name replaces it."""
    rss_before_bytes: int | None = None
    """The measuring process's resident memory when the what-if began (None where /proc does not say)."""
    peak_rss_bytes: int | None = None
    """Its peak resident memory while the what-if ran: the changed copy, both sides' runs."""
    tokens: int = 0
    """``generate()`` calls: tokens each call generates (all sequences); the figures are whole calls then."""
    tokens_same: int | None = None
    """Of the greedy tokens one call of each generated, how many are identical, position by position."""
    tokens_total: int | None = None
    first_difference: int | None = None
    """The first generated token that differs (1: the first new token); None when all are identical."""

    @property
    def tokens_per_s(self) -> tuple[float | None, float | None]:
        """Tokens per second of a whole call, before and after (``generate()`` calls only)."""
        if not self.tokens:
            return None, None
        rate = lambda s: self.tokens / s if s else None  # noqa: E731
        return rate(self.before_s), rate(self.after_s)

    @property
    def measured(self) -> bool:
        """True when both sides were timed."""
        return not self.error and bool(self.before_s) and self.after_s is not None

    @property
    def saving_s(self) -> float | None:
        """Seconds saved per run (negative: slower)."""
        if not self.measured:
            return None
        return self.before_s - self.after_s  # type: ignore[operator]

    @property
    def saving_pct(self) -> float | None:
        """Seconds saved as a share of the original's median, in percent (negative: slower)."""
        saving = self.saving_s
        return None if saving is None or not self.before_s else 100.0 * saving / self.before_s

    @property
    def verdict(self) -> str:
        """``faster`` or ``slower`` when the two p25–p75 ranges do not overlap, else ``""``."""
        spreads = (self.before_p25_s, self.before_p75_s, self.after_p25_s, self.after_p75_s)
        if not self.measured or any(x is None for x in spreads):
            return ""
        b25, b75, a25, a75 = spreads
        if a75 < b25:  # type: ignore[operator]
            return "faster"
        if a25 > b75:  # type: ignore[operator]
            return "slower"
        return ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data: the figures, then ``nodes`` (name → module path, before, after) and ``modules``.

        An infinite output difference (a NaN or infinity on one side only) is written as ``null``,
        with the note saying so.
        """
        data: dict[str, Any] = {
            key: _finite(getattr(self, key)) for key in _WHAT_IF_FIGURES if key not in ("nodes", "modules")
        }
        data["verdict"] = self.verdict
        data["saving_pct"] = self.saving_pct
        data["nodes"] = {
            c.name: {"module_path": c.module_path, "before_s": c.before_s, "after_s": c.after_s} for c in self.nodes
        }
        data["modules"] = {c.path: {"before_s": c.before_s, "after_s": c.after_s} for c in self.modules}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WhatIf:
        """The what-if :meth:`to_dict` wrote."""
        nodes = tuple(
            NodeChange(name, str(c.get("module_path", "")), c.get("before_s"), c.get("after_s"))
            for name, c in data.get("nodes", {}).items()
        )
        modules = tuple(
            ModuleChange(path, c.get("before_s"), c.get("after_s")) for path, c in data.get("modules", {}).items()
        )
        known = {key: data[key] for key in _WHAT_IF_FIGURES if key in data and key not in ("nodes", "modules")}
        return cls(**known, nodes=nodes, modules=modules)


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


#: The fields :meth:`WhatIf.to_dict` writes, in order.
_WHAT_IF_FIGURES = tuple(WhatIf.__dataclass_fields__)


@dataclass(frozen=True, slots=True)
class WhatIfOption:
    """A what-if as offered for one session: whether it applies, and why not when it does not."""

    name: str
    description: str
    """What it changes, one line."""
    reason: str = ""
    """Why it cannot apply to this model, one sentence; ``""`` when it can."""


@dataclass(frozen=True, slots=True)
class MemorySummary:
    """The memory figures of one whole run (``fxtui.measure.analysis.memory``), in bytes.

    Activations are the tensors the nodes create; parameters, buffers and the model's inputs
    exist before the run and after it, so they are counted apart and never in the live figures.
    """

    peak_live_bytes: int
    """Most activation bytes alive at once right after a node (from the graphs' liveness)."""
    peak_node: str
    """The node after which that peak is reached."""
    param_bytes: int
    """Parameters and buffers of the model (each storage once)."""
    input_bytes: int = 0
    """The model's example inputs."""
    high_water_bytes: int | None = None
    """Most bytes the allocator held for the run at once, temporaries included (profiler memory events)."""
    high_water_node: str = ""
    """The node running when the allocator's high-water mark was reached."""
    rss_bytes: int | None = None
    """Resident memory of the process that ran the model, after the memory pass."""
    max_rss_bytes: int | None = None
    """The process's resident high-water mark so far."""
    saved_bytes: int | None = None
    """In a training step: forward outputs kept for the backward graphs."""
    forward_peak_bytes: int | None = None
    """In a training step: the live peak among forward nodes."""
    backward_peak_bytes: int | None = None
    """In a training step: the live peak among backward nodes (saved tensors still held included)."""

    @property
    def peak_phase(self) -> str:
        """``forward`` or ``backward``: where a training step's live peak is (``""`` for inference)."""
        if self.forward_peak_bytes is None or self.backward_peak_bytes is None:
            return ""
        return "backward" if self.backward_peak_bytes >= self.forward_peak_bytes else "forward"


@dataclass(frozen=True, slots=True)
class Disturbance:
    """How much other work on the machine took the CPU from the steps so far (``fxtui.measure.interference``)."""

    steps: int
    """Steps (a profiled and an uninstrumented run each) recorded since the statistics began."""
    disturbed: int
    """Those in which either run lost more than ``interference.DISTURBED_SHARE`` of its time."""
    median_lost: float
    """Median share of a disturbed step's time taken by other work (0 when none was)."""
    worst_lost: float
    """The largest such share."""
    used: int = 0
    """Steps of the statistics' window the figures come from."""
    in_window: int = 0
    """Disturbed steps in that window."""
    left_out: int = 0
    """Disturbed steps of the window left out of the figures."""
    keep: bool = False
    """Disturbed steps were asked to be kept (``--keep-disturbed``)."""
    known: bool = True
    """False where the kernel does not report waits or steal time: nothing can be said."""
    threads: int = 0
    """The session's intra-op threads (0: not recorded)."""
    cores: int = 0
    """The cores this process may run on (0: not recorded)."""

    @property
    def own_threads(self) -> bool:
        """True when the session's own threads outnumber its cores: they wait for one another, which the kernel
        reports as waiting like any other process's work would cause."""
        return 0 < self.cores < self.threads

    median_display: float = 0.0
    """Median share of a disturbed step's time the display took (the live app drawing on the same cores)."""

    @property
    def kept(self) -> int:
        """Disturbed steps inside the figures."""
        return self.in_window - self.left_out

    @property
    def affects_figures(self) -> bool:
        """True when disturbed steps are more than a tenth of those the figures come from.

        The uninstrumented baseline is then slowed by other work too, and what no node
        accounts for is not the model's Python glue.
        """
        return self.kept * 10 > max(self.used, 1)

    def line(self) -> str:
        """One sentence for a header or status line; ``""`` on a quiet machine."""
        if not self.disturbed:
            return ""
        share = f"{100 * self.median_lost:.0f}% of their time (median; worst {100 * self.worst_lost:.0f}%)"
        if self.own_threads:
            said = (
                f"{self.disturbed} of {self.steps} steps disturbed: the session's own {self.threads} threads on "
                f"{self.cores} cores waited for one another {share}, perhaps other processes too; "
                f"--threads {self.cores} avoids it"
            )
        else:
            display = round(100 * self.median_display)
            other = max(0, round(100 * (self.median_lost - self.median_display)))
            who = [f"the display took {display}%"] if display else []
            if other or not who:
                who.append(f"other processes or the hypervisor {'took ' if not who else ''}{other}%")
            said = (
                f"{self.disturbed} of {self.steps} steps disturbed: {' and '.join(who)} of their time "
                f"(median; worst {100 * self.worst_lost:.0f}%)"
            )
        if not self.kept:
            if not self.left_out:
                return said + "; none in the statistics' window"
            return said + f"; the figures leave out {self.left_out} (--keep-disturbed keeps them)"
        if self.keep:
            return said + "; the figures include them (--keep-disturbed)"
        return said + "; the figures include them: fewer than 5 quiet steps to do without them"
