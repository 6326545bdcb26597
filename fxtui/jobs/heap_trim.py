"""The collector process's C heap given back to the system after each full garbage-collection pass.

Measured at 256 ranks (``tests/benchmarks/bench_collector_heap.py``: :class:`~fxtui.jobs.job_state.JobState` fed
the recorded steps in this process, a viewer's snapshot every 0.25 s and a member's report every second of the
program's time, the collector's garbage-collection policy): from minute 3 to minute 10 what the collector holds did
not grow — malloc's bytes in use 258.7 → 258.6 MB, Python's allocated blocks ~2.02 M either side (the coarse
histories filling to :data:`~fxtui.jobs.kind_tally.HISTORY` and halving), the objects the garbage collector tracks
83,600–86,400, no garbage cycle held frozen — yet the RSS grew 518 → 532 MB. The growth was glibc's heap: each
snapshot and each report makes and frees ~100 MB of numpy arrays and buffers, which glibc takes from its heap (its
threshold for giving a large block its own mapping rises to the largest block freed), and the free chunks between
the live ones stay resident; the heap's free part grew 113 → 125 MB while the bytes in use stayed level.

So after each full pass (:func:`~fxtui.jobs.collector_gc.collect_if_due`, every ~5 s at 256 ranks) the collector's
loop asks glibc to give back the free pages of its heap (``malloc_trim(0)``: ~9 ms at 256 ranks, outside the
interpreter's lock, so the intake reads on). With it the heap stayed at 362 MB from minute 2 to minute 10 (against
372 → 384 MB) and the RSS fell back to ~415 MB after each trim (the next snapshots' arrays take pages again).
A C library without ``malloc_trim`` (not glibc) is left as it is.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable

_trim: Callable[[int], int] | None = None
_looked = False


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none."""
    global _trim, _looked
    if not _looked:
        _looked = True
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            function = libc.malloc_trim
        except (OSError, AttributeError):
            return None
        function.argtypes = [ctypes.c_size_t]
        function.restype = ctypes.c_int
        _trim = function
    return _trim


def available() -> bool:
    """Whether this process's C library can give back its heap's free pages."""
    return _malloc_trim() is not None


def trim() -> bool:
    """Give the system back the free pages of this process's C heap (the collector's process only: never called in
    the program's); True when some were given back, False when none were or the C library cannot."""
    function = _malloc_trim()
    return bool(function(0)) if function is not None else False
