"""The live session in a child process: snapshots, commands, failures."""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from deadlines import COMMAND_S, START_S

from fxtui.commands.model_engine import ProcessSource
from fxtui.core.settings import ModelSettings, Target
from fxtui.core.snapshot import Snapshot, State
from fxtui.measure.child import ChildOptions
from fxtui.wire.viewer_commands import Pause, Reset, Resume, Stop

pytestmark = pytest.mark.e2e

MODEL = """
import torch
from torch import nn

def make():
    return nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4)), torch.randn(2, 16)
"""


class Collector:
    def __init__(self) -> None:
        self.snapshots: list[Snapshot] = []
        self.arrived = threading.Condition()

    def __call__(self, snapshot: Snapshot) -> None:
        with self.arrived:
            self.snapshots.append(snapshot)
            self.arrived.notify_all()

    def wait_for(self, predicate, timeout: float = START_S) -> Snapshot:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        with self.arrived:
            while True:
                for s in reversed(self.snapshots):
                    if predicate(s):
                        return s
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no such snapshot; last: {self.snapshots[-1:]}")
                self.arrived.wait(left)


def start(target: str, **kwargs) -> tuple[ProcessSource, Collector, threading.Thread]:  # type: ignore[no-untyped-def]
    source = ProcessSource(ChildOptions(ModelSettings(Target(target), warmup=1, **kwargs), interval=0.05))
    collector = Collector()
    worker = threading.Thread(target=source.run, args=(collector,), daemon=True)
    worker.start()
    return source, collector, worker


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("model") / "small.py"
    path.write_text(MODEL)
    return f"{path}:make"


@dataclasses.dataclass
class Commanded:
    """One engine's snapshots, from its start through pause, reset, resume and stop."""

    got: Collector
    running: Snapshot
    paused: Snapshot
    cleared: Snapshot
    stopped: bool
    """The engine's thread ended once stopped."""


@pytest.fixture(scope="module")
def commanded(model_file: str) -> Commanded:
    """An engine (one thread) run once for the two tests below, each of which would start a Python importing torch
    of its own: it runs until its analysis filled in the graph, then is paused, reset, resumed and stopped."""
    source, got, worker = start(model_file, threads=(1,))
    running = got.wait_for(lambda s: s.state is State.RUNNING and s.runs >= 3)
    got.wait_for(lambda s: s.graph is not None and s.graph.peaks is not None)
    source.send(Pause())
    paused = got.wait_for(lambda s: s.state is State.PAUSED, COMMAND_S)
    source.send(Reset())
    cleared = got.wait_for(lambda s: s.seq > paused.seq, COMMAND_S)
    source.send(Resume())
    got.wait_for(lambda s: s.state is State.RUNNING and s.seq > cleared.seq and s.runs > 0, COMMAND_S)
    source.send(Stop())
    worker.join(timeout=COMMAND_S)
    return Commanded(got, running, paused, cleared, not worker.is_alive())


def test_snapshots_carry_the_graph_and_commands_reach_the_child(commanded: Commanded) -> None:
    running, cleared = commanded.running, commanded.cleared
    assert running.graph is not None and running.graph.threads == 1
    assert {n.name for n in running.graph.nodes} >= {"_0", "_1", "_2"}
    assert running.nodes["_0"].count == running.runs
    assert cleared.state is State.PAUSED and cleared.runs == 0 and not cleared.nodes  # shown at once, still paused
    assert commanded.stopped
    assert commanded.got.snapshots[-1].state is State.DONE


def test_first_timings_come_before_the_analysis_which_fills_in_the_graph_later(commanded: Commanded) -> None:
    snapshots = commanded.got.snapshots
    first = next(s for s in snapshots if s.runs > 0)
    assert first.graph is not None and first.graph.peaks is None  # numbers first, no analysis pass yet
    assert all(n.flops is None for n in first.graph.nodes)
    analysed = next(s for s in snapshots if s.graph is not None and s.graph.peaks is not None)
    assert analysed.graph is not None and analysed.graph.by_name["_0"].flops == 2 * 2 * 16 * 16
    assert analysed.runs >= first.runs


def test_a_bad_target_ends_in_an_error_snapshot() -> None:
    _, got, worker = start("resnet19")
    error = got.wait_for(lambda s: s.state is State.ERROR)
    assert "resnet18" in error.message and error.graph is None
    worker.join(timeout=COMMAND_S)
    assert not worker.is_alive()


@dataclasses.dataclass
class Killed:
    """One engine killed as the OOM killer would kill it, past its analysis."""

    got: Collector
    last: Snapshot
    """A running snapshot of three runs or more, before the kill."""
    error: Snapshot
    named: list[str] | None
    """The named semaphores the child had mapped (None: no /proc here)."""


@pytest.fixture(scope="module")
def killed(model_file: str) -> Killed:
    """An engine run once for the two tests below: past its analysis (fx ran), and three runs or more, its child is
    killed."""
    source, got, worker = start(model_file)
    got.wait_for(lambda s: s.graph is not None and s.graph.peaks is not None)  # past the analysis: fx ran
    last = got.wait_for(lambda s: s.state is State.RUNNING and s.runs >= 3)
    maps = Path(f"/proc/{source._process.pid}/maps")
    named = [line for line in maps.read_text().splitlines() if "/dev/shm/sem." in line] if maps.exists() else None
    os.kill(source._process.pid, signal.SIGKILL)
    error = got.wait_for(lambda s: s.state is State.ERROR)
    worker.join(timeout=COMMAND_S)
    return Killed(got, last, error, named)


def test_a_child_that_dies_is_reported_and_its_last_figures_stay_final(killed: Killed) -> None:
    got, last, error = killed.got, killed.last, killed.error
    assert "ended unexpectedly" in error.message and "out of memory" in error.message
    assert "final" in error.message
    before = got.snapshots[got.snapshots.index(error) - 1]
    assert before.runs >= last.runs and error.runs == before.runs
    assert error.graph is before.graph and list(error.nodes) == list(before.nodes)
    assert error.nodes["_0"].median_s == before.nodes["_0"].median_s > 0


def test_a_killed_child_leaves_no_semaphore_behind(killed: Killed) -> None:
    # The resource tracker warned of a "leaked semaphore" on the user's terminal after the OOM killer struck:
    # the child's tqdm lock (torch.fx makes a progress bar) was a named semaphore. None is made now.
    if killed.named is None:
        pytest.skip("no /proc here")
    assert not killed.named
