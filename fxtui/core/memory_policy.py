"""The names of the allocator policies a profile ran under, and what each means for the figures.

The policy itself is set by :mod:`fxtui.measure.allocator` in the process that runs the model;
the headless header and the app's threads screen say which one ran with :func:`describe`.
"""

from __future__ import annotations

KEEP = "keep"
"""Freed memory stays in the process; blocks come from the heap (see :mod:`fxtui.measure.allocator`)."""
GLIBC = "glibc"
"""glibc's own policy: large blocks mapped afresh, freed memory returned to the system."""
SYSTEM = "system"
"""A C library fxtui cannot tune (not glibc): whatever it does."""


def describe(name: str) -> str:
    """One line for a report header: what the policy means for the figures."""
    if name == KEEP:
        return "freed memory kept in the process: no node pays page faults for buffers the allocator gave back"
    if name == GLIBC:
        return "glibc's default: large buffers are mapped afresh, and the nodes that fill them pay page faults"
    if name == SYSTEM:
        return "the C library's own policy (not glibc; fxtui leaves it alone)"
    return name
