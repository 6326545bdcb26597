"""A step split into ops, the program's Python and waiting for a CPU: the agent's per-step wait and the collector's
figures (fxtui/agent/cpu_wait.py, fxtui/jobs/step_wait.py)."""

from __future__ import annotations

import threading
import time

import pytest

from fxtui.agent.cpu_wait import ThreadWait
from fxtui.agent.steps import ClosedStep, StepModel
from fxtui.core.nodes import Spread
from fxtui.core.step_waiting import StepWaiting
from fxtui.jobs.kind_tally import KindTally
from fxtui.jobs.step_wait import StepWaits
from fxtui.report import waiting_text
from fxtui.wire.agent_messages import Step

pytestmark = pytest.mark.unit

MS = 1_000_000


class Clocks:
    """A fake wall clock and a fake run-queue clock that tests move by hand."""

    def __init__(self) -> None:
        self.now = 0
        self.waited = 0

    def wall(self) -> int:
        return self.now

    def wait(self) -> int:
        return self.waited

    def run(self, ms: int, waiting: int = 0) -> None:
        self.now += ms * MS
        self.waited += waiting * MS


def test_a_step_carries_the_wait_of_its_own_time_and_not_of_an_evaluation_that_interrupted_it() -> None:
    clocks, closed = Clocks(), []
    model = StepModel(clocks.wall, closed.append)
    model.wait_clock = clocks.wait
    optimizer = object()
    for _ in range(3):
        model.root_enter(1, grad=True, training=True)
        clocks.run(10, waiting=4)
        model.root_exit()
        model.backward_enter()
        clocks.run(10, waiting=1)
        model.backward_exit()
        model.root_enter(1, grad=False, training=False)  # an evaluation in the middle: its wait is its own
        clocks.run(20, waiting=15)
        model.root_exit()
        model.optimizer_enter(optimizer, "SGD")
        clocks.run(5)
        model.optimizer_exit(optimizer)
    train = [s for s in closed if s.kind == "train"]
    evals = [s for s in closed if s.kind == "eval"]
    assert train and evals
    assert all(s.wait_ns == 5 * MS and s.wall_ns == 25 * MS for s in train[1:]), train
    assert all(s.wait_ns == 15 * MS for s in evals), evals


def test_without_the_kernels_figure_a_step_carries_no_wait() -> None:
    clocks, closed = Clocks(), []
    model = StepModel(clocks.wall, closed.append)  # the default wait clock says -1: unknown
    for _ in range(2):
        model.root_enter(1, grad=False, training=False)
        clocks.run(10)
        model.root_exit()
    model.finish()
    assert closed and all(isinstance(s, ClosedStep) and s.wait_ns == -1 for s in closed)
    assert ThreadWait("/nonexistent/schedstat").read() == -1


def test_the_thread_wait_grows_only_while_the_thread_is_kept_off_a_cpu() -> None:
    wait = ThreadWait()
    first = wait.read()
    if first < 0:  # no schedstat here: nothing to read
        return
    # Sleeping is not waiting for a CPU: over 0.4 s asleep only the wake-up may wait, once, for a CPU (on a machine
    # loaded by other work that wait alone read over 40 ms), never the sleep itself.
    time.sleep(0.4)
    assert wait.read() - first < 200 * MS
    seen: list[int] = []
    thread = threading.Thread(target=lambda: seen.append(wait.read()))
    thread.start()
    thread.join()
    assert seen and seen[0] >= 0  # each thread reads its own counter, from a descriptor of its own
    wait.close()


def _sampled(kf: KindTally, index: int, wall_ms: float, wait_ms: float, op_ms: float) -> None:
    ops = [(1, int(op_ms * MS / 2), "8", 0), (2, int(op_ms * MS / 2), "8", 0)]
    kf.add(Step(index, "train", int(wall_ms * MS), (0, 0, 0, 0, int(wall_ms * MS)), True, False, ops,
                wait_ns=int(wait_ms * MS)))  # fmt: skip


def _plain(kf: KindTally, index: int, wall_ms: float, wait_ms: float) -> None:
    kf.add(Step(index, "train", int(wall_ms * MS), (0, 0, 0, 0, int(wall_ms * MS)), False, False,
                wait_ns=int(wait_ms * MS)))  # fmt: skip


def test_sampled_steps_that_waited_are_left_out_of_the_node_figures_while_five_quiet_ones_remain() -> None:
    kf = KindTally("train")
    for i in range(20):
        _plain(kf, 2 * i, 10, 1)
        waited = i % 3 == 0
        _sampled(kf, 2 * i + 1, 30 if waited else 11, 18 if waited else 0.5, 16 if waited else 8)
    stats = kf.stats()
    assert stats.left_out == 7 and stats.used == 13
    assert abs(stats.median[0] - 0.004) < 1e-9  # the quiet steps' op, not the waited ones' 8 ms
    summary = kf.summary(0.008)
    waiting = summary.waiting
    assert waiting is not None and waiting.disturbed == 7 and waiting.left_out == 7
    assert waiting.badge() == "⚠ 7/20 sampled steps waited for a CPU, left out (T)"
    assert abs(waiting.wait.median - 0.1) < 1e-9  # type: ignore[union-attr]
    # The headline lies inside its own per-step range, and is the same statistic the header's spread shows.
    _, _, _, fidelity = kf.spreads()
    assert fidelity is not None and fidelity.q25 <= summary.fidelity <= fidelity.q75  # type: ignore[operator]
    assert abs(summary.fidelity - 0.8) < 1e-9  # type: ignore[operator]


def test_keep_disturbed_keeps_them_and_a_machine_busy_all_the_time_keeps_them_with_a_sentence() -> None:
    for keep, every in ((True, 3), (False, 1)):
        kf = KindTally("train", keep_disturbed=keep)
        for i in range(12):
            _plain(kf, 2 * i, 40, 30)
            waited = i % every == 0
            _sampled(kf, 2 * i + 1, 40 if waited else 11, 30 if waited else 0.5, 16 if waited else 8)
        assert kf.stats().left_out == 0
        waiting = kf.summary(0.01).waiting
        assert waiting is not None and waiting.left_out == 0 and waiting.kept_disturbed == waiting.disturbed > 0
        assert "in figures" in waiting.badge()
        said = waiting.figures_text()
        assert "they are the program's times under this load" in said
        assert ("--keep-disturbed" in said) is keep
        # The waiting is not counted twice: a kept step's ops are counted less the share its thread waited.
        assert waiting.ops_share is not None and waiting.ops_share < waiting.ops.median  # type: ignore[union-attr]
        assert abs(waiting.waiting_share - 0.75) < 1e-9  # type: ignore[operator]


def test_the_split_takes_every_sampled_steps_ops_whether_or_not_the_node_figures_leave_the_disturbed_ones_out() -> None:
    """The CNN at two threads, quiet: most sampled steps wait a little for its own DataLoader workers. Whether four
    or six of them are quiet (the node figures keep the disturbed ones, or leave them out) must not move the split:
    it read the program's Python 23% in one quiet run and 0% in the next as that count crossed five."""
    splits = []
    for quiet in (4, 6):
        kf = KindTally("train")
        for i in range(20):
            _plain(kf, 2 * i, 10, 2)  # a step of 10 ms waits 2 ms
            _sampled(kf, 2 * i + 1, 10, 2.5, 8)  # its ops took 8 ms of it, a quarter of which was waiting
        for i in range(quiet):  # quiet sampled steps whose ops, a small selection, ran long
            _sampled(kf, 100 + i, 10, 0, 9)
        waiting = kf.summary(0.01).waiting
        assert waiting is not None and waiting.split is not None and waiting.running_ops is not None
        assert bool(waiting.left_out) is (quiet >= 5)
        splits.append(waiting.split)
        assert waiting.ops_less_wait and "(less the time they waited)" in waiting_text.split_text(waiting)
    assert splits[0] == splits[1]
    ops, waiting_share, python = splits[0].ops, splits[0].waiting, splits[0].python
    assert abs(ops - 0.6) < 1e-9 and abs(waiting_share - 0.2) < 1e-9 and abs(python - 0.2) < 1e-9


def test_the_split_adds_up_and_names_what_other_processes_used() -> None:
    waiting = StepWaiting(
        known=True, wait=Spread(0.61, 0.55, 0.7), ops=Spread(0.25, 0.2, 0.3), running_ops=Spread(0.25, 0.2, 0.3),
        others_cores=1.3, cpus=2,
    )  # fmt: skip
    assert waiting.waiting_text() == "waiting for a CPU 61% (other processes used 1.3 of 2 cores)"
    assert abs(waiting.python_share - 0.14) < 1e-9  # type: ignore[operator]
    assert StepWaiting(known=False).waiting_text() == ""
    steps = StepWaits()
    assert steps.waiting(1e6) is None  # nothing measured yet
