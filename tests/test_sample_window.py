"""The statistics engine of both modes: bounded samples, exact figures, the latest window only.

Until this engine replaced them, ``measure/stats.py`` (fxtui MODEL) and ``jobs/node_window.py`` (fxtui run)
computed these figures; the test that held the three equal to the last bit on the same samples is in the
history of this file (the commit that added it).
"""

from __future__ import annotations

import statistics

import numpy as np
import pytest
import torch

from fxtui.core.nodes import Spread
from fxtui.core.sample_window import RECENT, SampleWindow, spread_of, window_for

pytestmark = pytest.mark.unit


def sec(ns: float) -> float:
    """Nanoseconds in seconds, as the engine converts them."""
    return ns / 1e9


def test_the_nine_figures_of_fixed_samples_exactly() -> None:
    # Two nodes, five steps; node 0 runs 10, 40, 20, 50, 30 ns, node 1 always 7 ns.
    w = SampleWindow(2, window=32)
    for ns in [10, 40, 20, 50, 30]:
        w.add_run([ns, 7], run_ns=ns + 7)
        w.add_eager(ns + 6)
    s = w.stats()
    # sorted 10 20 30 40 50: p25 at position 1, the median at 2, p75 at 3, p90 at 3.6 (40 + 0.6 × 10)
    assert s.q25.tolist() == [sec(20), sec(7)] and s.median.tolist() == [sec(30), sec(7)]
    assert s.q75.tolist() == [sec(40), sec(7)] and s.p90.tolist() == [sec(40 + (50 - 40) * (0.9 * 4 - 3)), sec(7)]
    assert s.mean.tolist() == [sec(150 / 5), sec(35 / 5)]
    assert s.minimum.tolist() == [sec(10), sec(7)] and s.maximum.tolist() == [sec(50), sec(7)]
    assert s.count.tolist() == [5, 5] and s.steps == 5
    assert s.recent.tolist() == [[sec(ns) for ns in [10, 40, 20, 50, 30]], [sec(7)] * 5]  # oldest first
    assert s.run == Spread(sec(37), sec(27), sec(47)) and s.eager == Spread(sec(36), sec(26), sec(46))
    assert (s.run_count, s.eager_count, s.used, s.disturbed, s.left_out) == (5, 5, 5, 0, 0)


def test_window_keeps_only_the_latest_samples_and_running_aggregates() -> None:
    w = SampleWindow(2, window=32)
    buffer = w._buf
    for k in range(1000):
        w.add_run([k, 5], run_ns=k + 5)
    assert w._buf is buffer and buffer.shape == (2, 32)  # never reallocated, never grown
    s = w.stats()
    assert s.steps == 1000 and s.count.tolist() == [1000, 1000]
    latest = list(range(968, 1000))
    assert s.median[0] == sec(statistics.median(latest))
    assert s.mean[0] == sec(sum(range(1000)) / 1000)  # running, over everything
    assert s.minimum[0] == 0 and s.maximum[0] == 999 / 1e9
    # recent: node by node, each node's latest runs, oldest first
    assert s.recent.shape == (2, RECENT) and s.recent[0, -1] == 999 / 1e9 and s.recent[0, 0] == 968 / 1e9
    assert s.recent[1].tolist() == [sec(5)] * 32
    assert s.run_median == sec(statistics.median(k + 5 for k in latest))


def test_reset_forgets_every_sample_and_keeps_the_columns() -> None:
    w = SampleWindow(1, window=32)
    w.add_run([10])
    w.add_eager(20)
    w.reset()
    assert w.stats().steps == 0 and w.count == 0 and w.columns == 1
    w.add_run([7])
    s = w.stats()
    assert s.steps == 1 and s.median.tolist() == [sec(7)] and s.eager_median is None


def test_window_shrinks_for_huge_graphs_to_bound_the_samples_a_snapshot_reads() -> None:
    assert window_for(100) == 256
    assert window_for(10_000) == 100  # a million samples in all
    assert window_for(10**9) == 32
    assert SampleWindow(10_000).window == 100


def test_a_step_gives_the_run_figures_their_ranges() -> None:
    w = SampleWindow(2, window=64)
    for k in range(1, 41):
        # node times 3k and k, a profiled run of 5k and an uninstrumented run of 4k (+ k/10 of noise)
        w.add_run([3 * k, k], run_ns=5 * k)
        w.add_eager(4 * k + k // 10)
    s = w.stats()
    assert s.run is not None and s.overhead is not None and s.fidelity is not None
    assert s.run.q25 < s.run.median < s.run.q75
    overheads = sorted(5 * k / (4 * k + k // 10) for k in range(1, 41))
    assert s.overhead.median == pytest.approx(statistics.median(overheads))
    assert s.overhead.q25 <= s.overhead.median <= s.overhead.q75
    assert s.overhead.q75 <= 1.25 and s.overhead.q25 >= 5 / 4.4
    fidelities = [4 * k / (4 * k + k // 10) for k in range(1, 41)]
    assert s.fidelity.median == pytest.approx(statistics.median(fidelities))


def test_unpaired_samples_give_no_ratio_ranges() -> None:
    w = SampleWindow(1)
    w.add_run([5], run_ns=10)  # no uninstrumented run beside it
    s = w.stats()
    assert s.run is not None and s.overhead is None and s.fidelity is None and s.eager is None


def test_negative_samples_are_clamped() -> None:
    w = SampleWindow(1)
    w.add_run([-3])
    assert w.stats().median.tolist() == [0.0]


def steps(w: SampleWindow, node_ns: list[int], disturbed: list[bool]) -> None:
    for ns, bad in zip(node_ns, disturbed, strict=True):
        w.add_run([ns], run_ns=2 * ns, disturbed=bad)
        w.add_eager(2 * ns)


def test_disturbed_steps_leave_the_quantiles_only_while_five_quiet_ones_remain() -> None:
    # 5 quiet steps (1..5 µs) and 2 disturbed ones (100, 200 µs): the disturbed are left out, exactly
    w = SampleWindow(1, window=16)
    steps(w, [1000, 2000, 100_000, 3000, 4000, 200_000, 5000], [False, False, True, False, False, True, False])
    s = w.stats()
    assert (s.used, s.disturbed, s.left_out, s.steps) == (5, 2, 2, 7)
    assert s.median.tolist() == [3000 / 1e9] and s.q25.tolist() == [2000 / 1e9] and s.q75.tolist() == [4000 / 1e9]
    assert s.run is not None and s.run.median == 6000 / 1e9
    # count, mean, min and max stay running aggregates over every step
    assert s.maximum.tolist() == [200e-6] and s.minimum.tolist() == [1e-6]
    assert s.mean.tolist() == [pytest.approx(sum([1, 2, 100, 3, 4, 200, 5]) * 1e-6 / 7)]
    kept = w.stats(leave_out_disturbed=False)
    assert (kept.used, kept.disturbed, kept.left_out) == (7, 2, 0) and kept.median.tolist() == [4000 / 1e9]
    # with 4 quiet steps there are too few to do without the disturbed ones
    few = SampleWindow(1, window=16)
    steps(few, [1000, 2000, 100_000, 3000, 4000], [False, False, True, False, False])
    s = few.stats()
    assert (s.used, s.disturbed, s.left_out) == (5, 1, 0) and s.median.tolist() == [3000 / 1e9]
    # every step quiet: nothing to leave out
    quiet = SampleWindow(1, window=16)
    steps(quiet, [1000] * 6, [False] * 6)
    s = quiet.stats()
    assert (s.used, s.disturbed, s.left_out) == (6, 0, 0)


def test_without_whole_steps_nothing_is_left_out() -> None:
    w = SampleWindow(1, window=16)
    for ns, bad in zip([1000, 2000, 100_000, 3000, 4000, 5000, 6000], [False, False, True] + [False] * 4, strict=True):
        w.add_run([ns], run_ns=2 * ns, disturbed=bad)  # no uninstrumented runs beside them
    s = w.stats()
    assert (s.used, s.disturbed, s.left_out) == (7, 1, 0)


def test_nanoseconds_past_float32_s_precision_stay_exact() -> None:
    # 1.000000001 s: float32 would round it to 1 s; samples are int64, sums and run times float64.
    w = SampleWindow(1, window=4)
    for _ in range(3):
        w.add_run([1_000_000_001], run_ns=3_000_000_001)
        w.add_eager(2_000_000_001)
    s = w.stats()
    assert s.median.tolist() == [1.000000001] and s.maximum.tolist() == [1.000000001]
    assert s.minimum.tolist() == [1.000000001] and s.mean.tolist() == [1.000000001]
    assert s.run_median == 3.000000001 and s.eager_median == 2.000000001
    assert s.recent.tolist() == [[1.000000001] * 3]


def test_a_step_added_without_saying_is_quiet() -> None:
    w = SampleWindow(1, window=16)
    for k in range(6):
        w.add_run([1000 + k], run_ns=2000)  # no disturbed= given: quiet
        w.add_eager(1900)
    w.add_run([90_000], run_ns=100_000, disturbed=True)
    w.add_eager(1900)
    s = w.stats()
    assert (s.used, s.disturbed, s.left_out) == (6, 1, 1)


def test_the_figures_count_profiled_and_uninstrumented_runs_apart() -> None:
    w = SampleWindow(1, window=4)
    for _ in range(7):
        w.add_run([10], run_ns=20)
    for _ in range(5):
        w.add_eager(15)
    s = w.stats()
    assert (s.steps, s.run_count, s.eager_count) == (7, 7, 5)


def test_ratios_need_an_uninstrumented_run_of_some_time() -> None:
    zero = SampleWindow(1)
    zero.add_run([5], run_ns=10)
    zero.add_eager(0)  # a clock that did not move: no ratio can be made of it
    s = zero.stats()
    assert s.overhead is None and s.fidelity is None
    one = SampleWindow(1)
    one.add_run([5], run_ns=10)
    one.add_eager(1)  # one nanosecond is a time
    s = one.stats()
    assert s.overhead is not None and s.overhead.median == 10.0


# -- fxtui run: columns appear as the program runs, and a step need not run every one ----------------------


def test_a_program_s_columns_have_holes_and_figures_over_their_own_samples() -> None:
    w = SampleWindow()
    w.add_columns(2)
    w.add(np.array([0, 1]), np.array([10, 100]))
    w.add(np.array([0]), np.array([30]))  # column 1 did not run: a hole
    w.add_columns(1)  # a code path taken later
    w.add(np.array([0, 2]), np.array([20, 5]))
    s = w.stats()
    assert s.count.tolist() == [3, 1, 1] and s.steps == 3
    assert s.median.tolist() == [sec(20), sec(100), sec(5)] and s.q25.tolist() == [sec(15), sec(100), sec(5)]
    assert s.mean.tolist() == [sec(60 / 3), sec(100), sec(5)]
    assert s.minimum.tolist() == [sec(10), sec(100), sec(5)] and s.maximum.tolist() == [sec(30), sec(100), sec(5)]
    # a hole shows as its column's median in the sparkline
    assert s.recent.tolist() == [[sec(10), sec(30), sec(20)], [sec(100)] * 3, [sec(5)] * 3]
    assert s.run is None and s.overhead is None  # a program's run figures are the collector's


def test_a_column_without_samples_has_no_figures() -> None:
    w = SampleWindow()
    w.add_columns(2)
    assert np.isnan(w.stats().median).all() and w.stats().recent.shape == (2, 0)
    w.add(np.array([0]), np.array([10]))
    s = w.stats()
    assert s.count.tolist() == [1, 0] and np.isnan(s.median[1]) and np.isnan(s.mean[1]) and np.isnan(s.minimum[1])
    assert s.recent.tolist() == [[sec(10)], [0.0]]


def test_the_window_shrinks_as_columns_grow_and_keeps_the_newest_steps() -> None:
    w = SampleWindow(window=256)
    w.add_columns(1_000)
    for k in range(300):
        w.add(np.array([0]), np.array([k]))
    assert w.filled == 256
    w.add_columns(9_000)  # 10,000 columns: a window of 100 steps
    w.add(np.array([0, 9_999]), np.array([300, 1]))
    s = w.stats()
    assert w.window == w.filled == 100
    assert s.median[0] == sec(statistics.median(range(201, 301)))  # the newest 100 of column 0's 301
    assert s.count[0] == 301 and s.mean[0] == sec(sum(range(301)) / 301)  # running, over everything
    assert s.recent[0].tolist() == [sec(k) for k in range(269, 301)]


# -- the run figures' spread ----------------------------------------------------------------------------------


def test_the_spread_of_fixed_values_exactly() -> None:
    assert spread_of(np.array([4.0, 1.0, 3.0, 2.0])) == Spread(2.5, 1.75, 3.25)
    assert spread_of(np.array([7.0])) == Spread(7.0, 7.0, 7.0)
    assert spread_of(np.empty(0)) is None


def test_the_spread_is_torch_quantile_s_to_the_last_bit() -> None:
    # The run figures kept the values torch.quantile gave them when torch computed them.
    rng = np.random.default_rng(20)
    q = torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64)
    for n in [1, 2, 3, 4, 5, 17, 256]:
        for _ in range(50):
            values = rng.integers(1, 4_000_000_000, n) / 1e9
            q25, median, q75 = torch.quantile(torch.tensor(values), q).tolist()
            assert spread_of(values) == Spread(median, q25, q75)
