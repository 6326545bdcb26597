"""How far a changed model's outputs are from the original's, so speed and accuracy are read together."""

from __future__ import annotations

from typing import Any

import torch
import torch.utils._pytree as pytree


def output_difference(original: Any, changed: Any) -> tuple[float | None, float | None]:
    """``(max_abs_diff, max_rel_diff)`` between two outputs of the same call.

    The outputs are flattened into their tensors (tuples, dicts, a transformers
    ``ModelOutput``); floating tensors are compared pairwise in float32, whatever their
    dtype or memory format. ``max_abs_diff`` is the largest ``|a − b|`` of any of them;
    ``max_rel_diff`` is, per tensor, ``max|a − b| ÷ max|a|`` (the error against the size of
    that output, so logits and hidden states of different scales are judged alike), and the
    largest over the tensors. Equal non-finite values count as equal; a NaN or an infinity
    on one side only is an infinite difference. ``(None, None)`` when there is no floating
    tensor to compare or the two outputs do not have the same structure and shapes.
    """
    a = [x for x in pytree.tree_leaves(original) if isinstance(x, torch.Tensor)]
    b = [x for x in pytree.tree_leaves(changed) if isinstance(x, torch.Tensor)]
    if len(a) != len(b):
        return None, None
    abs_max: float | None = None
    rel_max: float | None = None
    for x, y in zip(a, b, strict=True):
        if not (x.is_floating_point() and y.is_floating_point()):
            continue
        if x.shape != y.shape:
            return None, None
        xf, yf = x.detach().float(), y.detach().float()
        diff = (xf - yf).abs()
        same = (xf == yf) | (xf.isnan() & yf.isnan())
        diff = torch.where(same, torch.zeros_like(diff), diff.nan_to_num(nan=float("inf")))
        largest = float(diff.max()) if diff.numel() else 0.0
        finite = xf[xf.isfinite()]
        scale = float(finite.abs().max()) if finite.numel() else 0.0
        relative = largest / scale if scale > 0 else (0.0 if largest == 0 else float("inf"))
        abs_max = largest if abs_max is None else max(abs_max, largest)
        rel_max = relative if rel_max is None else max(rel_max, relative)
    return abs_max, rel_max
