"""Which ranks of a large job time their ops (``wire.rank_sample``): the rule the agent and its collector share, and
an agent outside the sample, in this process, sending every step's times and no op."""

from __future__ import annotations

import pytest

from fxtui.core.program_run import STEP_PHASES
from fxtui.wire.rank_sample import sample_sentence, stride, times_ops

pytestmark = pytest.mark.unit


def test_above_256_ranks_every_nth_rank_times_its_ops() -> None:
    assert [stride(n) for n in (1, 256, 257, 512, 1024, 1025)] == [1, 1, 2, 2, 4, 5]
    assert [r for r in range(12) if times_ops(r, 1024)] == [0, 4, 8]
    assert all(times_ops(r, 256) for r in range(256)) and times_ops(None, 4096)
    assert sample_sentence(256, 256) == ""
    said = sample_sentence(256, 1024)
    assert (
        said.startswith("comparing 256 of the 1024 ranks")
        and "every 4th rank's ops are timed (ranks 0, 4, 8, …)" in said
    )
    assert "every 2nd rank" in sample_sentence(256, 512)


def _train(steps: int) -> None:
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        optimizer.zero_grad()
        model(torch.randn(4, 8)).sum().backward()
        optimizer.step()


def _watched(rank: int, world: int, steps: int = 8) -> list[object]:
    """What the agent of ``rank`` in a job of ``world`` ranks sends for a toy training loop, every step sampled when
    it samples at all."""
    from fxtui.agent.agent import agent_of_rank
    from fxtui.wire.agent_contract import AgentOptions

    sent: list[object] = []
    # the dispatch mode: a unit test starts no compiler (the native timer's first use would)
    agent = agent_of_rank(sent.append, AgentOptions(warmup=0, every=1, timer="mode"), lambda: True, rank, world)
    agent.install()
    try:
        _train(steps)
        agent.finish()
    finally:
        agent.uninstall()
    assert not agent.failed
    return sent


def test_an_agent_outside_the_sample_times_no_op_and_still_sends_every_step_s_times() -> None:
    from fxtui.wire.agent_messages import Step

    inside = [m for m in _watched(4, 1024) if isinstance(m, Step) and m.kind == "train"]
    outside = [m for m in _watched(5, 1024) if isinstance(m, Step) and m.kind == "train"]
    assert any(s.sampled and s.node_sums().ops for s in inside)  # rank 4 of 1,024 is in the sample: its ops are timed
    assert len(outside) == len(inside) >= 7
    assert not any(s.sampled or s.ops or s.sums or s.nodes or s.timer for s in outside)
    forward, backward = STEP_PHASES.index("forward"), STEP_PHASES.index("backward")
    assert all(s.wall_ns > 0 and s.phases_ns[forward] > 0 and s.phases_ns[backward] > 0 for s in outside)
    assert [s.index for s in outside] == [s.index for s in inside]


def test_an_agent_outside_the_sample_builds_no_native_timer() -> None:
    from fxtui.agent.agent import agent_of_rank
    from fxtui.wire.agent_contract import AgentOptions

    agent = agent_of_rank(lambda m: None, AgentOptions(timer="native"), lambda: True, 3, 1024)
    assert agent.options.timer == "mode" and not agent.model.enabled


def test_a_rank_outside_the_sample_shown_by_its_own_collector_says_why_it_has_no_ops() -> None:
    from fxtui.core.settings import ProgramSettings
    from fxtui.core.snapshot import State
    from fxtui.jobs.job_state import JobState
    from fxtui.wire.agent_messages import Hello, Step

    state = JobState(ProgramSettings(("train.py",), warmup=0))  # torchrun … fxtui run --once: one rank a collector
    state.receive(Hello(7, ("train.py",), "2.14", 1, rank=5, world_size=1024, host="x"), 0)
    for i in range(4):
        state.receive(Step(i, "train", 1_000, (100, 400, 300, 150, 50), False, False), 0)
    message = state.snapshot(State.RUNNING).message
    assert "rank 5 of 1024 times no op: above 256 ranks only every 4th rank's ops are timed" in message
    state = JobState(ProgramSettings(("train.py",), warmup=0))
    state.receive(Hello(7, ("train.py",), "2.14", 1, rank=4, world_size=1024, host="x"), 0)
    state.receive(Step(0, "train", 1_000, (100, 400, 300, 150, 50), False, False), 0)
    assert "times no op" not in state.snapshot(State.RUNNING).message
