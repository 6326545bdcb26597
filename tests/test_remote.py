"""The live session in a child process: snapshots, commands, failures."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from fxtui.core.column_table import ColumnTable
from fxtui.core.commands import Explain, MeasureWhatIfs, Pause, RequestHints, Reset, Resume, Stop
from fxtui.core.settings import RunSettings, Target
from fxtui.core.snapshot import Snapshot, State
from fxtui.engine.remote import ChildOptions, ProcessSource

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

    def wait_for(self, predicate, timeout: float = 60.0) -> Snapshot:  # type: ignore[no-untyped-def]
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
    source = ProcessSource(ChildOptions(RunSettings(Target(target), warmup=1, **kwargs), interval=0.05))
    collector = Collector()
    worker = threading.Thread(target=source.run, args=(collector,), daemon=True)
    worker.start()
    return source, collector, worker


@pytest.fixture
def model_file(tmp_path: Path) -> str:
    path = tmp_path / "small.py"
    path.write_text(MODEL)
    return f"{path}:make"


def test_snapshots_carry_the_graph_and_commands_reach_the_child(model_file: str) -> None:
    source, got, worker = start(model_file, threads=(1,))
    running = got.wait_for(lambda s: s.state is State.RUNNING and s.runs >= 3)
    assert running.graph is not None and running.graph.threads == 1
    assert {n.name for n in running.graph.nodes} >= {"_0", "_1", "_2"}
    assert running.nodes["_0"].count == running.runs
    source.send(Pause())
    paused = got.wait_for(lambda s: s.state is State.PAUSED)
    source.send(Reset())
    cleared = got.wait_for(lambda s: s.seq > paused.seq)
    assert cleared.state is State.PAUSED and cleared.runs == 0 and not cleared.nodes  # shown at once, still paused
    source.send(Resume())
    got.wait_for(lambda s: s.state is State.RUNNING and s.seq > cleared.seq and s.runs > 0)
    source.send(Stop())
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert got.snapshots[-1].state is State.DONE


def test_first_timings_come_before_the_analysis_which_fills_in_the_graph_later(model_file: str) -> None:
    source, got, worker = start(model_file, threads=(1,))
    first = got.wait_for(lambda s: s.runs > 0)
    assert first.graph is not None and first.graph.peaks is None  # numbers first, no analysis pass yet
    assert all(n.flops is None for n in first.graph.nodes)
    analysed = got.wait_for(lambda s: s.graph is not None and s.graph.peaks is not None)
    assert analysed.graph is not None and analysed.graph.by_name["_0"].flops == 2 * 2 * 16 * 16
    assert analysed.runs >= first.runs
    source.send(Stop())
    worker.join(timeout=30)


def test_a_bad_target_ends_in_an_error_snapshot() -> None:
    _, got, worker = start("resnet19")
    error = got.wait_for(lambda s: s.state is State.ERROR)
    assert "resnet18" in error.message and error.graph is None
    worker.join(timeout=30)
    assert not worker.is_alive()


def test_a_child_that_dies_is_reported(model_file: str) -> None:
    source, got, worker = start(model_file)
    got.wait_for(lambda s: s.state is State.RUNNING)
    os.kill(source._process.pid, signal.SIGKILL)
    error = got.wait_for(lambda s: s.state is State.ERROR)
    assert "ended unexpectedly" in error.message and "out of memory" in error.message
    worker.join(timeout=30)


def test_explain_hints_and_what_ifs_arrive_in_later_snapshots_with_progress_on_the_way(tmp_path: Path) -> None:
    path = tmp_path / "convbn.py"
    path.write_text(
        "import torch\nfrom torch import nn\n\n"
        "def make():\n"
        "    return nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU()), torch.randn(1, 3, 16, 16)\n"
    )
    source, got, worker = start(f"{path}:make")
    got.wait_for(lambda s: s.state is State.RUNNING and s.runs >= 3)
    source.send(Explain("_0"))
    source.send(RequestHints())
    source.send(MeasureWhatIfs(("fold-bn", "int8-dynamic")))
    done = got.wait_for(lambda s: "_0" in s.aten and s.hints is not None and len(s.what_ifs) == 2)
    assert any("conv" in op.name for op in done.aten["_0"])
    assert any(h.rule == "conv-bn-fold" and h.what_if == "fold-bn" for h in done.hints or ())
    fold, int8 = done.what_ifs
    assert fold.measured and fold.before_s and fold.after_s and fold.serial == 1
    assert {c.name: c.after_s for c in fold.nodes}["_1"] is None  # the BatchNorm is folded away
    assert int8.error == "int8-dynamic quantizes nn.Linear layers, and this model has none"
    assert any(s.what_if_progress.startswith("what-if fold-bn: ") for s in got.snapshots)
    assert {o.name for o in done.what_if_options} >= {"channels-last", "fold-bn", "compile"}
    got.wait_for(lambda s: s.seq > done.seq and s.what_if_progress == "" and s.runs > done.runs)  # reruns go on
    source.send(Stop())
    worker.join(timeout=30)


LARGE = """
import torch
from torch import nn

def make():
    return nn.Sequential(*(nn.ReLU() for _ in range({layers}))), torch.randn(1, 8)
"""


def test_a_large_graph_crosses_as_columns_whose_names_are_sent_once(tmp_path: Path) -> None:
    layers = 3000
    path = tmp_path / "large.py"
    path.write_text(LARGE.format(layers=layers))
    source, got, worker = start(f"{path}:make", threads=(1,))
    first = got.wait_for(lambda s: s.state is State.RUNNING and s.runs >= 2, timeout=180)
    later = got.wait_for(lambda s: s.seq > first.seq and s.runs > first.runs, timeout=180)
    source.send(Stop())
    worker.join(timeout=60)
    assert first.graph is not None and len(first.graph.nodes) == layers + 2
    assert isinstance(later.nodes, ColumnTable) and isinstance(later.modules, ColumnTable)
    assert later.nodes.names is first.nodes.names  # one tuple for the session: sent once
    assert len(later.nodes) == len(first.graph.nodes)  # every node has its statistics
    stats = later.nodes[f"_{layers - 1}"]
    assert stats.count == later.runs and stats.median_s > 0 and len(stats.recent) == min(later.runs, 32)
    assert later.modules[""].nodes == layers + 2
