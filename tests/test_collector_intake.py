"""The collector's intake at scale, in this process: a sampled step's per-node sums folded as arrays when its layout
repeats (``jobs.op_layout``), the lag between a step's end and its intake, and what the collector leaves out while it
is behind the program (``jobs.intake_lag``, ``jobs.job_state``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fxtui.core.op_nodes import EagerNode, RootModule
from fxtui.core.op_sums import sums_of
from fxtui.core.program_run import STEP_PHASES
from fxtui.core.settings import ProgramSettings
from fxtui.core.snapshot import State
from fxtui.jobs.collector import Collector
from fxtui.jobs.intake_lag import BEHIND_SNAPSHOT_S, CAUGHT_UP_S, SHED_S, IntakeLag
from fxtui.jobs.job_state import JobState
from fxtui.jobs.op_layout import PhaseIndex
from fxtui.wire.agent_messages import Hello, Step

pytestmark = pytest.mark.unit

NODES = [
    EagerNode(1, 0, "fc", "forward", "linear", 1, "aten.linear"),
    EagerNode(2, 0, "", "forward", "relu", 1, "aten.relu"),
    EagerNode(3, 0, "fc", "backward", "mm", 1, "aten.mm"),
]
ROOTS = [RootModule(0, "Net", {"fc": "Linear"})]
PHASES = (100, 400, 300, 150, 50)


def ops_of(scale: int, relu_shapes: tuple[str, ...] = ("8×32",)) -> list[tuple[int, int, str, int]]:
    """A step's ops: fc once, relu once per shape given, mm twice (a node called twice a step)."""
    ops = [(1, 100 * scale, "8×32", 0)]
    ops += [(2, 10 * scale + i, shape, 0) for i, shape in enumerate(relu_shapes)]
    return [*ops, (3, 50 * scale, "32×32", 0), (3, 70 * scale, "32×32", 0)]


def sampled(index: int, ops: list[tuple[int, int, str, int]], *, first: bool = False, start_ns: int = 0) -> Step:
    return Step(index, "train", 2_000, PHASES, True, False, ops=ops, nodes=list(NODES) if first else [],
                roots=list(ROOTS) if first else [], start_ns=start_ns)  # fmt: skip


def plain(index: int, start_ns: int = 0) -> Step:
    return Step(index, "train", 1_000, PHASES, False, False, start_ns=start_ns)


def reference(steps: list[list[tuple[int, int, str, int]]]) -> dict[tuple[int, str], list[int]]:
    """Per node and the shapes of its calls in a step, each step's Σ ns: the figures op by op, as the layouts must
    give them."""
    out: dict[tuple[int, str], list[int]] = {}
    for ops in steps:
        sums: dict[int, int] = {}
        shapes: dict[int, list[str]] = {}
        for node, ns, shape, _ in ops:
            sums[node] = sums.get(node, 0) + ns
            if shape not in shapes.setdefault(node, []):
                shapes[node].append(shape)
        for node, ns in sums.items():
            out.setdefault((node, " + ".join(shapes[node])), []).append(ns)
    return out


def test_steps_of_a_repeated_layout_and_of_a_new_one_give_the_figures_op_by_op_would() -> None:
    collector = Collector(("train.py",), warmup=0)
    steps = [ops_of(s) for s in (1, 2, 3)] + [ops_of(4, ("8×32", "4×32"))] + [ops_of(s) for s in (5, 6, 9)]
    for i, ops in enumerate(steps):
        collector.receive(sampled(i, ops, first=i == 0))
    figures = collector.kinds["train"]
    want = reference(steps)
    snapshot = collector.snapshot(State.RUNNING)
    medians = dict(zip(snapshot.nodes.names, snapshot.nodes.column("median_s"), strict=True))
    calls = dict(zip(snapshot.nodes.names, snapshot.nodes.column("calls_per_step"), strict=True))
    ids = sorted(figures.nodes)
    by_id = dict(zip(ids, snapshot.nodes.names, strict=True))
    # Each node's row is its most frequent shapes' column: the relu's single shape, not the step of two.
    for node, shape in ((1, "8×32"), (2, "8×32"), (3, "32×32")):
        assert medians[by_id[node]] == pytest.approx(np.median(want[node, shape]) / 1e9)
    assert calls[by_id[3]] == 2.0 and calls[by_id[1]] == 1.0
    assert snapshot.shapes[by_id[2]] == (("8×32", 6, pytest.approx(np.median(want[2, "8×32"]) / 1e9)),
                                        ("8×32 + 4×32", 1, pytest.approx(want[2, "8×32 + 4×32"][0] / 1e9)))  # fmt: skip
    assert figures.sampled == 7


def test_phase_sums_follow_the_nodes_phases_and_a_node_described_later() -> None:
    phases = PhaseIndex()
    ops = ops_of(1)
    known = {n.id: n for n in NODES[:2]}  # mm not described yet: its time is in no phase
    forward, backward = STEP_PHASES.index("forward"), STEP_PHASES.index("backward")
    first = phases.sums(sums_of(ops), known)
    assert first[forward] == 110 and first[backward] == 0
    known[3] = NODES[2]
    again = phases.sums(sums_of(ops), known)
    assert again[forward] == 110 and again[backward] == 120 and sum(again) == 230


class Clock:
    def __init__(self) -> None:
        self.ns = 1_000_000_000_000

    def __call__(self) -> int:
        return self.ns


def test_the_lag_is_read_on_this_machine_only_and_leaving_out_begins_and_ends_with_it() -> None:
    clock = Clock()
    lag = IntakeLag(clock, host="here")
    lag.note(plain(0, start_ns=clock.ns - int(30e9)), "elsewhere")  # another machine's clock says nothing here
    assert lag.timed == 0 and not lag.shedding
    lag.note(plain(1, start_ns=clock.ns - int(0.3e9)), "here")
    assert lag.behind_s == pytest.approx(0.3, abs=1e-3) and not lag.leaves_out() and lag.sentence() == ""
    clock.ns += int(0.1e9)
    lag.note(plain(2, start_ns=clock.ns - int((SHED_S + 1) * 1e9)), "here")
    assert lag.shedding and lag.leaves_out() and lag.shed == 1
    assert lag.snapshot_every(0.25) == BEHIND_SNAPSHOT_S
    assert "3.0 s behind the program" in lag.sentence() and "leaves out sampled steps' ops" in lag.sentence()
    clock.ns += int(1.2e9)  # one quick message in the next span: the last span's backlog still counts
    lag.note(plain(3, start_ns=clock.ns - int(0.1e9)), "here")
    assert lag.shedding
    for _ in range(3):  # two spans within: caught up
        clock.ns += int(1.1e9)
        lag.note(plain(4, start_ns=clock.ns - int(CAUGHT_UP_S / 2 * 1e9)), "here")
    assert not lag.shedding and not lag.leaves_out() and lag.snapshot_every(0.25) == 0.25
    assert lag.sentence() == (
        "the collector was up to 3.0 s behind the program; it left out the ops of 1 sampled step while behind"
    )


def test_a_collector_behind_the_program_counts_every_step_takes_no_ops_and_says_so() -> None:
    clock = Clock()
    state = JobState(ProgramSettings(("train.py",), warmup=0))
    state.lag = IntakeLag(clock, host="node-a")
    hello = Hello(41, ("train.py",), "2.14", 1, rank=0, world_size=2, host="node-a")
    for agent in (0, 1):
        state.receive(dataclasses.replace(hello, pid=41 + agent, rank=agent), agent)
    now = clock.ns
    for agent in (0, 1):
        state.receive(sampled(0, ops_of(1), first=True, start_ns=now - int(0.2e9)), agent)
        state.receive(plain(1, start_ns=now - int(0.2e9)), agent)
    behind = now - int((SHED_S + 2) * 1e9)
    for i in range(2, 6):
        for agent in (0, 1):
            state.receive(sampled(i, ops_of(i), start_ns=behind) if i % 2 else plain(i, start_ns=behind), agent)
    figures = [state.collector.agents[a].kinds["train"] for a in (0, 1)]
    assert [f.sampled for f in figures] == [1, 1] and [f.untaken for f in figures] == [2, 2]
    assert [f.steps for f in figures] == [6, 6]  # every step counts, its wall time and phases
    assert state.lag.shed == 4
    snapshot = state.snapshot(State.RUNNING)
    assert "the collector is 4.0 s behind the program" in snapshot.message
    assert "it left out the ops of 4 sampled steps while behind" in snapshot.message
    assert all(r.steps == 6 for r in snapshot.rank_summary.ranks)


def test_ranks_outside_the_compared_sample_count_their_sampled_steps_without_empty_samples() -> None:
    state = JobState(ProgramSettings(("train.py",), warmup=0))
    world = 1024
    for rank in (0, 1):  # rank 1 is outside the sample of 1,024 ranks (every 4th)
        state.receive(Hello(100 + rank, ("train.py",), "2.14", 1, rank=rank, world_size=world, host="x"), rank)
        for i in range(4):
            state.receive(sampled(i, ops_of(i + 1), first=i == 0) if i % 2 == 0 else plain(i), rank)
    inside, outside = (state.collector.agents[r].kinds["train"] for r in (0, 1))
    assert (inside.sampled, inside.untaken, inside.window.steps) == (2, 0, 2)
    assert (outside.sampled, outside.untaken, outside.window.steps) == (0, 2, 0)
    assert outside.steps == inside.steps == 4


def test_a_long_run_keeps_a_bounded_timeline_and_the_phases_of_its_last_unsampled_steps() -> None:
    from fxtui.jobs.kind_tally import FIGURES_WINDOW, TIMELINE, KindTally

    figures = KindTally("train")
    early = (100, 400, 300, 150, 50)
    late = (200, 800, 600, 300, 100)
    for i in range(5 * TIMELINE):
        figures.add(Step(i, "train", 1_000, early if i < 4 * TIMELINE else late, False, False))
    for i in range(5 * TIMELINE, 7 * TIMELINE):  # more sampled steps than the timeline holds, their ops left out
        figures.add(Step(i, "train", 5_000, (9_000,) * len(STEP_PHASES), True, False), ops_taken=False)
    assert [s.index for s in figures.timeline] == list(range(6 * TIMELINE, 7 * TIMELINE))  # the latest only
    assert len(figures._plain_times) == FIGURES_WINDOW
    # The phases' medians are still those of the last unsampled steps, however many sampled ones came after them.
    assert figures.summary().phase_median_s == tuple(ns / 1e9 for ns in late)
    steps = figures.step_summary()
    assert steps.phase_median_s == tuple(ns / 1e9 for ns in late)
    assert steps.recent_steps == TIMELINE


def test_a_rank_outside_the_sample_sends_no_ops_and_stands_in_the_ranks_figures_with_its_pace() -> None:
    """A job of 1,024 ranks (six of them here): ranks 0 and 4 time their ops; the others send unsampled steps only,
    as their agents do (``wire.rank_sample``). Every rank is in the comparison's figures, rank 3 the slow one."""
    state = JobState(ProgramSettings(("train.py",), warmup=0))
    world = 1024
    slow = tuple(3 * ns for ns in PHASES)
    for rank in range(6):
        state.receive(Hello(100 + rank, ("train.py",), "2.14", 1, rank=rank, world_size=world, host="x"), rank)
        for i in range(6):
            if rank % 4 == 0:
                state.receive(sampled(i, ops_of(i + 1), first=i == 0) if i % 2 == 0 else plain(i), rank)
            else:
                wall = 3_000 if rank == 3 else 1_000
                state.receive(Step(i, "train", wall, slow if rank == 3 else PHASES, False, False), rank)
    for rank in (1, 2, 3, 5):  # nothing of theirs was sampled, and nothing left out: no op came
        figures = state.collector.agents[rank].kinds["train"]
        assert (figures.steps, figures.sampled, figures.untaken, figures.window.steps) == (6, 0, 0, 0)
    snapshot = state.snapshot(State.RUNNING)
    summary = snapshot.rank_summary
    assert summary is not None and [r.rank for r in summary.ranks] == [0, 1, 2, 3, 4, 5]
    assert [r.ops_timed for r in summary.ranks] == [True, False, False, False, True, False]
    assert all(r.steps == 6 for r in summary.ranks)
    by_rank = {r.rank: r for r in summary.ranks}
    assert by_rank[3].step_median_s == pytest.approx(3e-6) and by_rank[1].step_median_s == pytest.approx(1e-6)
    assert by_rank[3].phase_median_s == tuple(ns / 1e9 for ns in slow)
    assert by_rank[0].compute_s > 0 and by_rank[3].compute_s == 0
    assert "comparing 2 of the 1024 ranks" in snapshot.message and "(ranks 0, 4, 8, …)" in snapshot.message
    assert snapshot.graph is not None and snapshot.graph.ranks == (0, 4)  # the ranks compared node by node


def test_a_kind_s_step_windows_are_allocated_whole_at_its_first_steps_and_never_grow() -> None:
    """The timeline, the walls and the waits are rings: their memory is taken at the first steps, not over the
    minutes they take to fill (at 2 steps a second, one in 5 sampled: ten minutes for 256 sampled steps)."""
    import tracemalloc

    from fxtui.jobs.kind_tally import FIGURES_WINDOW, TIMELINE, KindTally

    figures = KindTally("train")
    sums = sums_of(ops_of(1))
    phase_ops = (0, 200, 100, 0, 0)

    def add(i: int) -> None:
        if i % 5 == 4:
            step = Step(i, "train", 2_000, PHASES, True, False, ops=ops_of(1 + i % 3), wait_ns=10)
            figures.add(step, phase_ops, sums=sums)
        else:
            figures.add(Step(i, "train", 1_000, PHASES, False, False, wait_ns=10))

    for i in range(10):
        add(i)
    figures.step_summary()
    figures.summary()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(10, 10 + 5 * max(TIMELINE, FIGURES_WINDOW) + 100):  # every window full, and turned over
            add(i)
        grew = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # Only the whole run's coarse history (at most HISTORY floats) may grow; the deques this replaced grew ~150 kB.
    assert grew < 24_000, grew
    assert len(figures.timeline) == TIMELINE and len(figures.waits.sampled) == FIGURES_WINDOW
    steps = figures.step_summary()
    assert steps.recent_steps == TIMELINE and steps.phase_median_s == tuple(ns / 1e9 for ns in PHASES)
    assert figures.waits.steps()[-1].phase_ops_ns == phase_ops
