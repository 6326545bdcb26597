"""A node's output shape as data: the display text the engine records (``2×16``) read as lists of sizes.

The engine describes an output for people (:attr:`~fxtui.core.nodes.NodeInfo.shape`): ``5×64×56×56``
for a tensor, ``scalar`` for a 0-d one, ``(2×16, 2)`` for a tuple, ``{k: …}`` for a dict, a type name
(``int``, ``None``) for anything else, with ``…`` after the fourth part of a long sequence. A file
other tools read wants sizes as numbers: a tensor's shape is a list of ints (``[]`` for a scalar), a
tuple or list of tensors a list of those, and anything else (a dict, a number, a shape fxtui did not
record) has none (``None``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

_SIZES = re.compile(r"\d+(?:×\d+)*")


def shape_list(text: str) -> list[Any] | None:
    """``"2×16"`` → ``[2, 16]``; ``"scalar"`` → ``[]``; ``"(2×16, 2)"`` → ``[[2, 16], [2]]``; else None.

    A sequence cut short in the text (``…``) keeps the parts it shows.
    """
    parsed = _parsed(text)
    return None if parsed is None else _lists(parsed)


@lru_cache(maxsize=4096)
def _parsed(text: str) -> tuple[Any, ...] | None:
    """:func:`shape_list` as tuples, kept: a graph's nodes share a few shapes."""
    found = _parse(text)
    return None if found is None else _tuples(found)


def _tuples(shape: list[Any]) -> tuple[Any, ...]:
    return tuple(_tuples(s) if isinstance(s, list) else s for s in shape)


def _lists(shape: tuple[Any, ...]) -> list[Any]:
    return [_lists(s) if isinstance(s, tuple) else s for s in shape]


def _parse(text: str) -> list[Any] | None:
    text = text.strip()
    if text == "scalar":
        return []
    if _SIZES.fullmatch(text):
        return [int(size) for size in text.split("×")]
    if len(text) >= 2 and (text[0], text[-1]) in (("(", ")"), ("[", "]")):
        parts = [p for p in _split_top(text[1:-1]) if p != "…"]
        shapes = [_parse(p) for p in parts]
        return None if any(s is None for s in shapes) else shapes
    return None


def shape_text(shape: list[Any] | None) -> str:
    """The display text of a shape :func:`shape_list` read (for files that kept only the list)."""
    if shape is None:
        return ""
    if all(isinstance(size, int) for size in shape):
        return "×".join(map(str, shape)) if shape else "scalar"
    return "(" + ", ".join(shape_text(s) for s in shape) + ")"


def _split_top(text: str) -> list[str]:
    """``text`` split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    if tail:
        parts.append(tail)
    return parts
