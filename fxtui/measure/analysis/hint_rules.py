"""Rule-based suggestions: what to change, why, and roughly what it would save.

Each rule looks at the timings a session measured (per-node medians, their
spread), the work each node does and the thread settings, and either stays
silent or returns one :class:`Hint` with the numbers behind it. Rules prefer
silence: a hint that fires on every model teaches the user to ignore hints.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch import nn

from fxtui.core.findings import Hint, MemorySummary
from fxtui.core.nodes import NOISY_IQR_RATIO, UNSTEADY_RATIO, NodeInfo, is_unsteady
from fxtui.core.units import format_seconds
from fxtui.measure.analysis.cpu_setup import ThreadInfo
from fxtui.measure.analysis.memory_hints import memory_hints
from fxtui.measure.analysis.work import NodeWork
from fxtui.measure.capture.captured import CapturedModel, CapturedNode, one_graph_model
from fxtui.measure.capture.names import describe_target
from fxtui.measure.whatif.fold_bn import find_conv_bn

#: A node faster than this is mostly per-call overhead (Python, dispatch, allocation).
TINY_NODE_S = 20e-6
#: Tiny nodes must be at least this many, and this share of the run, to be worth a hint.
TINY_MIN_COUNT = 8
TINY_MIN_SHARE = 0.10
#: A node is slow against its peers when it reaches less than this fraction of their GFLOP/s …
PEER_SLOW_RATIO = 0.5
#: … and catching up would save at least this share of the run.
PEER_MIN_SAVING_SHARE = 0.01
#: Noisy nodes below this share of the run are not worth mentioning.
NOISY_MIN_SHARE = 0.01
#: Unsteady nodes are worth a hint when their medians exceed their fastest runs by this share of the run.
UNSTEADY_MIN_SHARE = 0.01
#: Convolutions must take this share of the run for a memory-format change to matter.
CONV_HEAVY_SHARE = 0.30

_RUNNABLE = ("call_module", "call_function", "call_method")


def suggest(
    captured: CapturedModel | torch.fx.GraphModule,
    medians: Mapping[str, float],
    run_median_s: float,
    *,
    noise: Mapping[str, float] | None = None,
    fastest: Mapping[str, float] | None = None,
    work: Mapping[str, NodeWork] | None = None,
    threads: ThreadInfo | None = None,
    inputs: Sequence[Any] = (),
    memory: MemorySummary | None = None,
    nodes: Sequence[NodeInfo] = (),
) -> tuple[Hint, ...]:
    """Every hint that applies, largest estimated saving first (unestimated ones last).

    ``medians`` maps node name → median seconds; ``run_median_s`` is the median of a
    whole run; ``noise`` maps node name → IQR/median; ``fastest`` maps node name →
    its fastest run in seconds; ``work`` comes from
    :func:`~fxtui.measure.analysis.work.measure_work`; ``inputs`` are the example
    inputs (for the memory-format rule); ``memory`` and ``nodes`` the memory pass's summary and
    the nodes carrying their bytes (:mod:`~fxtui.measure.analysis.memory_hints`). Rules whose
    inputs are missing stay silent.
    """
    if isinstance(captured, torch.fx.GraphModule):
        captured = one_graph_model(captured)
    ctx = _Context(captured, medians, run_median_s, noise or {}, fastest or {}, work or {}, threads, tuple(inputs))
    hints: list[Hint] = []
    for rule in RULES:
        hints.extend(rule(ctx))
    if memory is not None:
        first = next((x for x in inputs if isinstance(x, torch.Tensor) and x.dim() > 0), None)
        hints.extend(memory_hints(memory, nodes, batch=int(first.shape[0]) if first is not None else None))
    return tuple(sorted(hints, key=lambda h: -(h.saving_s if h.saving_s is not None else -1.0)))


@dataclass(frozen=True)
class _Context:
    captured: CapturedModel
    medians: Mapping[str, float]
    run_s: float
    noise: Mapping[str, float]
    fastest: Mapping[str, float]
    work: Mapping[str, NodeWork]
    threads: ThreadInfo | None
    inputs: tuple[Any, ...]

    def nodes(self) -> list[CapturedNode]:
        return [n for n in self.captured.nodes if n.node.op in _RUNNABLE and n.name in self.medians]

    def pct(self, seconds: float) -> float | None:
        return 100.0 * seconds / self.run_s if self.run_s > 0 else None

    def share(self, seconds: float) -> float:
        return seconds / self.run_s if self.run_s > 0 else 0.0

    def hint(
        self, rule: str, title: str, nodes: Sequence[str], evidence: str, saving_s: float | None, what_if: str = ""
    ) -> Hint:
        pct = None if saving_s is None else self.pct(saving_s)
        return Hint(rule, title, tuple(nodes), evidence, saving_s, pct, what_if)


def _conv_bn(ctx: _Context) -> list[Hint]:
    """A BatchNorm in eval mode right after a conv is a per-channel affine map: fold it away."""
    if not ctx.captured.mode.whole_modules:
        return []  # the fold swaps modules: it needs call_module nodes
    pairs = [(c, b) for c, b in find_conv_bn(ctx.captured.parts[0].gm) if b in ctx.medians]
    if not pairs:
        return []
    saving = sum(ctx.medians[b] for _, b in pairs)
    ranked = sorted(pairs, key=lambda p: -ctx.medians[p[1]])
    shown = "; ".join(f"{b} {format_seconds(ctx.medians[b])} after {c}" for c, b in ranked[:5])
    more = f"; … {len(pairs) - 5} more" if len(pairs) > 5 else ""
    n = len(pairs)
    return [
        ctx.hint(
            "conv-bn-fold",
            f"Fold {n} BatchNorm layer{'s' if n != 1 else ''} into the convolution before {'them' if n != 1 else 'it'}",
            [name for pair in ranked for name in pair],
            f"{shown}{more}. In eval mode each BatchNorm is a fixed per-channel scale and shift, so it can be"
            " folded into the conv's weights (torch.nn.utils.fusion.fuse_conv_bn_eval); the saving is the"
            " BatchNorms' time.",
            saving,
            "fold-bn",
        )
    ]


def _peer_key(ctx: _Context, pn: CapturedNode) -> str:
    node, gm = pn.node, pn.part.gm
    _, type_name = describe_target(gm, node)
    if node.op == "call_module":
        mod = gm.get_submodule(str(node.target))
        # Grouped and depthwise convolutions do far less work per byte; they are not comparable.
        if isinstance(mod, nn.modules.conv._ConvNd) and mod.groups > 1:
            return f"{type_name} (grouped)"
    return type_name


def _slow_vs_peers(ctx: _Context) -> list[Hint]:
    """A node far below the GFLOP/s that nodes of the same kind reach on this machine."""
    groups: dict[str, list[tuple[str, float, float]]] = {}
    for node in ctx.nodes():
        w = ctx.work.get(node.name)
        median = ctx.medians[node.name]
        if w is None or w.flops <= 0 or median <= 0:
            continue
        groups.setdefault(_peer_key(ctx, node), []).append((node.name, w.flops, w.flops / median / 1e9))
    hints = []
    for key, members in groups.items():
        if len(members) < 2:
            continue
        for name, flops, rate in members:
            peer_rate = statistics.median(r for n, _, r in members if n != name)
            if rate >= PEER_SLOW_RATIO * peer_rate:
                continue
            saving = ctx.medians[name] - flops / (peer_rate * 1e9)
            if ctx.share(saving) < PEER_MIN_SAVING_SHARE:
                continue
            factor = peer_rate / rate if rate > 0 else float("inf")
            hints.append(
                ctx.hint(
                    "slow-vs-peers",
                    f"{name} runs {factor:.1f}× slower per FLOP than the other {key} nodes",
                    [name],
                    f"{name}: {rate:.2f} GFLOP/s ({flops / 1e6:.1f} MFLOP in {format_seconds(ctx.medians[name])});"
                    f" median of {len(members) - 1} other {key} node{'s' if len(members) > 2 else ''}:"
                    f" {peer_rate:.2f} GFLOP/s. Check its shapes, strides and memory format, and which kernel"
                    " it runs (aten breakdown).",
                    saving,
                )
            )
    return hints


def _tiny_ops(ctx: _Context) -> list[Hint]:
    """Many nodes each too short for their own work to matter: the time is per-call overhead."""
    tiny = [n.name for n in ctx.nodes() if 0 < ctx.medians[n.name] < TINY_NODE_S]
    if len(tiny) < TINY_MIN_COUNT:
        return []
    total = sum(ctx.medians[n] for n in tiny)
    if ctx.share(total) < TINY_MIN_SHARE:
        return []
    # The fastest node does next to nothing: its time is what one call costs before any work.
    floor = min(ctx.medians[n] for n in tiny)
    saving = min(floor * len(tiny), total)
    ranked = sorted(tiny, key=lambda n: -ctx.medians[n])
    return [
        ctx.hint(
            "tiny-ops",
            f"{len(tiny)} nodes under {format_seconds(TINY_NODE_S)} take {100 * ctx.share(total):.0f}% of the run:"
            " fuse them (torch.compile) or batch more work per call",
            ranked,
            f"{len(tiny)} nodes each under {format_seconds(TINY_NODE_S)} add up to {format_seconds(total)}"
            f" of a {format_seconds(ctx.run_s)} run. The fastest takes {format_seconds(floor)}, about the fixed"
            f" cost of one call; saving that per call ≈ {format_seconds(saving)}.",
            saving,
            "compile",
        )
    ]


def _noisy(ctx: _Context) -> list[Hint]:
    """Nodes whose timings spread widely: their medians are less trustworthy."""
    noisy = [
        n.name
        for n in ctx.nodes()
        if ctx.noise.get(n.name, 0.0) > NOISY_IQR_RATIO and ctx.share(ctx.medians[n.name]) >= NOISY_MIN_SHARE
    ]
    if not noisy:
        return []
    ranked = sorted(noisy, key=lambda n: -ctx.medians[n])
    shown = "; ".join(f"{n}: IQR {100 * ctx.noise[n]:.0f}% of {format_seconds(ctx.medians[n])}" for n in ranked[:5])
    count = len(noisy)
    return [
        ctx.hint(
            "noisy",
            f"{count} node{'s' if count != 1 else ''} with noisy timings: pin threads and quiet the machine",
            ranked,
            f"{shown}{'; …' if count > 5 else ''}. Spread above {100 * NOISY_IQR_RATIO:.0f}% of the median"
            " usually means other processes share the cores, or more threads than cores; let more runs"
            " accumulate before comparing.",
            None,
        )
    ]


def _unsteady(ctx: _Context) -> list[Hint]:
    """Nodes whose typical run takes a multiple of their fastest: the extra is not their arithmetic."""
    found = [
        n.name for n in ctx.nodes() if n.name in ctx.fastest and is_unsteady(ctx.medians[n.name], ctx.fastest[n.name])
    ]
    excess = {n: ctx.medians[n] - ctx.fastest[n] for n in found}
    total = sum(excess.values())
    if not found or ctx.share(total) < UNSTEADY_MIN_SHARE:
        return []
    ranked = sorted(found, key=lambda n: -excess[n])
    shown = "; ".join(
        f"{n}: {format_seconds(ctx.medians[n])}, fastest {format_seconds(ctx.fastest[n])}" for n in ranked[:5]
    )
    count = len(found)
    return [
        ctx.hint(
            "unsteady",
            f"{count} node{'s' if count != 1 else ''} usually run{'' if count != 1 else 's'}"
            f" {UNSTEADY_RATIO:.0f}× or more slower than their fastest run: the extra is not their arithmetic",
            ranked,
            f"{shown}{'; …' if count > 5 else ''}. Each did the same work faster at least once, so the rest"
            " is memory (where the buffers landed, page faults) or the machine (another process, the"
            " hypervisor). It changes between sessions, and so does these nodes' rank. Small memory-bound"
            " operators are the usual victims; the what-if threads=1 shows whether they fare better on one thread."
            f" Up to {format_seconds(total)} if every run were as fast as the fastest.",
            total,
            "threads=1" if ctx.threads is not None and ctx.threads.intra_op > 1 else "",
        )
    ]


def _oversubscribed(ctx: _Context) -> list[Hint]:
    """More intra-op threads than cores the process may use."""
    t = ctx.threads
    if t is None or t.intra_op <= t.cores_available:
        return []
    return [
        ctx.hint(
            "threads-oversubscribed",
            f"Use at most {t.cores_available} threads: {t.intra_op} intra-op threads share"
            f" {t.cores_available} core{'s' if t.cores_available != 1 else ''}",
            [],
            f"torch.get_num_threads() = {t.intra_op}, cores available to this process = {t.cores_available}"
            f" (of {t.cpu_count}). Threads beyond the core count take turns and wait on each other in every"
            f" parallel operator; try --threads {t.cores_available} or torch.set_num_threads({t.cores_available}).",
            None,
            f"threads={t.cores_available}",
        )
    ]


def _is_conv(ctx: _Context, pn: CapturedNode) -> bool:
    node = pn.node
    if node.op == "call_module":
        return isinstance(pn.part.gm.get_submodule(str(node.target)), nn.Conv2d)
    return node.op == "call_function" and node.target in (torch.conv2d, torch.nn.functional.conv2d)


_POOL_FUNCTIONS = (torch.nn.functional.max_pool2d, torch.nn.functional.avg_pool2d, torch.max_pool2d)


def _is_pool(ctx: _Context, pn: CapturedNode) -> bool:
    node = pn.node
    if node.op == "call_module":
        return isinstance(pn.part.gm.get_submodule(str(node.target)), (nn.MaxPool2d, nn.AvgPool2d))
    return node.op == "call_function" and node.target in _POOL_FUNCTIONS


def _channels_last(ctx: _Context) -> list[Hint]:
    """A conv-heavy model fed NCHW-contiguous images: oneDNN's convolutions prefer NHWC.

    2-D pooling counts too: PyTorch's CPU pooling has separate NHWC kernels. On resnet18's
    stem max pool (5×64×112×112, torch 2.15, 2 cores) the NCHW one measured 17× slower.
    """
    convs = [n.name for n in ctx.nodes() if _is_conv(ctx, n)]
    pools = [n.name for n in ctx.nodes() if _is_pool(ctx, n)]
    conv_s = sum(ctx.medians[n] for n in convs)
    spatial_s = conv_s + sum(ctx.medians[n] for n in pools)
    if not convs or ctx.share(spatial_s) < CONV_HEAVY_SHARE:
        return []
    nchw = [x for x in ctx.inputs if _nchw_only(x)]
    if not nchw:
        return []
    shape = "×".join(str(d) for d in nchw[0].shape)
    what = "convolutions and pooling" if pools else "convolutions"
    counted = f"{len(convs)} Conv2d nodes" + (
        f" and {len(pools)} pooling node{'s' if len(pools) != 1 else ''}" if pools else ""
    )
    pooling = (
        " PyTorch's CPU pooling has separate NHWC kernels, which can be much faster than the NCHW ones."
        if pools
        else ""
    )
    return [
        ctx.hint(
            "channels-last",
            f"Try channels-last memory format: {what} take {100 * ctx.share(spatial_s):.0f}% of the run",
            sorted(convs + pools, key=lambda n: -ctx.medians[n]),
            f"{counted} take {format_seconds(spatial_s)} of a {format_seconds(ctx.run_s)} run and the"
            f" input ({shape}) is NCHW-contiguous. oneDNN convolutions work in NHWC and reorder NCHW tensors on"
            f" the way in and out.{pooling} model.to(memory_format=torch.channels_last) and the same for the input"
            " often speed them up. Measure: the gain depends on the shapes.",
            None,
            "channels-last",
        )
    ]


def _nchw_only(x: Any) -> bool:
    """A 4-D tensor laid out NCHW, for which channels-last would be a different layout."""
    if not isinstance(x, torch.Tensor) or x.dim() != 4:
        return False
    _, c, h, w = x.shape
    if c == 1 or h * w == 1:
        return False  # both layouts are the same memory
    return x.is_contiguous() and not x.is_contiguous(memory_format=torch.channels_last)


RULES: tuple[Callable[[_Context], list[Hint]], ...] = (
    _conv_bn,
    _slow_vs_peers,
    _tiny_ops,
    _noisy,
    _unsteady,
    _oversubscribed,
    _channels_last,
)
"""Every rule, in the order they are evaluated."""
