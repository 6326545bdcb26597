"""How often the agent samples a kind of step: the first samples, then the pace a sampled step's whole cost allows
under the budget (fxtui/agent/pace.py), and the cost line that says what sampling took."""

from __future__ import annotations

import itertools

import pytest

from fxtui.agent.pace import FIRST_EVERY, FIRST_SAMPLES, MIN_EVERY, Pace
from fxtui.agent.steps import ClosedStep, StepModel
from fxtui.jobs.kind_tally import KindTally
from fxtui.wire.agent_contract import AgentOptions
from fxtui.wire.agent_messages import Step

pytestmark = pytest.mark.unit

STEP_NS = 10_000_000


def _run(steps: int, wall_cost: float, after_cost: float, budget: float = 0.02) -> list[int]:
    """The indices of the sampled steps of a kind whose sampled steps take ``wall_cost`` more than an unsampled one
    and cost ``after_cost`` more after they end (shares of an unsampled step)."""
    pace = Pace("train", AgentOptions(warmup=0, every=0, budget=budget))
    sampled_at = []
    for _ in range(steps):
        index, sampled = pace.open()
        wall = int(STEP_NS * (1 + wall_cost)) if sampled else STEP_NS
        pace.close(index, wall, sampled, describing=False)
        if sampled:
            sampled_at.append(index)
            pace.after(index, int(STEP_NS * after_cost))
    return sampled_at


def _gaps_after_the_first_samples(sampled_at: list[int]) -> set[int]:
    later = sampled_at[FIRST_SAMPLES:]
    return {b - a for a, b in itertools.pairwise(later)}


def test_the_first_samples_come_one_step_in_five_whatever_they_cost() -> None:
    for cost in (0.0, 1.0):
        sampled_at = _run(100, cost, 0.0)
        first = sampled_at[:FIRST_SAMPLES]
        assert {b - a for a, b in itertools.pairwise(first)} == {FIRST_EVERY}


def test_a_cheap_sampled_step_is_taken_every_other_step_and_never_every_step() -> None:
    sampled_at = _run(200, 0.01, 0.0)  # 1% more: the 2% budget allows every step; one in two stays unsampled
    assert _gaps_after_the_first_samples(sampled_at) == {MIN_EVERY} == {2}


def test_what_a_sampled_step_costs_after_it_ends_counts_in_the_budget() -> None:
    walls_only = _run(300, 0.01, 0.0)
    with_after = _run(300, 0.01, 0.09)  # resolving and sending its ops: 9% of a step more, 10% in all
    assert _gaps_after_the_first_samples(with_after) == {5}  # 10% ÷ 2% budget
    assert len(with_after) < len(walls_only) / 2
    # The pace keeps the budget: what sampling costs the program, over the steps after the first samples.
    later = [i for i in with_after if i > with_after[FIRST_SAMPLES - 1]]
    steps = 300 - with_after[FIRST_SAMPLES - 1] - 1
    assert len(later) * 0.10 / steps <= 0.02 + 1e-9


def test_a_costly_sampled_step_is_paced_by_the_budget_up_to_one_in_two_hundred() -> None:
    assert _gaps_after_the_first_samples(_run(400, 0.79, 0.0)) == {40}  # the dispatch mode on small ops
    assert _gaps_after_the_first_samples(_run(2000, 9.0, 0.0)) == {200}


def test_a_cost_after_an_older_step_is_not_counted_twice() -> None:
    pace = Pace("train", AgentOptions(warmup=0, every=0, budget=0.02))
    seen = []
    for _ in range(60):
        index, sampled = pace.open()
        pace.close(index, int(STEP_NS * 1.01) if sampled else STEP_NS, sampled, describing=False)
        if sampled:
            seen.append(index)
    for index in seen[:-1]:
        pace.after(index, STEP_NS)  # not the latest sampled step: its ratio is gone from the pace's reach
    index, _ = pace.open()
    assert index - seen[-1] <= MIN_EVERY


class _Clock:
    def __init__(self) -> None:
        self.now = 1

    def __call__(self) -> int:
        return self.now


def test_a_step_model_whose_sampled_steps_cost_time_after_they_close_is_paced_by_that_cost_too() -> None:
    """The agent resolves and sends a sampled step's ops as the step closes, after its wall: 9% of a step here, 10%
    with its wall's 1%, so one step in five (2% budget), where the walls alone would allow one in two."""
    clock, closed = _Clock(), []

    def emit(step: ClosedStep) -> None:
        closed.append(step)
        if step.sampled:
            clock.now += STEP_NS * 9 // 100  # resolving its ops

    model = StepModel(clock, emit, options=AgentOptions(warmup=0, every=0, budget=0.02))
    optimizer = object()
    for _ in range(200):
        model.root_enter(1, grad=True, training=True)
        clock.now += STEP_NS + (STEP_NS // 100 if model.current is not None and model.current.sampled else 0)
        model.root_exit()
        model.optimizer_enter(optimizer, "SGD")
        model.optimizer_exit(optimizer)
    sampled = [s for s in closed if s.sampled]
    assert all(s.closing_ns > 0 for s in sampled) and not any(s.closing_ns for s in closed if not s.sampled)
    assert _gaps_after_the_first_samples([s.index for s in sampled]) == {5}


def test_the_cost_line_counts_what_sampled_steps_cost_after_their_wall() -> None:
    tally = KindTally("train")
    for i in range(100):
        sampled = i % 5 == 0
        wall = STEP_NS + (STEP_NS // 100 if sampled else 0)
        ops = [(1, wall // 2, "8", 0)] if sampled else []
        after = STEP_NS // 20 if sampled else 0
        tally.add(Step(i, "train", wall, (0, 0, 0, 0, wall), sampled, False, ops, after_ns=after))
    steps = tally.step_summary()
    assert steps.sampled_after_s == pytest.approx(STEP_NS / 20 / 1e9)
    # 20 sampled steps, each 1% longer and 5% more after it: 1.2 steps of 100.2
    assert steps.sampling_share == pytest.approx(20 * 0.06 / (80 + 20 * 1.01))
