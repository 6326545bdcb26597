"""The example inputs a model is run with: positional and keyword values, copied fresh for every run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.utils._pytree as pytree


@dataclass(frozen=True)
class Inputs:
    """Positional and keyword inputs of one model call.

    Transformers models take keywords (``input_ids=…, attention_mask=…``); torchvision
    models one positional tensor, or a list of images.
    """

    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def fresh(self) -> Inputs:
        """Copies of every tensor, so a model that mutates its input sees the same data each run."""
        return Inputs(clone_values(self.args), clone_values(dict(self.kwargs)))

    def tensors(self) -> list[torch.Tensor]:
        """Every tensor among the inputs, in order."""
        return [x for x in pytree.tree_leaves((self.args, dict(self.kwargs))) if isinstance(x, torch.Tensor)]

    def describe(self) -> tuple[str, ...]:
        """One description per input: ``1×3×224×224``, ``list[3×320×320]``, ``input_ids: 1×128``."""
        return tuple(describe_value(v) for v in self.args) + tuple(
            f"{k}: {describe_value(v)}" for k, v in self.kwargs.items()
        )

    def call(self, fn: Any) -> Any:
        """``fn(*args, **kwargs)``."""
        return fn(*self.args, **self.kwargs)


def clone_values(value: Any) -> Any:
    """``value`` with every tensor in it cloned (through tuples, lists and dicts)."""
    return pytree.tree_map_only(torch.Tensor, lambda t: t.clone(), value)


def describe_value(value: Any) -> str:
    """A short description of an input: ``1×3×224×224``, ``list[3×320×320]``, ``int``."""
    if isinstance(value, torch.Tensor):
        return "×".join(str(s) for s in value.shape) if value.dim() else "scalar"
    if isinstance(value, (list, tuple)):
        kind = "list" if isinstance(value, list) else "tuple"
        return f"{kind}[{', '.join(describe_value(v) for v in value)}]"
    if isinstance(value, dict):
        return "dict[" + ", ".join(f"{k}: {describe_value(v)}" for k, v in value.items()) + "]"
    if isinstance(value, (bool, int, float)) or value is None:
        return repr(value)
    return type(value).__name__
