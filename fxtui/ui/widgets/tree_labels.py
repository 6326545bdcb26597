"""How a module-tree line reads: what an entry stands for, its name, its kind, and numbers fitted to the width.

Pure functions, apart from the tree widget, so the fitting rules (numbers at the
right edge; the class name, then the bar, give way on a narrow tree) can be read
and tested on their own.
"""

from __future__ import annotations

from typing import NamedTuple

from fxtui.core.units import format_pct, format_seconds

BAR_WIDTH = 8
#: Tree widths (cells) from which the time, then the bar, join the share.
TIME_FROM = 32
BAR_FROM = 56
_BLOCKS = " ▏▎▍▌▋▊▉█"
#: Each phase's bar in a generation's module line (two of them: the prefill's and the decode step's).
PHASE_BAR_WIDTH = 4
#: Cells of a compiled model's module times: `` 4.10 ms →   1.90 ms  ×0.46``.
_COMPILED_TIMES = 29
#: The backward part of a training step's bar: a lighter shade, told apart without colour too.
BACKWARD_BLOCK = "▒"

#: A label piece: its text and the tree's component class that styles it ("" for none).
Part = tuple[str, str]


class Entry(NamedTuple):
    """What a tree line stands for: a module path or a node name.

    A named tuple rather than a dataclass: the tree lists up to one per node after every
    filter change, and a frozen dataclass took ~4 µs to make.
    """

    kind: str
    """``"module"`` or ``"node"``."""
    key: str


def bar(fraction: float, width: int = BAR_WIDTH, backward: float = 0.0) -> str:
    """A left-aligned bar of eighth-blocks, ``width`` cells wide, for ``fraction`` in [0, 1].

    ``backward`` (a part of ``fraction``) ends the bar in :data:`BACKWARD_BLOCK` cells: a
    training step's forward time in solid blocks, its backward time shaded after it.
    """
    fraction = max(0.0, min(1.0, fraction))
    shaded = round(max(0.0, min(fraction, backward)) * width)
    eighths = round((fraction - shaded / width) * width * 8)
    full, part = divmod(max(eighths, 0), 8)
    text = "█" * full + (_BLOCKS[part] if part else "") + BACKWARD_BLOCK * shaded
    return text[:width].ljust(width)


def op_label(op: str, type_name: str) -> str:
    """A leaf's kind, marked by op type: ``Conv2d`` (a module), ``add()`` (a function), ``.view()`` (a method)."""
    if op == "call_function":
        return f"{type_name}()"
    if op == "call_method":
        return f".{type_name}()"
    if op == "get_attr":
        return "attr"
    return type_name


def short_node_name(name: str, module_path: str) -> str:
    """A node's name as its tree branch reads: the branch already names the module.

    ``layer1_0_relu_1`` in module ``layer1.0.relu`` → ``relu_1``; ``add_3`` stays ``add_3``.
    """
    if not module_path:
        return name
    base = module_path.replace(".", "_")
    if name == base or name.startswith(base + "_"):
        return module_path.rpartition(".")[2] + name[len(base) :]
    return name


def fit_label(
    name: str,
    kind: str,
    flag: Part | None,
    seconds: float | None,
    share: float | None,
    width: int,
    indent: int,
    backward_share: float | None = None,
) -> list[Part]:
    """A label for a tree ``width`` cells wide whose line starts ``indent`` cells in (guides, icon).

    Name, flag and kind sit on the left; time, share and bar at the right edge, so they
    line up at every depth (which numbers show depends on the tree's width, never on
    the depth). On a narrow tree the kind goes first, then the bar, then the time (the
    table beside the tree has the times); a name that still does not fit is cut with "…".
    ``backward_share`` (percent of the run, part of ``share``; a training step's modules only)
    shades the bar's backward part and adds the backward part of the entry's own time
    (``▒62%``: 62% of this module's time is its gradients, the rest its forward).
    """
    numbers: list[Part]
    if width >= TIME_FROM:
        numbers = [(f" {format_seconds(seconds):>9} {format_pct(share):>6}", "module-tree--time")]
    else:
        numbers = [(f" {format_pct(share):>6}", "module-tree--time")]
    if width >= BAR_FROM:
        shaded = (backward_share or 0.0) / 100.0
        numbers.append((" " + bar((share or 0.0) / 100.0, backward=shaded), "module-tree--bar"))
        if backward_share is not None:
            part = 100.0 * backward_share / share if share else 0.0
            numbers.append((f" {BACKWARD_BLOCK}{part:3.0f}%", "module-tree--time"))
    return _fit_head(name, kind, flag, numbers, width, indent)


def _fit_head(name: str, kind: str, flag: Part | None, numbers: list[Part], width: int, indent: int) -> list[Part]:
    """Name, flag and kind on the left of ``numbers``, cut to fit (see :func:`fit_label`)."""
    room = width - indent - sum(len(t) for t, _ in numbers)
    head: list[Part] = [(name, "")]
    used = len(name)
    if flag is not None:
        head.append(flag)
        used += len(flag[0])
    if used + 1 + len(kind) <= room:
        head.insert(1, (" " + kind, "module-tree--dim"))
        used += 1 + len(kind)
    elif used > room:
        # Too deep or too long: keep the start of the name (two characters at least) and "…",
        # cut to the room left so the numbers stay in their column.
        keep = max(room - 1, 2)
        head = [(name[:keep] + "…", "")] + ([flag] if flag is not None and keep >= len(name) else [])
        used = sum(len(t) for t, _ in head)
    pad = max(0, room - used)
    return [*head, (" " * pad, ""), *numbers]


def fit_phase_label(
    name: str, kind: str, flag: Part | None, prefill: float | None, decode: float | None, width: int, indent: int
) -> list[Part]:
    """A module's label in a ``generate()`` call: its share of the prefill and of a decode step, percent.

    ``P 20.1% D 45.3%``, each followed by a bar of its own from :data:`BAR_FROM` cells (the decode one
    shaded), so "attention is 20% of the prefill and 45% of a token" reads on one line.
    """
    numbers: list[Part] = []
    wide = width >= BAR_FROM
    for letter, share, shade in (("P", prefill, 0.0), ("D", decode, 1.0)):
        numbers.append((f" {letter}{format_pct(share):>6}", "module-tree--time"))
        if wide:
            fraction = (share or 0.0) / 100.0
            numbers.append((" " + bar(fraction, PHASE_BAR_WIDTH, backward=fraction * shade), "module-tree--bar"))
    return _fit_head(name, kind, flag, numbers, width, indent)


def fit_compiled_label(
    name: str,
    kind: str,
    flag: Part | None,
    eager: float | None,
    compiled: float | None,
    share: float | None,
    width: int,
    indent: int,
    fused: str | None = None,
) -> list[Part]:
    """A compiled model's module: its eager time → its compiled time, the ratio, and its share of the run.

    ``4.10 ms → 1.90 ms ×0.46`` (then the bar, from :data:`BAR_FROM` cells); a narrow tree keeps the ratio.
    A module whose eager run has no op of its own (its work fused into a kernel of its ancestor) reads ``–``.
    ``fused`` (a module with no kernel of its own: :func:`fxtui.core.compilation.fused_text`) takes the place of the
    compiled time, ratio and bar: ``11.1 ms → fused into (root)``.
    """
    ratio = f"×{compiled / eager:4.2f}" if eager and compiled is not None else "    –"
    numbers: list[Part]
    if fused is not None:
        if width < TIME_FROM:
            text = f" {'fused' if fused.startswith('fused') else '–':>6}"
        else:
            # As wide as a line with times (and bar), so the eager times line up; a longer text takes the name's room.
            room = _COMPILED_TIMES + (1 + BAR_WIDTH if width >= BAR_FROM else 0)
            text = f" {format_seconds(eager):>9} → {fused}".ljust(room)
        return _fit_head(name, kind, flag, [(text, "module-tree--time")], width, indent)
    if width >= TIME_FROM:
        numbers = [(f" {format_seconds(eager):>9} → {format_seconds(compiled):>9} {ratio:>6}", "module-tree--time")]
    else:
        numbers = [(f" {ratio:>6}", "module-tree--time")]
    if width >= BAR_FROM:
        numbers.append((" " + bar((share or 0.0) / 100.0), "module-tree--bar"))
    return _fit_head(name, kind, flag, numbers, width, indent)
