"""Bytes a model holds: its weights, and the key-value cache a ``generate()`` call builds.

Shared by ``--generate`` (:mod:`fxtui.measure.capture.generate`) and the agent's ``generate()``
watch, which counts them on sampled calls only.
"""

from __future__ import annotations

from typing import Any

import torch


def weight_bytes(module: torch.nn.Module) -> int:
    seen: set[int] = set()
    total = 0
    for t in (*module.parameters(), *module.buffers()):
        key = t.untyped_storage().data_ptr() if t.device.type != "meta" else id(t)
        if key not in seen:
            seen.add(key)
            total += t.untyped_storage().nbytes()
    return total


def cache_bytes(cache: Any) -> tuple[int, tuple[int, ...], str] | None:
    """The bytes of a key-value cache's tensors: total, per layer, and its class. None for no cache.

    A transformers ``Cache`` (``cache.layers``, each holding its tensors), or the legacy tuple of
    per-layer tuples of tensors.
    """
    if cache is None:
        return None
    layers = getattr(cache, "layers", None)
    if layers is None and isinstance(cache, (tuple, list)):
        layers = cache
    if layers is None:
        return None
    per_layer = tuple(_tensor_bytes(layer) for layer in layers)
    return sum(per_layer), per_layer, type(cache).__name__


def _tensor_bytes(value: Any) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (tuple, list)):
        return sum(_tensor_bytes(v) for v in value)
    if hasattr(value, "__dict__"):
        return sum(_tensor_bytes(v) for v in vars(value).values() if isinstance(v, (torch.Tensor, tuple, list)))
    return 0
