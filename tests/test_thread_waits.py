"""A step held up by its process's other threads waiting for a CPU (fxtui/jobs/thread_waits.py), and the last
profile that holds every kind of step for the app's ``k`` after the end (fxtui/jobs/job_state.py)."""

from __future__ import annotations

import pytest

from fxtui.core.agent_messages import Hello, Step
from fxtui.core.op_nodes import EagerNode, RootModule
from fxtui.core.settings import ProgramSettings
from fxtui.core.snapshot import State
from fxtui.jobs.job_state import JobState
from fxtui.jobs.kind_figures import KindFigures
from fxtui.jobs.thread_waits import ThreadWaits, beside_wait

pytestmark = pytest.mark.unit

MS = 1_000_000
S = 1_000_000_000


def test_a_pool_threads_wait_while_the_stepping_thread_is_blocked_on_it_holds_the_step_up() -> None:
    # One second: the main thread ran 0.4 s, waited 0.1 s and was blocked 0.5 s (at the end of parallel ops); the
    # pool thread waited 0.4 s meanwhile: all of it held the step up.
    threads = {10: {10: (400 * MS, 100 * MS), 11: (300 * MS, 400 * MS)}}
    assert beside_wait(threads, {10}, 10, 1.0) == 400 * MS
    # The pool waited 0.8 s, more than the main thread was blocked: at most the time it was blocked counts (the rest
    # it waited while the main thread waited too, which the main thread's own wait already counts).
    threads[10][11] = (100 * MS, 800 * MS)
    assert beside_wait(threads, {10}, 10, 1.0) == 500 * MS
    # A DataLoader worker's wait (a child process) counts; an unrelated process's does not; nor fxtui's own.
    quiet = {10: {10: (900 * MS, 0)}, 12: {12: (100 * MS, 50 * MS)}, 99: {99: (500 * MS, 500 * MS)}}
    assert beside_wait(quiet, {10, 12}, 10, 1.0) == 50 * MS
    assert beside_wait({10: {11: (1, 1)}}, {10}, 10, 1.0) is None  # its main thread was not read


def test_each_step_takes_the_seconds_beside_wait_by_its_overlap_and_newer_steps_the_latest_rate() -> None:
    waits = ThreadWaits()
    assert waits.during(0, 100 * MS) == 0 and waits.latest_rate() == 0.0
    waits.add(10 * S, 11 * S, 400 * MS)  # 0.4 of each ns
    waits.add(11 * S, 12 * S, 100 * MS)  # 0.1
    assert waits.during(10 * S, 100 * MS) == 40 * MS
    assert waits.during(11 * S - 50 * MS, 100 * MS) == 20 * MS + 5 * MS  # half in each second
    assert waits.during(12 * S + 500 * MS, 100 * MS) == 10 * MS  # after the latest sample: its rate
    assert waits.during(9 * S, 100 * MS) == 0  # before the first sample: nothing known, nothing added


def test_a_steps_waiting_share_adds_its_other_threads_wait_and_never_exceeds_one() -> None:
    kf = KindFigures("train")
    kf.beside.add(0, 10 * S, 5 * S)  # the pool waited half of every second while the main thread was blocked
    for i in range(20):
        wall = 100 * MS
        kf.add(Step(2 * i, "train", wall, (0, 0, 0, 0, wall), False, False, start_ns=i * wall, wait_ns=10 * MS))
    waiting = kf.summary().waiting
    assert waiting is not None and waiting.wait is not None
    assert abs(waiting.wait.median - 0.6) < 1e-9  # its own 10% and the pool's 50%
    kf.beside.add(10 * S, 20 * S, 10 * S)  # a second in which the pool waited all along
    for i in range(20, 300):
        wall = 20 * MS
        kf.add(Step(2 * i, "train", wall, (0, 0, 0, 0, wall), False, False, start_ns=10 * S + i * wall, wait_ns=wall))
    waiting = kf.summary().waiting
    assert waiting is not None and waiting.wait is not None and waiting.wait.q75 == 1.0  # capped at the wall time


def test_a_sampled_step_whose_pool_waited_is_left_out_of_the_node_figures() -> None:
    kf = KindFigures("train")
    kf.beside.add(0, S, 300 * MS)
    ops = [(1, 5 * MS, "8", 0)]
    # Its own thread waited 2% (under the 10% threshold); its pool's 30% makes it a disturbed step.
    kf.add(Step(1, "train", 10 * MS, (0, 0, 0, 0, 10 * MS), True, False, ops, start_ns=2 * S, wait_ns=200_000))
    assert kf.waits.sampled[-1].disturbed


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
