"""What the user asked to profile, as plain data (no torch: it crosses into the engine's child process)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from fxtui.core.errors import FxtuiError


@dataclass(frozen=True)
class Target:
    """A model to profile and the inputs to give it, as the user named them."""

    target: str
    """``resnet18``, ``hf:bert``, ``package.module:attr`` or ``path/file.py:attr``."""
    input_shapes: tuple[tuple[int, ...], ...] | None = None
    dtype: str | None = None
    submodule: str | None = None
    capture: str = "auto"
    """``auto``, ``fx`` or ``dynamo`` (see :mod:`fxtui.engine.capture`)."""
    hf_config: tuple[tuple[str, str], ...] = ()
    """``--hf-config`` overrides for an ``hf:`` target, as (key, value text) pairs."""
    train: bool = False
    """Profile a whole training step (forward, loss, backward, optimizer) instead of inference."""
    optimizer: str = "sgd"
    """The optimizer of a training step: ``sgd`` or ``adamw``."""


def parse_shape(text: str) -> tuple[int, ...]:
    """Parse ``"5,3,224,224"``, ``"5x3x224x224"`` or ``"5×3×224×224"`` into a tuple of sizes."""
    parts = re.split(r"\s*[,x×X]\s*", text.strip())
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise FxtuiError(
            f"cannot read the shape {text!r}: write sizes separated by commas or x, like 1,3,224,224"
        ) from None
    if any(s < 1 for s in shape):
        raise FxtuiError(f"cannot use the shape {text!r}: every size must be at least 1")
    return shape


def parse_hf_config(text: str) -> tuple[tuple[str, str], ...]:
    """``"num_hidden_layers=2,hidden_size=64"`` → ``(("num_hidden_layers", "2"), ("hidden_size", "64"))``."""
    pairs = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise FxtuiError(f"--hf-config takes key=value pairs separated by commas, not {item!r}")
        pairs.append((key.strip(), value.strip()))
    return tuple(pairs)
