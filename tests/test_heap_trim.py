"""The collector process gives its C heap's free pages back after each full garbage-collection pass
(``fxtui/jobs/heap_trim.py``): what a trim gives back, and that the collector's loop trims after a pass that ran
(and only then)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import watch_three_snapshots

from fxtui.jobs import collector_gc, daemon, heap_trim

pytestmark = pytest.mark.unit


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not heap_trim.available() or not os.path.exists("/proc/self/statm"), reason="glibc on Linux")
def test_a_trim_gives_back_the_free_chunks_between_live_ones() -> None:
    # As a snapshot's arrays are: blocks under malloc's mapping threshold, taken from its heap and freed between
    # blocks that live on; their pages stay resident until the heap is trimmed.
    size, count = 100_000, 320
    freed, kept = [], []
    for _ in range(count):
        block = bytearray(size)
        block[::4096] = b"\x01" * len(range(0, size, 4096))  # every page written: resident
        freed.append(block)
        kept.append(bytearray(2_000))  # a live block after each: the free ones cannot merge into the heap's top
    freed.clear()
    before = _rss()
    heap_trim.trim()
    given_back = before - _rss()
    assert given_back >= size * count // 2, (given_back, size * count)
    assert len(kept) == count


def test_without_malloc_trim_nothing_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap_trim, "_looked", True)
    monkeypatch.setattr(heap_trim, "_trim", None)
    assert not heap_trim.available()
    assert heap_trim.trim() is False


def test_the_collectors_loop_trims_the_heap_after_a_full_pass_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    order: list[str] = []
    due = iter([False, True, False])

    def due_pass() -> bool:
        order.append("due pass")
        return next(due)

    def trim() -> bool:
        order.append("trim")
        return True

    monkeypatch.setattr(collector_gc, "collect_if_due", due_pass)
    monkeypatch.setattr(heap_trim, "trim", trim)
    monkeypatch.setattr(daemon, "INTERVAL", 0.001)

    watch_three_snapshots(tmp_path, order)
    assert order == ["snapshot", "due pass", "snapshot", "due pass", "trim", "snapshot", "due pass"]
