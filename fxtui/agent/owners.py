"""The model the program owns, around a module it calls at the top.

A module called outside every other is a *root* of the tree, and its paths name the rows. When
the program's own model is never called itself — Lightning calls ``training_step``, which calls
``self.net(x)``; a VAE's ``model.decode(z)`` calls ``self.fc3`` — the called module is only part
of it, and its paths (``0``, ``3``) say little. The model that holds it is found where the call
came from: a module among the calling frames' locals (``self`` first) of which the called one is
a part. Done once, when a module is first called at the top; only frames' locals are read.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import torch

#: Calling frames looked at, from the innermost.
FRAMES = 24


def owner_of(module: torch.nn.Module, frame: types.FrameType | None = None) -> torch.nn.Module | None:
    """The module among the calling frames' locals that holds ``module`` (the outermost such), or None."""
    frame = frame or sys._getframe(1)
    found: torch.nn.Module | None = None
    seen: set[int] = {id(module)}
    for _ in range(FRAMES):
        if frame is None:
            break
        for candidate in _modules_in(frame):
            if id(candidate) in seen:
                continue
            seen.add(id(candidate))
            if _holds(candidate, module if found is None else found):
                found = candidate
        frame = frame.f_back
    return found


def _modules_in(frame: types.FrameType) -> list[torch.nn.Module]:
    """The modules a frame's locals hold, ``self`` first."""
    try:
        values: dict[str, Any] = dict(frame.f_locals)
    except Exception:  # a frame whose locals cannot be read as a mapping
        return []
    first = values.pop("self", None)
    found = [first] if isinstance(first, torch.nn.Module) else []
    return found + [v for v in values.values() if isinstance(v, torch.nn.Module)]


def _holds(outer: torch.nn.Module, inner: torch.nn.Module) -> bool:
    return any(m is inner for m in outer.modules())
