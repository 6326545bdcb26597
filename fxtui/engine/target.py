"""What the user asked to profile, as plain data (no torch: it crosses into the engine's child process)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from fxtui.engine.errors import FxtuiError


@dataclass(frozen=True)
class Target:
    """A model to profile and the inputs to give it, as the user named them."""

    target: str
    """``resnet18``, ``package.module:attr`` or ``path/file.py:attr``."""
    input_shapes: tuple[tuple[int, ...], ...] | None = None
    dtype: str | None = None
    submodule: str | None = None


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
