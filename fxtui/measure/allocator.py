"""How the profiling process hands freed memory back to the system.

PyTorch allocates every CPU tensor with the C library's ``malloc``. glibc, by
default, serves large blocks with fresh ``mmap`` mappings and returns freed memory
at the top of its heap to the system. Which buffers come back as fresh pages
depends on everything the process allocated before, so it differs from one session
to the next — and a node whose output lands in fresh pages pays a page fault per
4 KiB. Measured on resnet18 5×3×224×224 (2 cores): some sessions took about
10,000 minor faults per run and others none, conv1 took 17 ms instead of 12 ms
(one thread), and two such sessions gave node shares 3 percentage points apart.

:func:`keep_freed_memory` switches glibc to keep freed memory in the process and
serve every block from its heap. After warm-up no run takes a page fault, and a
node's time no longer depends on the allocator's history. It changes the process
as a whole, so fxtui's own processes (the command line and the live engine) call
it; the Python API leaves the caller's process alone unless asked.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

from fxtui.core.memory_policy import GLIBC, KEEP, SYSTEM

#: ``mallopt`` parameters from glibc's ``malloc.h``.
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_INT_MAX = 2**31 - 1

_policy: str | None = None


def keep_freed_memory() -> str:
    """Make glibc keep freed memory in this process. Returns the policy now in force.

    Returns :data:`KEEP` on glibc and :data:`SYSTEM` elsewhere (nothing changed).
    """
    global _policy
    libc = _glibc()
    if libc is None:
        _policy = SYSTEM
        return _policy
    trimmed = libc.mallopt(_M_TRIM_THRESHOLD, _INT_MAX)
    mapped = libc.mallopt(_M_MMAP_MAX, 0)
    _policy = KEEP if trimmed == 1 and mapped == 1 else GLIBC
    return _policy


def policy() -> str:
    """The policy in force: :data:`KEEP`, :data:`GLIBC` or :data:`SYSTEM`."""
    if _policy is not None:
        return _policy
    return GLIBC if platform.libc_ver()[0] == "glibc" else SYSTEM


def _glibc() -> ctypes.CDLL | None:
    if platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
