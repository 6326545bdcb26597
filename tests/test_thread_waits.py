"""A step held up by its process's other threads waiting for a CPU (fxtui/jobs/thread_waits.py), and the last
profile that holds every kind of step for the app's ``k`` after the end (fxtui/jobs/job_state.py)."""

from __future__ import annotations

import pytest

from fxtui.core.op_nodes import EagerNode, RootModule
from fxtui.core.settings import ProgramSettings
from fxtui.core.snapshot import State
from fxtui.jobs.job_state import JobState
from fxtui.jobs.kind_tally import KindTally
from fxtui.jobs.thread_waits import ThreadWaits, beside_wait
from fxtui.wire.agent_messages import Hello, Step

pytestmark = pytest.mark.unit

MS = 1_000_000
S = 1_000_000_000


def test_a_pool_threads_wait_holds_the_step_up_and_a_loader_workers_only_while_the_step_is_blocked() -> None:
    # One second: the main thread ran 0.4 s, waited 0.1 s and was blocked 0.5 s; its pool thread waited 0.4 s, so
    # none of its other threads waited 60% of the time; a DataLoader worker (a child process) waited 0.3 s.
    threads = {10: {10: (400 * MS, 100 * MS), 11: (300 * MS, 400 * MS)}, 12: {12: (600 * MS, 300 * MS)}}
    running, children = beside_wait(threads, {10, 12}, 10, 1.0)  # type: ignore[misc]
    assert running == pytest.approx(0.6) and children == 300 * MS
    # The worker waited 0.8 s, more than the main thread was blocked: at most the time it was blocked counts.
    threads[12][12] = (100 * MS, 800 * MS)
    assert beside_wait(threads, {10, 12}, 10, 1.0) == (pytest.approx(0.6), 500 * MS)
    # An unrelated process's wait does not count (fxtui's own is never among the pids).
    assert beside_wait({10: {10: (900 * MS, 0)}, 99: {99: (1, 500 * MS)}}, {10}, 10, 1.0) == (1.0, 0)
    assert beside_wait({10: {11: (1, 1)}}, {10}, 10, 1.0) is None  # its main thread was not read


def test_only_the_pools_threads_hold_the_step_up_not_a_sender_or_a_queue_feeder_that_waits_more_than_it_runs() -> None:
    # One second: the main thread; its intra-op partner ran 350 ms and waited 200 ms; fxtui's sender and a
    # DataLoader's queue feeder ran a few ms each and waited 167 ms and 90 ms (a busy machine wakes them late).
    process = {10: (400 * MS, 100 * MS), 11: (350 * MS, 200 * MS), 12: (9 * MS, 167 * MS), 13: (2 * MS, 90 * MS)}
    threads = {10: process}
    every, _ = beside_wait(threads, {10}, 10, 1.0)  # type: ignore[misc]
    assert every == pytest.approx(0.8 * 0.833 * 0.91)  # every thread, as if each held the step up
    assert beside_wait(threads, {10}, 10, 1.0, pool=2) == (pytest.approx(0.8), 0)  # the partner alone
    assert beside_wait(threads, {10}, 10, 1.0, pool=1) == (1.0, 0)  # one intra-op thread: no partner to wait for
    assert beside_wait(threads, {10}, 10, 1.0, pool=8)[0] == pytest.approx(every)  # type: ignore[index]


def test_waits_that_happen_at_once_count_once_and_a_step_never_waits_more_than_its_wall() -> None:
    waits = ThreadWaits()
    assert waits.step_wait(0, 100 * MS, 10 * MS) == 10 * MS  # nothing sampled yet: its own thread's wait alone
    waits.add(10 * S, 11 * S, 0, running=0.5)  # the pool waited half of the second
    # Its own 20% and the pool's 50%, as if independent: some thread waited 1 − 0.8 × 0.5 = 60% of the step.
    assert waits.step_wait(10 * S, 100 * MS, 20 * MS) == 60 * MS
    waits.add(11 * S, 12 * S, 400 * MS, running=1.0)  # a loader worker waited 0.4 s while the step was blocked
    assert waits.step_wait(11 * S, 100 * MS, 0) == 40 * MS
    assert waits.step_wait(11 * S - 50 * MS, 100 * MS, 0) == 25 * MS + 20 * MS  # half in each second
    assert waits.step_wait(12 * S + 500 * MS, 100 * MS, 0) == 40 * MS  # after the latest sample: as the latest
    assert waits.step_wait(9 * S, 100 * MS, 0) == 0  # before the first sample: nothing known, nothing added
    assert waits.step_wait(11 * S, 100 * MS, 90 * MS) == 100 * MS  # capped at the wall time
    assert waits.step_wait(11 * S, 100 * MS, -1) == -1  # the kernel does not say


def test_a_steps_waiting_share_counts_its_pool_and_never_exceeds_one() -> None:
    kf = KindTally("train")
    kf.beside.add(0, 10 * S, 0, running=0.5)  # the pool waited half of every second
    for i in range(20):
        wall = 100 * MS
        kf.add(Step(2 * i, "train", wall, (0, 0, 0, 0, wall), False, False, start_ns=i * wall, wait_ns=20 * MS))
    waiting = kf.summary().waiting
    assert waiting is not None and waiting.wait is not None
    assert waiting.wait.median == pytest.approx(0.6)  # 1 − 0.8 × 0.5
    kf.beside.add(10 * S, 20 * S, 10 * S)  # a second in which a loader worker waited all along
    for i in range(20, 300):
        wall = 20 * MS
        kf.add(Step(2 * i, "train", wall, (0, 0, 0, 0, wall), False, False, start_ns=10 * S + i * wall, wait_ns=wall))
    waiting = kf.summary().waiting
    assert waiting is not None and waiting.wait is not None and waiting.wait.q75 == 1.0  # capped at the wall time


def test_a_sampled_step_whose_pool_waited_is_left_out_of_the_node_figures() -> None:
    kf = KindTally("train")
    kf.beside.add(0, S, 0, running=0.7)
    ops = [(1, 5 * MS, "8", 0)]
    # Its own thread waited 2% (under the 10% threshold); its pool's 30% makes it a disturbed step.
    kf.add(Step(1, "train", 10 * MS, (0, 0, 0, 0, 10 * MS), True, False, ops, start_ns=2 * S, wait_ns=200_000))
    assert kf.waits.steps()[-1].disturbed


def _step(index: int, kind: str, first: bool = False) -> Step:
    nodes = [EagerNode(1, 0, "fc", "forward", "linear", 1, "aten.linear")] if first else []
    roots = [RootModule(0, "Net", {"fc": "Linear"})] if first else []
    ops = [(1, 400, "8", 0)] if index % 2 else []
    phases = (100, 400, 300 if kind == "train" else 0, 150 if kind == "train" else 0, 50)
    return Step(index, kind, sum(phases), phases, bool(ops), False, ops=ops, nodes=nodes, roots=roots)


def test_the_last_profile_holds_every_kind_the_program_ran_and_a_running_one_does_not() -> None:
    state = JobState(ProgramSettings(("train.py",), warmup=0))
    state.receive(Hello(77, ("train.py",), "2.x", 1, host="a"), 0)
    for i in range(10):
        state.receive(_step(i, "eval", first=i == 0), 0)
    for i in range(12):
        state.receive(_step(i, "train"), 0)
    assert state.snapshot(State.RUNNING).other_kinds == {}  # while it runs, the collector answers k itself
    done = state.snapshot(State.DONE)
    assert done.steps is not None and done.steps.kind == "train"
    evals = done.other_kinds["eval"]
    assert evals.steps is not None and evals.steps.kind == "eval" and evals.steps.steps == 10
    assert evals.graph is not None and evals.other_kinds == {}
