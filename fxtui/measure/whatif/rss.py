"""The process's resident memory during a what-if: what it held before and its peak meanwhile.

Linux keeps a process's peak resident set (``VmHWM`` in ``/proc/self/status``) and resets it
when ``5`` is written to ``/proc/self/clear_refs``; that catches a peak between two looks.
Where the reset is not allowed, the peak is the largest resident set seen at the points the
what-if looks (after each step of it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_bytes(field: str) -> int | None:
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        return None
    return None


def rss_bytes() -> int | None:
    """The resident set now; None where ``/proc`` does not say."""
    return _status_bytes("VmRSS")


class PeakRss:
    """The resident set before, and the peak from :meth:`start` until :meth:`peak` is read."""

    def __init__(self) -> None:
        self.before: int | None = None
        self._seen = 0
        self._reset = False

    def start(self) -> PeakRss:
        """Note the resident set now and start looking for the peak."""
        self.before = rss_bytes()
        self._seen = self.before or 0
        with contextlib.suppress(OSError):
            _CLEAR_REFS.write_text("5")
            self._reset = True
        return self

    def look(self) -> None:
        """Note the resident set now (the peak where the kernel's cannot be reset)."""
        self._seen = max(self._seen, rss_bytes() or 0)

    def looking(self, progress: Callable[[str], None]) -> Callable[[str], None]:
        """``progress``, noting the resident set at every step it is told of first."""

        def look(message: str) -> None:
            self.look()
            progress(message)

        return look

    def peak(self) -> int | None:
        """The largest resident set since :meth:`start`."""
        self.look()
        kernel = _status_bytes("VmHWM") if self._reset else None
        peak = max(self._seen, kernel or 0)
        return peak or None
