"""The header's line on nodes that ran at several output shapes within a step (a module reused at two shapes)."""

from __future__ import annotations

from collections.abc import Mapping

#: Nodes named in the line, at most (the rest are counted).
NAMED = 2


def step_shapes_lines(step_shapes: Mapping[str, tuple[str, ...]], medians: Mapping[str, float]) -> list[str]:
    """``shapes`` lines saying which rows hold calls at several shapes in one step (the slowest named, by their
    ``medians``); none when no node did."""
    if not step_shapes:
        return []
    named = sorted(step_shapes.items(), key=lambda kv: -medians.get(kv[0], 0.0))[:NAMED]
    said = "; ".join(f"{name} at {', '.join(s or 'scalar' for s in shapes)}" for name, shapes in named)
    more = len(step_shapes) - len(named)
    rest = f" and {more} more" if more else ""
    return [
        f"shapes     {len(step_shapes)} node(s) ran at several output shapes in each step ({said}{rest}): each such "
        "row's median, share and calls hold all of its calls; its output shape is its first call's"
    ]
