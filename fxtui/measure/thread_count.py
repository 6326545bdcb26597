"""How many threads torch's intra-op work runs on, and how many cores this process may use."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import torch

from fxtui.core.errors import FxtuiError


@contextlib.contextmanager
def thread_limit(threads: int | None) -> Iterator[int]:
    """Run torch's intra-op work on ``threads`` threads inside the block; yields the value in force."""
    if threads is None:
        yield torch.get_num_threads()
        return
    if threads < 1:
        raise FxtuiError(f"--threads must be at least 1, not {threads}")
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask; the machine's count where there is none)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
