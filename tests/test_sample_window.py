"""One statistics engine for both modes: fed the same samples, it gives the figures both old engines gave, exactly.

The model mode's window (``measure/stats.py``, torch) and ``fxtui run``'s (``jobs/node_window.py``, numpy)
are replaced by :mod:`fxtui.core.sample_window`; these tests hold the new one to the old ones' figures to the
last bit before they go.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fxtui.core.sample_window import SampleWindow, spread_of
from fxtui.jobs.node_window import NodeWindow
from fxtui.measure import stats


def assert_same(new: np.ndarray, old: object) -> None:
    assert np.array_equal(np.asarray(new, dtype=np.float64), np.asarray(old, dtype=np.float64), equal_nan=True)


def model_steps(seed: int, nodes: int, steps: int, disturbed_share: float, eager_every: int):
    """A model's steps: node times (a few negative, some past float32's precision), run times, disturbed flags."""
    rng = np.random.default_rng(seed)
    for k in range(steps):
        row = rng.integers(-5, 3_000_000_001, nodes)
        row[rng.random(nodes) < 0.3] = rng.integers(1_000, 50_000)  # ties
        yield (
            row,
            int(row.clip(0).sum() + rng.integers(0, 10_000)),
            bool(rng.random() < disturbed_share),
            (int(rng.integers(1, 4_000_000_000)) if k % eager_every == 0 else None),
        )


@pytest.mark.parametrize(
    ("seed", "nodes", "window", "steps", "disturbed", "eager_every"),
    [
        (0, 1, 32, 1, 0.0, 1),
        (1, 3, 32, 2, 0.0, 1),
        (2, 7, 16, 7, 0.3, 1),  # disturbed steps left out while five quiet ones remain
        (3, 50, 32, 100, 0.2, 1),  # the ring wraps
        (4, 50, 32, 100, 0.9, 1),  # too few quiet steps: nothing left out
        (5, 20, 64, 40, 0.2, 3),  # unpaired runs: no ratios, nothing left out
        (6, 10_000, 256, 105, 0.1, 1),  # a window capped by the sample budget (100 steps)
    ],
)
@pytest.mark.parametrize("leave_out", [True, False])
def test_the_model_mode_s_figures_are_those_of_the_old_engine(
    seed: int, nodes: int, window: int, steps: int, disturbed: float, eager_every: int, leave_out: bool
) -> None:
    old, new = stats.SampleWindow(nodes, window), SampleWindow(nodes, window)
    assert new.window == old.window
    for row, run_ns, bad, eager_ns in model_steps(seed, nodes, steps, disturbed, eager_every):
        old.add(row.tolist(), run_ns, disturbed=bad)
        new.add_run(row.tolist(), run_ns, disturbed=bad)
        if eager_ns is not None:
            old.add_eager(eager_ns)
            new.add_eager(eager_ns)
    was, now = old.summary(leave_out_disturbed=leave_out), new.stats(leave_out_disturbed=leave_out)
    assert was is not None
    for name, mine in [("median", now.median), ("q25", now.q25), ("q75", now.q75), ("p90", now.p90),
                       ("mean", now.mean), ("min", now.minimum), ("max", now.maximum)]:  # fmt: skip
        assert_same(mine, getattr(was, name))
    assert now.count.tolist() == [was.count] * nodes and now.steps == was.count
    assert_same(now.recent.ravel(), was.recent)
    assert now.recent.shape == (nodes, was.recent_runs)
    assert (now.run, now.eager, now.overhead, now.fidelity) == (was.run, was.eager, was.overhead, was.fidelity)
    assert (now.used, now.disturbed, now.left_out) == (was.used, was.disturbed, was.left_out)
    assert (now.run_count, now.eager_count) == (was.run_count, was.eager_count)
    old.reset()
    new.reset()
    assert old.summary() is None and new.stats().steps == 0


def program_steps(seed: int, steps: int, grow_to: int):
    """A program's sampled steps: columns appear as it runs; a step runs some of them, one at times twice."""
    rng = np.random.default_rng(seed)
    columns = 0
    for _ in range(steps):
        new = int(rng.integers(0, max(2, grow_to // steps * 2)))
        new = min(new, grow_to - columns)
        columns += new
        if columns == 0:
            yield new, np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
            continue
        ran = np.flatnonzero(rng.random(columns) < 0.7)
        if len(ran) and rng.random() < 0.2:
            ran = np.append(ran, ran[0])  # one node at one shape twice in a step
        yield new, ran, rng.integers(-3, 2_000_000_000, len(ran))


@pytest.mark.parametrize(
    ("seed", "steps", "grow_to"),
    # the last two shrink the window as columns grow, the last after the ring has wrapped
    [(10, 1, 3), (11, 5, 10), (12, 300, 40), (13, 80, 8_000), (14, 600, 5_000)],
)
def test_the_collector_s_figures_are_those_of_the_old_engine(seed: int, steps: int, grow_to: int) -> None:
    old, new = NodeWindow(), SampleWindow()
    before = (new.stats(), old.stats())
    for now, was in [before]:
        assert now.median.shape == was.median.shape == (0,) and now.recent.shape == was.recent.shape
    for added, columns, ns in program_steps(seed, steps, grow_to):
        old.add_columns(added)
        new.add_columns(added)
        old.add(columns, ns)
        new.add(columns, ns)
        assert new.window == old.window
    was, now = old.stats(), new.stats()
    for name in ("count", "mean", "minimum", "maximum", "q25", "median", "q75", "p90", "recent"):
        assert_same(getattr(now, name), getattr(was, name))
        assert getattr(now, name).shape == getattr(was, name).shape


def test_the_run_spreads_are_torch_quantile_s() -> None:
    rng = np.random.default_rng(20)
    for n in [1, 2, 3, 4, 5, 17, 256]:
        for _ in range(50):
            values = rng.integers(1, 4_000_000_000, n) / 1e9
            assert spread_of(values) == stats.spread_of(torch.tensor(values))
    assert spread_of(np.empty(0)) is None
