"""Printing for the command line: text that falls back to ASCII where the terminal cannot show it."""

from __future__ import annotations

import sys
from typing import TextIO

# What fxtui prints beyond ASCII, and what it prints instead where the terminal's
# encoding (a non-UTF-8 locale) cannot show it.
_ASCII = str.maketrans(
    {"×": "x", "µ": "u", "Σ": "sum ", "−": "-", "…": "...", "→": "->", "Δ": "d", "÷": "/", "–": "-", "·": "-"}
)


def say(text: str, file: TextIO | None = None) -> None:
    """Print ``text``, falling back to ASCII where the stream cannot encode it."""
    stream = file or sys.stdout
    encoding = getattr(stream, "encoding", None) or "ascii"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        text = text.translate(_ASCII).encode(encoding, "replace").decode(encoding, "replace")
    print(text, file=stream)
