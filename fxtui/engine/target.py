"""What the user asked to profile, as plain data (no torch: it crosses into the engine's child process)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """A model to profile and the inputs to give it, as the user named them."""

    target: str
    """``resnet18``, ``package.module:attr`` or ``path/file.py:attr``."""
    input_shapes: tuple[tuple[int, ...], ...] | None = None
    dtype: str | None = None
    submodule: str | None = None
