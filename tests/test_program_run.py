"""A program's step figures, exactly: what sampling cost it."""

from __future__ import annotations

import pytest

from fxtui.core.program_run import StepSummary

pytestmark = pytest.mark.unit


def test_sampling_cost_is_the_sampled_steps_extra_over_all_steps_time() -> None:
    # 100 steps of 10 ms, 4 of them sampled at 35 ms: 4 × 25 ms extra over 96 × 10 + 4 × 35 = 1,100 ms.
    steps = StepSummary("train", steps=100, warmup=5, sampled=4, step_median_s=0.010, sampled_median_s=0.035)
    assert steps.sampling_share == pytest.approx(0.100 / 1.100)
    # A sampled step no slower than the others cost nothing; before both kinds exist nothing can be said.
    assert StepSummary("train", 10, 5, 2, step_median_s=0.010, sampled_median_s=0.009).sampling_share == 0.0
    assert StepSummary("train", 10, 5, 0, step_median_s=0.010).sampling_share is None
    assert StepSummary("call", 0, 5, 0).sampling_share is None


def test_a_fidelity_above_its_bound_is_doubted_in_one_sentence_and_from_too_few_steps_said_so() -> None:
    from fxtui.core.program_run import OVERCOUNT, OVERCOUNT_SAMPLED, overcount_doubt

    assert overcount_doubt("train", 1.05, 10) is None
    assert overcount_doubt("train", OVERCOUNT, 10) is None
    assert overcount_doubt("train", None, 10) is None
    few = overcount_doubt("eval", 7.906, 1)  # one sampled call far above its steps: said, as too few to read
    assert few is not None and few.startswith(
        "the sampled evaluation calls' ops add up to 7.91× an unsampled one, from 1 sampled: too few to read"
    )
    doubt = overcount_doubt("eval", 30.3, OVERCOUNT_SAMPLED)
    assert doubt is not None and doubt.startswith("the sampled evaluation calls' ops add up to 30.30×")
