"""Printing for the command line: text that falls back to ASCII where the terminal cannot show it, the width
tables fit, and the lines that say which files were written."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from fxtui.report.data import ReportData

# What fxtui prints beyond ASCII, and what it prints instead where the terminal's
# encoding (a non-UTF-8 locale) cannot show it.
_ASCII = str.maketrans(
    {"×": "x", "µ": "u", "Σ": "sum ", "−": "-", "…": "...", "→": "->", "Δ": "d", "÷": "/", "–": "-", "·": "-",
     "∇": "grad ", "←": "<-", "≈": "~"}
)  # fmt: skip


def say(text: str, file: TextIO | None = None) -> None:
    """Print ``text``, falling back to ASCII where the stream cannot encode it."""
    stream = file or sys.stdout
    encoding = getattr(stream, "encoding", None) or "ascii"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        text = text.translate(_ASCII).encode(encoding, "replace").decode(encoding, "replace")
    print(text, file=stream)


def table_width() -> int | None:
    """The width the tables fit: ``COLUMNS`` when set, else the terminal's when stdout is one; None (every line
    whole) when stdout is a file or a pipe, which want every column."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    stream = sys.stdout  # the tables' stream (stderr when an export has stdout to itself)
    if not _is_terminal(stream):
        return None
    try:
        # A terminal that cannot say its size (a new pseudo-terminal says 0) gets 80 columns.
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (AttributeError, OSError, ValueError):
        return shutil.get_terminal_size().columns


def _is_terminal(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):
        return False


def write_exports(report: ReportData, paths: Mapping[str, str]) -> None:
    """Write every export asked for and say where each went, the ones written before a failure too."""
    from fxtui.report.export import ExportError, export

    try:
        written = export(report, paths)
    except ExportError as e:
        for path in e.written:
            say(f"wrote {path}")
        raise
    for path in written:
        say(f"wrote {path}")
