"""The collector's logic in this process, fed the agent's messages directly: one kind's figures
(``jobs.kind_tally``), a job's ranks (``jobs.ranks``), the state its threads share (``jobs.job_state``) and the
detached collector's set-up and loop (``jobs.job_setup``, ``jobs.daemon``). The same code runs end to end under
``fxtui run`` in tests/test_run.py, tests/test_ranks.py and tests/test_attach.py."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from fxtui.core.op_nodes import EagerNode, OpTime, RootModule
from fxtui.core.settings import ProgramSettings
from fxtui.core.snapshot import State
from fxtui.jobs import daemon
from fxtui.jobs.job_setup import read_settings
from fxtui.jobs.job_state import JobState
from fxtui.jobs.kind_tally import HISTORY, KindTally
from fxtui.jobs.ranks import JobCollector
from fxtui.wire.agent_messages import Hello, Step
from fxtui.wire.job_directory import JobInfo

pytestmark = pytest.mark.unit

PHASES = (100, 400, 300, 150, 50)  # data, forward, backward, optimizer, other (ns)
NODES = [
    EagerNode(1, 0, "fc", "forward", "linear", 1, "aten.linear"),
    EagerNode(2, 0, "", "forward", "relu", 1, "aten.relu"),
]
ROOTS = [RootModule(0, "Net", {"fc": "Linear"})]


def step(
    index: int,
    wall_ns: int = 1000,
    *,
    sampled: bool = False,
    describing: bool = False,
    ops: list[OpTime] | None = None,
    warm: bool = True,
    restart: bool = False,
    kind: str = "train",
    first: bool = False,
) -> Step:
    """A step as the agent sends it; ``first`` describes the nodes and the root."""
    return Step(
        index, kind, wall_ns, PHASES, sampled, describing, ops=list(ops or []),
        nodes=list(NODES) if first else [], roots=list(ROOTS) if first else [], warm=warm, restart=restart,
    )  # fmt: skip


# -- one kind's figures ------------------------------------------------------------------------------------------


def test_warm_up_steps_are_counted_apart_and_never_in_the_figures() -> None:
    figures = KindTally("train")
    for i in range(3):
        figures.add(step(i, 10_000_000, warm=False))
    for i in range(3, 8):
        figures.add(step(i, 1_000_000))
    assert (figures.warmup, figures.steps, figures.sampled) == (3, 5, 0)
    assert [s.index for s in figures.timeline] == [3, 4, 5, 6, 7]
    assert figures.summary().step_median_s == pytest.approx(0.001)


def test_a_node_called_twice_in_a_step_counts_the_sum_of_its_calls_and_two_calls_per_step() -> None:
    figures = KindTally("train")
    ops = [(1, 300, "2×4", 0), (2, 50, "2×4", 10), (1, 500, "2×4", 20)]
    for i in range(4):
        figures.add(step(i, 2000, sampled=True, ops=ops))
    columns, others = figures.node_columns([1, 2, 3])
    assert columns[2] == -1 and not others  # node 3 never ran
    stats = figures.stats()
    assert stats.median[columns[0]] == pytest.approx(800e-9)
    assert stats.median[columns[1]] == pytest.approx(50e-9)
    assert list(figures.calls_per_step(columns)) == [2.0, 1.0, 0.0]
    assert figures.nodes == {1, 2}


def test_a_node_at_two_shapes_shows_its_most_frequent_one_and_lists_both() -> None:
    figures = KindTally("train")
    for i in range(3):
        figures.add(step(i, sampled=True, ops=[(1, 100, "32×8", 0)]))
    figures.add(step(3, sampled=True, ops=[(1, 40, "7×8", 0)]))  # the last, smaller batch
    columns, others = figures.node_columns([1])
    assert [(shape, n) for shape, n, _ in others[1]] == [("32×8", 3), ("7×8", 1)]
    assert others[1][0][2] == columns[0]
    assert figures.stats().median[columns[0]] == pytest.approx(100e-9)  # the small batch is not mixed in


def test_a_describing_steps_ops_count_but_its_wall_time_does_not() -> None:
    figures = KindTally("train")
    figures.add(step(0, 9_000_000, sampled=True, describing=True, ops=[(1, 500_000, "", 0)]))
    for i in range(1, 5):
        figures.add(step(i, 1_000_000))
    for i in range(5, 8):
        figures.add(step(i, 1_100_000, sampled=True, ops=[(1, 500_000, "", 0)]))
    summary = figures.summary(node_time_s=0.0005)  # Σ node medians, as the ops say
    assert summary.sampled == 4 and summary.step_median_s == pytest.approx(0.001)
    assert summary.overhead == pytest.approx(1.1)  # 1.1 ms sampled ÷ 1 ms plain; the describing 9 ms left out
    assert summary.fidelity == pytest.approx(0.5)
    assert figures.stats().steps == 4  # its ops are a sample like any other


def test_a_restart_forgets_the_figures_but_keeps_the_nodes() -> None:
    figures = KindTally("train")
    for i in range(4):
        figures.add(step(i, sampled=True, ops=[(1, 100, "", 0)]))
    figures.add(step(0, restart=True))
    assert (figures.steps, figures.sampled, len(figures.timeline)) == (1, 0, 1)
    assert figures.nodes == {1}


def test_the_whole_runs_history_stays_bounded_and_keeps_its_level() -> None:
    figures = KindTally("train")
    for i in range(HISTORY * 5):
        figures.add(step(i, 2_000_000 if i < HISTORY * 5 // 2 else 4_000_000))
    summary = figures.step_summary()
    assert len(summary.history) <= HISTORY and summary.history_every > 1
    assert summary.history[0] == pytest.approx(0.002) and summary.history[-1] == pytest.approx(0.004)


# -- a job's ranks ------------------------------------------------------------------------------------------------


def feed_rank(job: JobCollector, agent: int, rank: int, forward_ns: int) -> None:
    job.receive(Hello(1000 + agent, ("train.py",), "2.x", 1, rank=rank, world_size=2), agent)
    for i in range(6):
        ops = [(1, forward_ns, "2×4", 0), (2, 10, "2×4", 5)]
        job.receive(step(i, 5000, sampled=i % 2 == 1, ops=ops if i % 2 else [], first=i == 0), agent)


def test_ranks_are_shown_by_rank_and_compared_side_by_side() -> None:
    job = JobCollector(("train.py",), warmup=0)
    feed_rank(job, 0, rank=1, forward_ns=4000)  # rank 1 reported first
    feed_rank(job, 1, rank=0, forward_ns=1000)
    assert [rank for rank, _ in job.ranked()] == [0, 1]
    first = job.snapshot()
    assert first.rank_summary is not None and first.rank_summary.shown == 0
    assert [r.rank for r in first.rank_summary.ranks] == [0, 1]
    assert first.graph is not None and first.graph.ranks == (0, 1)
    assert job.snapshot(rank=1).rank_summary.shown == 1  # type: ignore[union-attr]
    assert job.snapshot(rank=7).rank_summary.shown == 0  # type: ignore[union-attr]  # unknown: the lowest
    assert job.steps == 6


def test_a_program_that_ran_no_module_says_so_as_it_ends() -> None:
    job = JobCollector(("script.py",))
    job.started(4242, "/tmp/log")
    job.ended(0)
    assert job.program.pid == 4242 and not job.program.running and job.program.exit_code == 0
    assert job.program.note == "no module was called: the program ran no nn.Module"


# -- the state the collector's threads share ---------------------------------------------------------------------


def test_a_process_that_says_hello_again_keeps_its_figures() -> None:
    state = JobState(ProgramSettings(("train.py",), warmup=0))
    state.receive(Hello(77, ("train.py",), "2.x", 1, host="a"), 0)
    state.receive(step(0, first=True), 0)
    state.receive(Hello(77, ("train.py",), "2.x", 1, host="a"), 1)  # the same process, on a new connection
    state.receive(step(1), 1)
    assert list(state.collector.agents) == [0] and state.steps == 2 and state.received == 4
    state.receive(Hello(78, ("train.py",), "2.x", 1, host="a"), 2)  # another process
    assert sorted(state.collector.agents) == [0, 2]


def test_the_latest_step_counts_from_the_first_optimizer_step() -> None:
    state = JobState(ProgramSettings(("train.py",), warmup=0))
    state.receive(step(0, kind="eval"), 0)
    state.receive(step(5, kind="eval"), 0)
    assert state.steps == 6
    state.receive(step(0, kind="train"), 0)  # the calls before were its start
    assert state.last_step == 0


def test_a_snapshot_carries_the_programs_latest_output_lines(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    log.write_text("epoch 1\nloss 2.30\n")
    state = JobState(ProgramSettings(("train.py",)), log)
    assert state.snapshot().program.log_tail[-2:] == ("epoch 1", "loss 2.30")  # type: ignore[union-attr]


def test_the_state_takes_messages_from_several_threads_at_once() -> None:
    state = JobState(ProgramSettings(("train.py",), warmup=0))

    def agent(number: int) -> None:
        state.receive(Hello(100 + number, ("train.py",), "2.x", 1, rank=number, world_size=4), number)
        for i in range(50):
            state.receive(step(i, first=i == 0), number)

    threads = [threading.Thread(target=agent, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert state.received == 4 * 51 and state.agents == 4 and state.steps == 50


# -- the detached collector ----------------------------------------------------------------------------------------


def test_a_jobs_settings_read_back_as_written(tmp_path: Path) -> None:
    settings = {"command": ["train.py", "--epochs", "1"], "warmup": 3, "listen": "0.0.0.0:7000", "cwd": "/srv"}
    (tmp_path / "settings.json").write_text(json.dumps(settings))
    read, listen, cwd = read_settings(tmp_path)
    assert read == ProgramSettings(("train.py", "--epochs", "1"), warmup=3)
    assert (listen, cwd) == ("0.0.0.0:7000", "/srv")


class FakeServer:
    """The viewers' server as the collector's loop uses it: what it was given to publish."""

    def __init__(self, viewers: int) -> None:
        self.viewers = [object()] * viewers
        self.published: list[object] = []

    def publish(self, make: object) -> None:
        assert callable(make)
        self.published.append(make(None, None))


class FakeKeeper:
    def __init__(self) -> None:
        self.kept: list[object] = []

    def keep(self, snapshot: object) -> None:
        self.kept.append(snapshot)


def test_the_collectors_loop_publishes_while_the_program_runs_and_returns_when_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(daemon, "INTERVAL", 0.001)
    monkeypatch.setattr(daemon, "INFO_EVERY", 0.0)  # job.json rewritten every look
    state = JobState(ProgramSettings(("train.py",), warmup=0))
    state.receive(step(0, first=True), 0)
    looks = iter(range(5))
    server, keeper = FakeServer(viewers=1), FakeKeeper()
    info = JobInfo("1", ("train.py",), str(tmp_path), 1, 2, 0.0)
    stop, leave = threading.Event(), threading.Event()
    running = lambda: next(looks, None) is not None  # noqa: E731  # five looks, then the program ended
    info = daemon.watch(running, state, server, keeper, tmp_path, info, stop, leave)  # type: ignore[arg-type]
    assert len(server.published) == 5 and all(s.state is State.RUNNING for s in server.published)  # type: ignore[attr-defined]
    assert info.steps == 1 and json.loads((tmp_path / "job.json").read_text())["steps"] == 1


def test_the_collectors_loop_ends_when_a_viewer_asks_to_stop(tmp_path: Path) -> None:
    state = JobState(ProgramSettings(("train.py",)))
    stop, leave = threading.Event(), threading.Event()
    stop.set()
    info = JobInfo("1", ("train.py",), str(tmp_path), 1, 2, 0.0)
    server = FakeServer(viewers=0)
    daemon.watch(lambda: True, state, server, FakeKeeper(), tmp_path, info, stop, leave)  # type: ignore[arg-type]
    assert server.published == []
