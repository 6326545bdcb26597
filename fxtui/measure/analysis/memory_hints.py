"""Hints from the memory pass: where the peak comes from, and what would cut it.

Like the timing rules of :mod:`~fxtui.measure.analysis.hint_rules`, each rule stays silent unless
the figures clearly say something; the evidence quotes them. A memory hint saves bytes, not
time, so its ``saving_s`` is None and the bytes are in its title.
"""

from __future__ import annotations

from collections.abc import Sequence

from fxtui.core.findings import Hint, MemorySummary
from fxtui.core.nodes import NodeInfo, module_memory
from fxtui.core.units import format_bytes

#: One node's temporaries dominate the peak when they are at least this share of the allocator's high-water mark.
TEMP_SHARE = 0.5
#: Activations matter for the batch size when their peak is at least this share of the parameters' bytes.
ACTIVATION_SHARE = 0.5
#: Saved-for-backward tensors are worth checkpointing when they are this share of the training step's live peak.
SAVED_SHARE = 0.5
#: Modules named in the checkpointing hint.
SHOWN = 3


def memory_hints(memory: MemorySummary, nodes: Sequence[NodeInfo], *, batch: int | None = None) -> list[Hint]:
    """Every memory hint that applies to a run whose summary is ``memory`` and whose nodes carry their bytes.

    ``batch`` is the leading dimension of the model's first input (None when it has none).
    """
    hints: list[Hint] = []
    for rule in (_temporaries, _checkpointing, _batch):
        found = rule(memory, nodes, batch)
        if found is not None:
            hints.append(found)
    return hints


def _temporaries(memory: MemorySummary, nodes: Sequence[NodeInfo], batch: int | None) -> Hint | None:
    """The allocator's peak is reached inside one node, mostly in buffers it frees before returning."""
    top = memory.high_water_bytes
    node = next((n for n in nodes if n.name == memory.high_water_node), None)
    if not top or node is None or node.alloc_bytes is None or node.output_bytes is None:
        return None
    temps = node.alloc_bytes - node.output_bytes
    if temps < TEMP_SHARE * top:
        return None
    return Hint(
        "memory-temporaries",
        f"{node.name}'s temporaries take {format_bytes(temps)} of the {format_bytes(top)} peak",
        (node.name,),
        f"{node.name} ({node.target}) allocates {format_bytes(node.alloc_bytes)} while it runs but keeps only"
        f" {format_bytes(node.output_bytes)} as output; the allocator's high-water mark, {format_bytes(top)}, is"
        f" reached inside it, above the {format_bytes(memory.peak_live_bytes)} of activations ever alive between"
        " nodes. Its workspaces and intermediate copies set the peak: a different algorithm or memory format"
        " (see its aten operators), a smaller chunk of the input at a time, or an in-place variant would lower it.",
        None,
        None,
    )


def _checkpointing(memory: MemorySummary, nodes: Sequence[NodeInfo], batch: int | None) -> Hint | None:
    """A training step whose peak is mostly forward outputs saved for backward."""
    saved, peak = memory.saved_bytes, memory.backward_peak_bytes
    if not saved or not peak or saved < SAVED_SHARE * max(peak, memory.peak_live_bytes):
        return None
    top = max(peak, memory.peak_live_bytes)
    rolled = module_memory(nodes)
    children = [(path, m.saved_bytes or 0) for path, m in rolled.items() if path and "." not in path and m.saved_bytes]
    children.sort(key=lambda pm: -pm[1])
    shown = "; ".join(f"{path} {format_bytes(b)}" for path, b in children[:SHOWN])
    return Hint(
        "memory-checkpointing",
        f"Activation checkpointing would cut the {format_bytes(saved)} kept for backward"
        f" ({saved / top:.0%} of the peak)",
        tuple(p for p, _ in children[:SHOWN]),
        f"The forward pass keeps {format_bytes(saved)} of its outputs for the backward pass"
        f" ({saved / top:.0%} of the step's {format_bytes(top)}"
        f" live peak, reached after {memory.peak_node})"
        + (f"; the most: {shown}" if shown else "")
        + ". torch.utils.checkpoint around those modules recomputes their activations during backward instead of"
        " keeping them (more time, less memory); when no gradients are needed, torch.inference_mode saves nothing.",
        None,
        None,
    )


def _batch(memory: MemorySummary, nodes: Sequence[NodeInfo], batch: int | None) -> Hint | None:
    """Activations, not weights, set the peak, and they scale with the batch size."""
    if batch is None or batch < 2 or memory.peak_live_bytes < ACTIVATION_SHARE * memory.param_bytes:
        return None
    if memory.peak_live_bytes == 0:
        return None
    half = max(batch // 2, 1)
    per_sample = memory.peak_live_bytes / batch
    return Hint(
        "memory-batch",
        f"The activation peak grows with the batch: about {format_bytes(per_sample)} per sample of {batch}",
        (memory.peak_node,),
        f"{format_bytes(memory.peak_live_bytes)} of activations are alive at once after {memory.peak_node}, against"
        f" {format_bytes(memory.param_bytes)} of parameters and buffers. Activations scale with the batch: a batch"
        f" of {half} would need about {format_bytes(per_sample * half)} at the peak"
        + (
            "; saved-for-backward tensors dominate a training step, so activation checkpointing cuts it too."
            if memory.saved_bytes
            else "."
        ),
        None,
        None,
    )
