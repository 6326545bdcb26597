"""The split of a typical step into ops, waiting for a CPU and the program's Python adds up to the whole step, and
the header, the JSON and the app's T panel give the same figures (fxtui/core/step_split.py)."""

from __future__ import annotations

import dataclasses
import itertools
import random

import pytest

from fxtui.core.nodes import Spread
from fxtui.core.program_run import KindSummary
from fxtui.core.step_split import split_step, whole_percents
from fxtui.core.step_waiting import StepWaiting
from fxtui.jobs.kind_tally import KindTally
from fxtui.report.waiting_text import split_lines, split_text, unattributed_line, waiting_json
from fxtui.wire.agent_messages import Step

pytestmark = pytest.mark.unit

MS = 1_000_000


def _step(kf: KindTally, index: int, wall_ms: float, wait_ms: float, op_ms: float | None = None) -> None:
    """An unsampled step (``op_ms`` None) or a sampled one whose two ops take ``op_ms`` in all."""
    ops = [] if op_ms is None else [(1, int(op_ms * MS / 2), "8", 0), (2, int(op_ms * MS / 2), "8", 0)]
    kf.add(Step(index, "train", int(wall_ms * MS), (0, 0, 0, 0, int(wall_ms * MS)), op_ms is not None, False, ops,
                wait_ns=int(wait_ms * MS)))  # fmt: skip


def _loaded_tally() -> KindTally:
    """A program on a busy machine whose part medians, taken one by one, come to 112% of a step: its unsampled
    steps waited 89% of their time (100 ms, 89 ms waiting), its quiet sampled steps' ops took 23 ms (and they
    waited not at all, so the split's ops are the fidelity)."""
    kf = KindTally("train")
    for i in range(30):
        _step(kf, 2 * i, 100 + i % 3, 89 + i % 3)
        _step(kf, 2 * i + 1, 30, 0, 23)
    return kf


def test_part_medians_that_overlap_give_a_split_that_adds_up_with_ops_as_the_fidelity() -> None:
    summary = _loaded_tally().summary(0.02)
    waiting = summary.waiting
    assert waiting is not None and summary.fidelity is not None and summary.step_median_s is not None
    assert waiting.ops is not None and waiting.wait is not None
    assert waiting.ops.median + waiting.wait.median > 1.1  # the medians one by one: more than the step
    split = waiting.split
    assert split is not None
    assert abs(split.ops + split.waiting + split.python - 1.0) < 1e-12
    assert abs(split.ops - summary.fidelity) < 1e-12  # the same figure as the fidelity line beside it
    assert abs(split.measured_waiting - waiting.wait.median) < 1e-12
    assert split.python == 0.0 and abs(split.overlap - (waiting.ops.median + waiting.wait.median - 1.0)) < 1e-12
    # What the header, the JSON and the unattributed line print come from that one split.
    assert waiting.waiting_share == split.waiting and waiting.python_share == split.python
    said = waiting.waiting_text()
    assert said.startswith(f"waiting for a CPU {whole_percents(split)[1]}% (of 89% measured, ")
    line = split_lines(summary)[0]
    ops, wait, python = whole_percents(split)
    assert f"ops {ops}%, waiting for a CPU {wait}%" in line and f"the program's Python {python}%" in line
    assert ops + wait + python == 100 and ops == round(100 * summary.fidelity)
    meta = waiting_json(waiting)
    assert meta["ops_share"] + meta["waiting_share"] + meta["python_share"] == pytest.approx(1.0)  # type: ignore[operator]
    assert meta["waiting_measured_share"] == split.measured_waiting and meta["split_line"] == split_text(waiting)
    unattributed = unattributed_line(waiting, summary.step_median_s)
    assert unattributed is not None and "waiting for a CPU" in unattributed


def test_steps_whose_parts_leave_room_keep_the_measured_wait_and_python_is_the_rest() -> None:
    kf = KindTally("train")
    for i in range(30):
        _step(kf, 2 * i, 100, 40 + (i % 5))  # waits 40–44 ms: median share 0.42
        _step(kf, 2 * i + 1, 60, 0, 45 + (i % 7))  # ops 45–51 ms: median 48 ms of a 100 ms step
    waiting = kf.summary(0.05).waiting
    assert waiting is not None
    split = waiting.split
    assert split is not None and split.overlap == 0.0
    assert split.waiting == pytest.approx(0.42) and split.ops == pytest.approx(0.48)
    assert split.python == pytest.approx(0.10)
    assert "measured" not in waiting.waiting_text()


def test_whole_percents_always_add_up_to_a_hundred_and_stay_within_a_point() -> None:
    rng = random.Random(43)
    cases = [(0.335, 0.335), (0.3333, 0.3333), (0.0, 0.0), (1.0, 0.5), (0.2, 1.0), (0.005, 0.005)]
    cases += [(rng.random(), rng.random()) for _ in range(500)]
    for ops, wait in itertools.chain(cases):
        split = split_step(ops, wait)
        percents = whole_percents(split)
        assert sum(percents) == 100, (ops, wait, percents)
        for got, exact in zip(percents, (split.ops, split.waiting, split.python), strict=True):
            assert abs(got - 100 * exact) < 1.0, (ops, wait, percents)


def test_a_split_waits_for_its_ops_and_a_kept_steps_ops_lose_their_wait() -> None:
    waiting = StepWaiting(known=True, wait=Spread(0.6, 0.5, 0.7))
    assert waiting.split is None and split_text(waiting) == ""  # no sampled step counted yet: the wait alone
    assert split_lines(KindSummary("train", 10, waiting=waiting))[0].startswith("split      waiting for a CPU 60%")
    kept = dataclasses.replace(
        waiting, ops=Spread(0.5, 0.4, 0.6), running_ops=Spread(0.2, 0.15, 0.25), sampled=8, disturbed=8
    )
    split = kept.split
    assert split is not None and split.ops == 0.2 and split.waiting == 0.6 and split.python == pytest.approx(0.2)
    assert "ops 20% (less the time they waited)" in split_text(kept)
