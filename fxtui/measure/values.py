"""What a node's output looks like, for display: its shape and dtype as text, and whether it holds NaN or inf.

Recorded by the timing interpreter on its first run (outside the timed regions), kept per node
in the graph description (``NodeInfo.shape``, ``dtype``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class ValueMeta:
    """Shape and dtype of a value a node produced, as text for display."""

    shape: str
    dtype: str
    nonfinite: str = ""
    """``"nan"`` when the value holds a NaN, else ``"inf"`` when it holds an infinity, else ``""``."""

    @property
    def finite(self) -> bool:
        """True when every element is finite."""
        return not self.nonfinite


def _worst(parts: Iterable[ValueMeta]) -> str:
    """NaN over inf over finite: what a nested value holds at worst."""
    kinds = {p.nonfinite for p in parts}
    return "nan" if "nan" in kinds else "inf" if "inf" in kinds else ""


def describe_value(value: Any, check_finite: bool = False) -> ValueMeta:
    """Describe a node's output: ``5×64×56×56`` for a tensor, ``(a, b)`` for tuples."""
    if isinstance(value, torch.Tensor):
        nonfinite = ""
        if check_finite and (value.is_floating_point() or value.is_complex()) and value.numel():
            nonfinite = _nonfinite(value)
        return ValueMeta("×".join(str(d) for d in value.shape) or "scalar", _dtype_name(value.dtype), nonfinite)
    if isinstance(value, (tuple, list)):
        parts = [describe_value(v, check_finite) for v in value]
        open_, close = ("(", ")") if isinstance(value, tuple) else ("[", "]")
        shown = ", ".join(p.shape for p in parts[:4]) + (", …" if len(parts) > 4 else "")
        dtypes = sorted({p.dtype for p in parts if p.dtype})
        return ValueMeta(open_ + shown + close, ",".join(dtypes), _worst(parts))
    if isinstance(value, dict):
        entries = {k: describe_value(v, check_finite) for k, v in value.items()}
        shown = ", ".join(f"{k}: {p.shape}" for k, p in list(entries.items())[:4])
        dtypes = sorted({p.dtype for p in entries.values() if p.dtype})
        return ValueMeta("{" + shown + "}", ",".join(dtypes), _worst(entries.values()))
    if value is None:
        return ValueMeta("None", "")
    if isinstance(value, (int, float, bool)):
        return ValueMeta(type(value).__name__, "")
    if isinstance(value, torch.Size):
        return ValueMeta("Size", "")
    return ValueMeta(type(value).__name__, "")


def _nonfinite(value: torch.Tensor) -> str:
    """``"nan"`` when ``value`` holds a NaN, else ``"inf"`` when it holds an infinity, else ``""``.

    A NaN or an infinity anywhere makes the sum NaN or infinite, so a finite sum settles
    it in one reduction; only a non-finite sum (which an overflow can also cause) needs the
    element-wise tests. Measured on BERT-base's 511 outputs and lifted weights: 0.02 s
    against 0.6 s for ``isfinite(value).all()`` alone.
    """
    if bool(torch.isfinite(value.sum())):
        return ""
    if bool(torch.isnan(value).any()):
        return "nan"
    return "inf" if bool(torch.isinf(value).any()) else ""


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def tensors_in(value: Any) -> list[torch.Tensor]:
    """The tensors anywhere in a nested structure (lists, tuples, dicts, dataclasses pytree knows)."""
    from torch.utils import _pytree as pytree

    return [t for t in pytree.tree_leaves(value) if isinstance(t, torch.Tensor)]


def storage_block(t: torch.Tensor) -> tuple[int, int]:
    """Address and size of the memory block behind ``t`` (shared by a tensor and its views)."""
    try:
        storage = t.untyped_storage()
        return storage.data_ptr(), storage.nbytes()
    except (RuntimeError, NotImplementedError):  # sparse and other storage-less tensors
        return -id(t), t.numel() * t.element_size()
