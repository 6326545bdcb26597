"""A deterministic snapshot source for UI tests: fixed graphs, fixed numbers, pushed on demand."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence

from textual.pilot import Pilot

from fxtui.core.commands import Command, Explain, MeasureWhatIfs, RequestHints, Stop
from fxtui.core.nodes import NodeStats
from fxtui.core.snapshot import GraphInfo, RunError, Snapshot, State
from fxtui.ui.app import FxtuiApp
from fxtui.ui.demo.demo_source import make_snapshot, resnet18_graph, resnet18_medians, synthetic_graph
from fxtui.ui.widgets.module_tree import Entry, ModuleTree

__all__ = [
    "FailingSource",
    "FakeSource",
    "error_snapshot",
    "graph_of",
    "resnet_snapshot",
    "settle",
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

    def send(self, command: Command) -> None:
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
