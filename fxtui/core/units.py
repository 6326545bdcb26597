"""Human units for durations and rates, picked per value (torch.utils.benchmark style)."""

from __future__ import annotations

import math
from collections.abc import Callable

_TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def format_seconds(seconds: float | None, digits: int = 3) -> str:
    """``0.00123`` → ``"1.23 ms"``; ``None`` → ``"–"``."""
    if seconds is None or math.isnan(seconds):
        return "–"
    if seconds == 0:
        return "0 s"
    magnitude = abs(seconds)
    scale, unit = next(((sc, u) for sc, u in _TIME_UNITS if magnitude >= sc), _TIME_UNITS[-1])
    value = seconds / scale
    return f"{value:.{max(digits - len(str(int(abs(value)))), 0)}f} {unit}"


def format_signed_seconds(seconds: float) -> str:
    """``+1.20 ms`` / ``−350 µs`` (a real minus sign), for a change."""
    return ("−" if seconds < 0 else "+") + format_seconds(abs(seconds))


def format_signed_pct(pct: float | None) -> str:
    """``+12.5%`` / ``−3.0%`` (a real minus sign), for a change; ``–`` when there is none (it was zero before)."""
    return "–" if pct is None else f"{pct:+.1f}%".replace("-", "−")


def format_pct(pct: float | None) -> str:
    """``12.345`` → ``"12.3%"``."""
    return "–" if pct is None else f"{pct:.1f}%"


def format_ratio(ratio: float | None) -> str:
    """``1.0234`` → ``"1.023"``."""
    return "–" if ratio is None else f"{ratio:.3f}"


_BYTE_UNITS = ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))


def format_bytes(nbytes: float | None, digits: int = 3) -> str:
    """``16056320`` → ``"15.3 MiB"``; ``512`` → ``"512 B"``; ``None`` → ``"–"`` (binary units, as ``free -h``)."""
    if nbytes is None:
        return "–"
    magnitude = abs(nbytes)
    for scale, unit in _BYTE_UNITS:
        if magnitude >= scale:
            value = nbytes / scale
            return f"{value:.{max(digits - len(str(int(abs(value)))), 0)}f} {unit}"
    return f"{int(nbytes)} B"


def format_range(low: float | None, high: float | None, fmt: Callable[[float], str]) -> str:
    """`` (0.981–1.012)``: a figure's range, to follow it; ``""`` when unknown."""
    if low is None or high is None:
        return ""
    return f" ({fmt(low)}–{fmt(high)})"
