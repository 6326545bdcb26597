"""A deterministic snapshot source for UI tests: fixed graphs, fixed numbers, pushed on demand."""

from __future__ import annotations

import dataclasses
import pickle
import threading
from array import array
from collections.abc import Callable, Mapping, Sequence

from textual.pilot import Pilot

from fxtui.core.nodes import NodeStats
from fxtui.core.program_run import ProgramState, StepSummary
from fxtui.core.snapshot import GraphInfo, RunError, Snapshot, State
from fxtui.ui.app import FxtuiApp
from fxtui.ui.demo.demo_source import build_graph, make_snapshot, resnet18_graph, resnet18_medians, synthetic_graph
from fxtui.ui.widgets.module_tree import Entry, ModuleTree
from fxtui.wire.snapshot_packing import Packer, Unpacker
from fxtui.wire.viewer_commands import Explain, MeasureWhatIfs, RequestHints, Stop, ViewerCommand

__all__ = [
    "LAYERS",
    "SIZE",
    "FailingSource",
    "FakeSource",
    "as_sent",
    "error_snapshot",
    "graph_of",
    "program_snapshot",
    "resnet_snapshot",
    "sequential_graph",
    "settle",
    "started",
    "stats_of",
    "synthetic_snapshot",
    "tree_cursor",
    "tree_entries",
]


def resnet_snapshot(
    seq: int = 1, scale: float = 1.0, *, state: State = State.RUNNING, error: RunError | None = None, runs: int = 200
) -> Snapshot:
    """resnet18 after ``runs`` runs, with every median multiplied by ``scale``."""
    return make_snapshot(
        resnet18_graph_cached(), resnet18_medians(), seq=seq, scale=scale, state=state, error=error, runs=runs
    )


_GRAPH: GraphInfo | None = None


def resnet18_graph_cached() -> GraphInfo:
    """One GraphInfo shared by every snapshot, as a live session shares it."""
    global _GRAPH
    if _GRAPH is None:
        _GRAPH = resnet18_graph()
    return _GRAPH


def error_snapshot(seq: int = 2, node: str = "layer3_0_bn2", message: str = "RuntimeError: boom") -> Snapshot:
    """A running snapshot whose latest run raised in ``node``."""
    return resnet_snapshot(seq=seq, error=RunError(message=message, node=node, runs_failed=3))


def synthetic_snapshot(n_nodes: int, seq: int = 1, scale: float = 1.0, graph: GraphInfo | None = None) -> Snapshot:
    """A snapshot of the synthetic ``n_nodes`` graph."""
    built, medians = synthetic_graph(n_nodes)
    return make_snapshot(graph or built, medians, seq=seq, scale=scale)


class FakeSource:
    """Publishes ``initial`` snapshots, then whatever the test pushes, until stopped.

    Records every call from the UI in :attr:`calls`.
    """

    def __init__(self, initial: Sequence[Snapshot] | None = None) -> None:
        self.initial = list(initial) if initial is not None else [resnet_snapshot()]
        self.calls: list[str] = []
        self.finished = threading.Event()
        self._stop = threading.Event()
        self._publish: Callable[[Snapshot], None] | None = None

    def run(self, publish: Callable[[Snapshot], None]) -> None:
        """Publish the initial snapshots and wait for :meth:`stop`."""
        self._publish = publish
        for snapshot in self.initial:
            publish(snapshot)
        self._stop.wait()
        self.finished.set()

    def push(self, snapshot: Snapshot) -> None:
        """Publish ``snapshot`` as the running session would."""
        assert self._publish is not None, "the app has not started the source"
        self._publish(snapshot)

    def send(self, command: ViewerCommand) -> None:
        """Record ``command`` as the tests name it (``pause``, ``explain NODE``, ``hints`` …)."""
        match command:
            case Explain(node):
                self.calls.append(f"explain {node}")
            case RequestHints():
                self.calls.append("hints")
            case MeasureWhatIfs(names):
                self.calls.append(f"what-if {','.join(names)}")
            case _:
                self.calls.append(type(command).__name__.lower())
        if isinstance(command, Stop):
            self._stop.set()


class FailingSource(FakeSource):
    """Fails before any graph exists, as a model that does not load would."""

    def run(self, publish: Callable[[Snapshot], None]) -> None:
        publish(Snapshot(None, State.LOADING, seq=1, message="loading nosuchmodel"))
        publish(Snapshot(None, State.ERROR, seq=2, message="unknown model 'nosuchmodel'"))
        self._stop.wait()
        self.finished.set()


async def settle(app: FxtuiApp, pilot: Pilot, applied: int = 1) -> None:
    """Wait until the app has applied ``applied`` snapshots (published from the worker thread), then idle."""
    for _ in range(1500):  # generous: the machine running the tests may be busy
        if app.main.applied >= applied:
            break
        await pilot.pause(0.01)
    else:
        raise AssertionError(f"the app applied {app.main.applied} snapshots, expected {applied}")
    # Let the layout and the repaint that follow the snapshot finish before anything is compared.
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()


def graph_of(app: FxtuiApp) -> GraphInfo:
    """The graph the app shows (it must show one)."""
    assert app.main.graph is not None
    return app.main.graph


def stats_of(app: FxtuiApp) -> Mapping[str, NodeStats]:
    """The node statistics the app shows."""
    assert app.main.snapshot is not None
    return app.main.snapshot.nodes


def tree_entries(tree: ModuleTree) -> list[str]:
    """The keys of the entries the tree lists now (expanded branches only), top to bottom."""
    return [entry.key for line in range(tree.last_line + 1) if (entry := tree.entry_at(line)) is not None]


def tree_cursor(tree: ModuleTree) -> Entry | None:
    """What the tree's cursor is on."""
    return tree.cursor_entry


# -- a program's run and the scale case's graph, shared by the run view's, disturbance and large-graph tests --


def program_snapshot(seq: int = 1, lines: tuple[str, ...] = ("epoch 1", "loss 2.30"), running: bool = True) -> Snapshot:
    """resnet18's graph as if a program ran it: 40 training steps, every fifth sampled."""
    base = resnet_snapshot(seq=seq)
    phases = (0.002, 0.020, 0.030, 0.004, 0.001)
    recent = array("d", [p * (1 + (i % 3) / 10) for i in range(40) for p in phases])
    steps = StepSummary(
        kind="train",
        steps=40,
        warmup=5,
        sampled=8,
        phase_median_s=phases,
        step_median_s=sum(phases),
        sampled_median_s=sum(phases) * 1.05,
        recent=recent,
        recent_sampled=bytes(int(i % 5 == 0) for i in range(40)),
    )
    program = ProgramState(("train.py", "--epochs", "2"), pid=4242, running=running, log="/tmp/x/output.log",
                           log_tail=lines, exit_code=None if running else 0)  # fmt: skip
    return dataclasses.replace(base, program=program, steps=steps)


#: The scale case's graph: an ``nn.Sequential`` of 10,000 layers, in a terminal this size.
LAYERS = 10_000
SIZE = (160, 48)


def sequential_graph(layers: int = LAYERS) -> tuple[GraphInfo, list[float]]:
    """``nn.Sequential(*[nn.ReLU()] * layers)`` as torch.fx traces it: one module and one node per layer."""
    rows = [("input_1", "placeholder", "input", "input", "", "1×8", 0.4)]
    rows += [(f"_{i}", "call_module", "ReLU", "ReLU", str(i), "1×8", 5.0 + (i * 37) % 17) for i in range(layers)]
    rows.append(("output", "output", "output", "output", "", "1×8", 0.3))
    return build_graph(rows, model="sequential", inputs=("1×8",)), [row[6] for row in rows]


_PACKER, _UNPACKER = Packer(), Unpacker()


def as_sent(snapshot: Snapshot) -> Snapshot:
    """``snapshot`` as the app receives it from the engine's child process."""
    wire = pickle.loads(pickle.dumps(_PACKER.pack(dataclasses.replace(snapshot, graph=None))))
    return dataclasses.replace(_UNPACKER.unpack(wire), graph=snapshot.graph)


async def started(pilot: Pilot, applied: int = 1) -> FxtuiApp:
    """The pilot's app once it has applied ``applied`` snapshots."""
    app = pilot.app
    assert isinstance(app, FxtuiApp)
    await settle(app, pilot, applied)
    return app
