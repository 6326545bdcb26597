"""Text tables that fit a width: the widest text columns shortened first, figures never cut.

A terminal 80 or 100 columns wide wrapped every line of a 184-column table. :func:`fit_table` lays a
table out as the headless command prints it (a header, a rule, two spaces between columns, numbers
right-aligned) within ``width``:

1. at its natural width when that fits (and always when ``width`` is None: files and pipes get
   every column whole);
2. else the widest shortenable text column loses a character, again and again, each down to a floor
   (its header, and at least :data:`MIN_TEXT`), the cut marked with ``…`` where it loses least (a
   module path keeps its end, a list of marks whole items);
3. else columns the table marks as expendable are left out, the least useful first, and a last line
   names them.

Figures (times, shares, counts, shapes) are never cut: a shortened figure would read as another one.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

#: A text column is never shortened below this many characters (nor below its header).
MIN_TEXT = 8
#: The narrowest a text column is squeezed to when even every floor is too wide for the terminal.
SQUEEZE = 4
#: The space between two columns.
GAP = "  "


@dataclass(frozen=True)
class Col:
    """How one column of a table lays out."""

    header: str
    numeric: bool = False
    """Right-aligned, and never cut (a figure)."""
    cut: str = "end"
    """Where an over-long cell loses characters: ``end``, ``start`` (paths: their end says most), ``items``
    (a comma-separated list: whole items), or ``never`` (a figure such as a shape)."""
    drop: int = 0
    """0: always shown; otherwise left out when even shortened the table is too wide, highest first."""
    floor: int = MIN_TEXT
    """The narrowest the column is shortened to (never below its header)."""


def fit_table(rows: Sequence[Sequence[object]], cols: Sequence[Col], width: int | None = None) -> str:
    """``rows`` (one cell per column) under ``cols``' headers, within ``width`` characters when given."""
    cells = [[str(c) for c in row] for row in rows]
    keep = list(range(len(cols)))
    widths = _fit([cols[i] for i in keep], [[r[i] for i in keep] for r in cells], width)
    while widths is None:
        droppable = [i for i in keep if cols[i].drop]
        if not droppable:  # nothing more to leave out: the text columns below their floors, to fit all the same
            widths = _squeezed([cols[i] for i in keep], [[r[i] for i in keep] for r in cells], width)
            break
        keep.remove(max(droppable, key=lambda i: (cols[i].drop, i)))
        widths = _fit([cols[i] for i in keep], [[r[i] for i in keep] for r in cells], width)
    shown = [cols[i] for i in keep]
    lines = [
        _line([c.header for c in shown], shown, widths),
        GAP.join("-" * w for w in widths),
        *(_line([_cut(r[i], cols[i], w) for i, w in zip(keep, widths, strict=True)], shown, widths) for r in cells),
    ]
    text = "\n".join(line.rstrip() for line in lines)
    left_out = [c.header for i, c in enumerate(cols) if i not in keep]
    if left_out and width is not None:
        said = f"left out to fit {width} columns: {', '.join(left_out)} (a wider terminal shows them)"
        text += "\n" + textwrap.fill(said, width, break_on_hyphens=False)
    return text


def _natural(cols: Sequence[Col], cells: Sequence[Sequence[str]]) -> list[int]:
    return [max([len(c.header), *(len(r[i]) for r in cells)]) for i, c in enumerate(cols)]


def _floor(col: Col, natural: int) -> int:
    if col.numeric or col.cut == "never":
        return natural
    return min(natural, max(len(col.header), col.floor))


def _floors(cols: Sequence[Col], cells: Sequence[Sequence[str]]) -> list[int]:
    return [_floor(c, n) for c, n in zip(cols, _natural(cols, cells), strict=True)]


def _squeezed(cols: Sequence[Col], cells: Sequence[Sequence[str]], width: int | None) -> list[int]:
    """The floors, then the widest text column one character narrower at a time (down to :data:`SQUEEZE`) until
    the table fits ``width``: a row wider than the terminal wraps and reads worse than a shorter name."""
    widths = _floors(cols, cells)
    gaps = len(GAP) * (len(cols) - 1)
    while width is not None and sum(widths) + gaps > width:
        text = [i for i, c in enumerate(cols) if not c.numeric and c.cut != "never" and widths[i] > SQUEEZE]
        if not text:
            break
        widths[max(text, key=lambda i: widths[i])] -= 1
    return widths


def _fit(cols: Sequence[Col], cells: Sequence[Sequence[str]], width: int | None) -> list[int] | None:
    """Column widths within ``width`` by shortening the widest text columns first; None when even the floors
    are too wide."""
    widths = _natural(cols, cells)
    if width is None:
        return widths
    floors = [_floor(c, n) for c, n in zip(cols, widths, strict=True)]
    gaps = len(GAP) * (len(cols) - 1)
    if sum(floors) + gaps > width:
        return None
    natural = list(widths)
    excess = sum(widths) + gaps - width
    while excess > 0:
        widest = max((i for i in range(len(cols)) if widths[i] > floors[i]), key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1
    # A column cut at whole items may need less than it was given: the rest goes back to the columns cut most
    # (not to one cut at whole items, where a character more shows nothing more).
    used = [max([len(c.header), *(len(_cut(r[i], c, widths[i])) for r in cells)]) for i, c in enumerate(cols)]
    spare = sum(widths) - sum(used)
    widths = used
    while spare > 0:
        cut = [i for i in range(len(cols)) if widths[i] < natural[i] and cols[i].cut != "items"]
        if not cut:
            break
        widths[max(cut, key=lambda i: natural[i] - widths[i])] += 1
        spare -= 1
    return widths


def _cut(text: str, col: Col, width: int) -> str:
    """``text`` within ``width``, the cut marked with ``…``."""
    if len(text) <= width:
        return text
    if col.cut == "start":
        return "…" + text[len(text) - width + 1 :]
    if col.cut == "items":
        items = text.split(", ")
        while len(items) > 1:
            items.pop()
            shortened = ", ".join(items) + ", …"
            if len(shortened) <= width:
                return shortened
    return text[: width - 1] + "…"


def _line(texts: Sequence[str], cols: Sequence[Col], widths: Sequence[int]) -> str:
    return GAP.join(t.rjust(w) if c.numeric else t.ljust(w) for t, c, w in zip(texts, cols, widths, strict=True))


#: A number and the word after it (``207 ms``, ``12 of``) stay on one line when a line wraps.
_FIGURE = re.compile(r"(?<=\d) (?=\S)")
#: A labelled line's label column (``fidelity   ``): wrapped lines continue under its text.
LABEL = 11


def wrap_line(line: str, width: int | None, indent: int = LABEL) -> str:
    """``line`` wrapped within ``width`` (None: whole), continued ``indent`` spaces in (under the text after a
    header line's label); a number is never parted from the word after it."""
    if width is None or len(line) <= width or width < indent + 20:
        return line
    glued = _FIGURE.sub("\u00a0", line)
    wrapped = textwrap.wrap(
        glued, width, subsequent_indent=" " * indent, break_long_words=False, break_on_hyphens=False
    )
    if any(len(part) > width for part in wrapped):
        # A figure glued to its words, or one word (a whole torchrun command's path), longer than the line: the
        # line fits the terminal all the same, broken where it must be.
        wrapped = textwrap.wrap(line, width, subsequent_indent=" " * indent, break_on_hyphens=False)
    return "\n".join(part.replace("\u00a0", " ") for part in wrapped)
