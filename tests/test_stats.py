"""Bounded sample windows: memory does not grow, statistics cover the latest window."""

from __future__ import annotations

import statistics

import pytest

from fxtui.engine.stats import SampleWindow, window_for


def test_window_keeps_only_the_latest_samples_and_running_aggregates() -> None:
    w = SampleWindow(nodes=2, window=32)
    buffer = w._buf
    for k in range(1000):
        w.add([k, 5], run_ns=k + 5)
    assert w._buf is buffer and tuple(buffer.shape) == (32, 2)  # never reallocated, never grown
    s = w.summary()
    assert s is not None
    assert s.count == 1000
    latest = list(range(968, 1000))
    assert s.median[0] == pytest.approx(statistics.median(latest) / 1e9)
    assert s.mean[0] == pytest.approx(statistics.mean(range(1000)) / 1e9)  # running, over everything
    assert s.min[0] == 0 and s.max[0] == pytest.approx(999e-9)
    assert s.recent[0][-1] == pytest.approx(999e-9) and s.recent[0][0] == pytest.approx(968e-9)
    assert s.run_median == pytest.approx(statistics.median(k + 5 for k in latest) / 1e9)


def test_reset_forgets_everything() -> None:
    w = SampleWindow(nodes=1, window=32)
    w.add([10])
    w.add_eager(20)
    w.reset()
    assert w.summary() is None
    w.add([7])
    s = w.summary()
    assert s is not None and s.count == 1 and s.median == [pytest.approx(7e-9)] and s.eager_median is None


def test_window_shrinks_for_huge_graphs_to_bound_memory() -> None:
    assert window_for(100) == 256
    assert window_for(10_000) * 10_000 * 8 <= 16 * 1024 * 1024 < (window_for(10_000) + 1) * 10_000 * 8
    assert window_for(10**9) == 32


def test_negative_samples_are_clamped() -> None:
    w = SampleWindow(nodes=1)
    w.add([-3])
    s = w.summary()
    assert s is not None and s.median == [0.0]
