"""Bounded sample windows: memory does not grow, statistics cover the latest window."""

from __future__ import annotations

import statistics

import pytest
import torch

from fxtui.measure.stats import SampleWindow, floats, quantiles, window_for


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
    # recent: node by node, each node's latest runs, oldest first
    assert s.recent_runs == 32 and len(s.recent) == 64
    assert s.recent[31] == pytest.approx(999e-9) and s.recent[0] == pytest.approx(968e-9)
    assert list(s.recent[32:]) == [pytest.approx(5e-9)] * 32
    assert s.run_median == pytest.approx(statistics.median(k + 5 for k in latest) / 1e9)


def test_reset_forgets_everything() -> None:
    w = SampleWindow(nodes=1, window=32)
    w.add([10])
    w.add_eager(20)
    w.reset()
    assert w.summary() is None
    w.add([7])
    s = w.summary()
    assert s is not None and s.count == 1 and list(s.median) == [pytest.approx(7e-9)] and s.eager_median is None


def test_window_shrinks_for_huge_graphs_to_bound_the_samples_a_snapshot_reads() -> None:
    assert window_for(100) == 256
    assert window_for(10_000) == 100  # a million samples in all
    assert window_for(10**9) == 32


def test_a_step_gives_the_run_figures_their_ranges() -> None:
    w = SampleWindow(nodes=2, window=64)
    for k in range(1, 41):
        # node times 3k and k, a profiled run of 5k and an uninstrumented run of 4k (+ k/10 of noise)
        w.add([3 * k, k], run_ns=5 * k)
        w.add_eager(4 * k + k // 10)
    s = w.summary()
    assert s is not None and s.run is not None and s.overhead is not None and s.fidelity is not None
    assert s.run.q25 < s.run.median < s.run.q75
    overheads = sorted(5 * k / (4 * k + k // 10) for k in range(1, 41))
    assert s.overhead.median == pytest.approx(statistics.median(overheads))
    assert s.overhead.q25 <= s.overhead.median <= s.overhead.q75
    assert s.overhead.q75 <= 1.25 and s.overhead.q25 >= 5 / 4.4
    fidelities = [4 * k / (4 * k + k // 10) for k in range(1, 41)]
    assert s.fidelity.median == pytest.approx(statistics.median(fidelities))


def test_unpaired_samples_give_no_ratio_ranges() -> None:
    w = SampleWindow(nodes=1)
    w.add([5], run_ns=10)  # no uninstrumented run beside it
    s = w.summary()
    assert s is not None and s.run is not None and s.overhead is None and s.fidelity is None and s.eager is None


def test_negative_samples_are_clamped() -> None:
    w = SampleWindow(nodes=1)
    w.add([-3])
    s = w.summary()
    assert s is not None and list(s.median) == [0.0]


@pytest.mark.parametrize("runs", [1, 2, 7, 100])
def test_the_quantiles_of_integer_samples_are_torch_quantile_s(runs: int) -> None:
    samples = torch.randint(0, 10**9, (runs, 50), dtype=torch.int64)
    q = torch.tensor([0.25, 0.5, 0.75, 0.9], dtype=torch.float64)
    expected = torch.quantile(samples.double(), q, dim=0)
    assert torch.allclose(quantiles(samples, q), expected, rtol=1e-12, atol=0)
    assert list(floats(expected[1])) == expected[1].tolist()
    assert list(floats(samples.t())) == samples.t().double().flatten().tolist()  # row by row, whatever the strides


def steps(w: SampleWindow, node_ns: list[int], disturbed: list[bool]) -> None:
    for ns, bad in zip(node_ns, disturbed, strict=True):
        w.add([ns], run_ns=2 * ns, disturbed=bad)
        w.add_eager(2 * ns)


def test_disturbed_steps_leave_the_quantiles_only_while_five_quiet_ones_remain() -> None:
    # 5 quiet steps (1..5 µs) and 2 disturbed ones (100, 200 µs): the disturbed are left out, exactly
    w = SampleWindow(nodes=1, window=16)
    steps(w, [1000, 2000, 100_000, 3000, 4000, 200_000, 5000], [False, False, True, False, False, True, False])
    s = w.summary()
    assert s is not None
    assert (s.used, s.disturbed, s.left_out, s.count) == (5, 2, 2, 7)
    assert list(s.median) == [3000 / 1e9] and list(s.q25) == [2000 / 1e9] and list(s.q75) == [4000 / 1e9]
    assert s.run is not None and s.run.median == 6000 / 1e9
    # count, mean, min and max stay running aggregates over every step
    assert list(s.max) == [pytest.approx(200e-6)] and list(s.min) == [pytest.approx(1e-6)]
    assert list(s.mean) == [pytest.approx(sum([1, 2, 100, 3, 4, 200, 5]) * 1e-6 / 7)]
    kept = w.summary(leave_out_disturbed=False)
    assert kept is not None and (kept.used, kept.disturbed, kept.left_out) == (7, 2, 0)
    assert list(kept.median) == [4000 / 1e9]
    # with 4 quiet steps there are too few to do without the disturbed ones
    few = SampleWindow(nodes=1, window=16)
    steps(few, [1000, 2000, 100_000, 3000, 4000], [False, False, True, False, False])
    s = few.summary()
    assert s is not None and (s.used, s.disturbed, s.left_out) == (5, 1, 0) and list(s.median) == [3000 / 1e9]
    # every step quiet: nothing to leave out
    quiet = SampleWindow(nodes=1, window=16)
    steps(quiet, [1000] * 6, [False] * 6)
    s = quiet.summary()
    assert s is not None and (s.used, s.disturbed, s.left_out) == (6, 0, 0)


def test_without_whole_steps_nothing_is_left_out() -> None:
    w = SampleWindow(nodes=1, window=16)
    for ns, bad in zip([1000, 2000, 100_000, 3000, 4000, 5000, 6000], [False, False, True] + [False] * 4, strict=True):
        w.add([ns], run_ns=2 * ns, disturbed=bad)  # no uninstrumented runs beside them
    s = w.summary()
    assert s is not None and (s.used, s.disturbed, s.left_out) == (7, 1, 0)


def test_nanoseconds_past_float32_s_precision_stay_exact() -> None:
    # 1.000000001 s: float32 would round it to 1 s; samples are int64, sums and run times float64.
    w = SampleWindow(nodes=1, window=4)
    for _ in range(3):
        w.add([1_000_000_001], run_ns=3_000_000_001)
        w.add_eager(2_000_000_001)
    s = w.summary()
    assert s is not None
    assert list(s.median) == [1.000000001] and list(s.max) == [1.000000001] and list(s.min) == [1.000000001]
    assert list(s.mean) == [1.000000001]
    assert s.run_median == 3.000000001 and s.eager_median == 2.000000001
    assert list(s.recent) == [1.000000001] * 3


def test_a_step_added_without_saying_is_quiet() -> None:
    w = SampleWindow(nodes=1, window=16)
    for k in range(6):
        w.add([1000 + k], run_ns=2000)  # no disturbed= given: quiet
        w.add_eager(1900)
    w.add([90_000], run_ns=100_000, disturbed=True)
    w.add_eager(1900)
    s = w.summary()
    assert s is not None and (s.used, s.disturbed, s.left_out) == (6, 1, 1)


def test_the_summary_counts_profiled_and_uninstrumented_runs_apart() -> None:
    w = SampleWindow(nodes=1, window=4)
    for _ in range(7):
        w.add([10], run_ns=20)
    for _ in range(5):
        w.add_eager(15)
    s = w.summary()
    assert s is not None and (s.count, s.run_count, s.eager_count) == (7, 7, 5)


def test_ratios_need_an_uninstrumented_run_of_some_time() -> None:
    zero = SampleWindow(nodes=1)
    zero.add([5], run_ns=10)
    zero.add_eager(0)  # a clock that did not move: no ratio can be made of it
    s = zero.summary()
    assert s is not None and s.overhead is None and s.fidelity is None
    one = SampleWindow(nodes=1)
    one.add([5], run_ns=10)
    one.add_eager(1)  # one nanosecond is a time
    s = one.summary()
    assert s is not None and s.overhead is not None and s.overhead.median == 10.0
