"""What fxtui's analysis finds, as plain torch-free data the UI and exports can carry.

The analysis itself (:mod:`fxtui.engine.analysis`) needs torch; its results do not,
so they live here and travel inside snapshots.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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


@dataclass(frozen=True, slots=True)
class WhatIf:
    """A transformation tried on the graph, measured against the original side by side."""

    title: str
    changed: tuple[tuple[str, ...], ...]
    """The node groups the transformation rewrote (e.g. each folded (conv, bn) pair)."""
    before_s: float
    """Uninstrumented median of the original graph."""
    after_s: float
    """Uninstrumented median of the transformed graph, runs interleaved with the original's."""
    max_abs_diff: float
    """Largest difference between the two graphs' outputs (0 for an exact rewrite)."""

    @property
    def saving_pct(self) -> float:
        """How much faster the transformed graph is, in percent of the original."""
        return 100.0 * (self.before_s - self.after_s) / self.before_s if self.before_s else 0.0


@dataclass(frozen=True, slots=True)
class MemorySummary:
    """The memory figures of one whole run (``fxtui.engine.analysis.memory``), in bytes.

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
    """How much other work on the machine took the CPU from the steps so far (``fxtui.engine.interference``)."""

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
        said = (
            f"{self.disturbed} of {self.steps} steps disturbed: other processes or the hypervisor took "
            f"{100 * self.median_lost:.0f}% of their time (median; worst {100 * self.worst_lost:.0f}%)"
        )
        if not self.kept:
            if not self.left_out:
                return said + "; none in the statistics' window"
            return said + f"; the figures leave out {self.left_out} (--keep-disturbed keeps them)"
        if self.keep:
            return said + "; the figures include them (--keep-disturbed)"
        return said + "; the figures include them: fewer than 5 quiet steps to do without them"
