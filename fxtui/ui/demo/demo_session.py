"""The demo session: fixed snapshots, and an answer to every command the app sends, with fixed results.

A live session acts on a command between runs and says so in later snapshots; the demo does the
same from its latest snapshot, so that trying the app without a model (``python -m
fxtui.ui.demo``) never leaves a key waiting: a pause pauses, ``x`` breaks a node down into aten
operators, ``H`` brings the hints, and a what-if goes through the progress a real one shows
before its result arrives. Nothing is measured; the same command gives the same answer.
"""

from __future__ import annotations

import dataclasses
import queue
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from fxtui.core.findings import AtenOp
from fxtui.core.snapshot import Snapshot, State
from fxtui.ui.demo.demo_findings import demo_hints, findings_snapshot
from fxtui.ui.demo.demo_what_ifs import demo_result
from fxtui.wire.viewer_commands import Explain, MeasureWhatIfs, Pause, RequestHints, Reset, Resume, Stop, ViewerCommand

#: The aten operators a node of each type runs in the demo, with their share of the node.
_ATEN: dict[str, tuple[tuple[str, int, float], ...]] = {
    "Conv2d": (("aten::conv2d", 0, 1.0), ("aten::convolution", 1, 0.99), ("aten::mkldnn_convolution", 2, 0.97)),
    "BatchNorm2d": (("aten::batch_norm", 0, 1.0), ("aten::native_batch_norm", 1, 0.96)),
    "ReLU": (("aten::relu_", 0, 1.0), ("aten::clamp_min_", 1, 0.93)),
    "MaxPool2d": (("aten::max_pool2d", 0, 1.0), ("aten::max_pool2d_with_indices", 1, 0.98)),
    "AdaptiveAvgPool2d": (("aten::adaptive_avg_pool2d", 0, 1.0), ("aten::mean", 1, 0.9)),
    "Linear": (("aten::linear", 0, 1.0), ("aten::addmm", 1, 0.97)),
    "add": (("aten::add", 0, 1.0),),
    "flatten": (("aten::flatten", 0, 1.0), ("aten::view", 1, 0.4)),
}

#: What-if progress lines the demo shows before each result, as the engine's would read.
_STEPS = ("applying the change", "checking the changed model", "warming up", "pair 10 of 20", "pair 20 of 20")


def answer(snapshot: Snapshot, command: ViewerCommand) -> Iterator[Snapshot]:
    """The snapshots a session would publish after ``command``, starting from ``snapshot`` (each the latest)."""
    state = snapshot.state
    match command:
        case Pause():
            yield dataclasses.replace(snapshot, state=State.PAUSED, message="paused")
        case Resume():
            yield dataclasses.replace(snapshot, state=State.RUNNING, message="")
        case Reset():
            yield dataclasses.replace(snapshot, message="statistics reset")
        case Explain(node):
            yield dataclasses.replace(snapshot, aten={**snapshot.aten, node: aten_of(snapshot, node)})
        case RequestHints():
            yield dataclasses.replace(snapshot, hints=demo_hints())
        case MeasureWhatIfs(names):
            yield from _measure(snapshot, names, state)


def aten_of(snapshot: Snapshot, node: str) -> tuple[AtenOp, ...]:
    """The demo's aten breakdown of ``node``: its type's operators, sharing the node's median."""
    graph = snapshot.graph
    stats = snapshot.nodes.get(node)
    if graph is None or stats is None or node not in graph.by_name:
        return ()
    median = stats.median_s
    ops = _ATEN.get(graph.node(node).type_name, ())
    shares = [share for _, _, share in ops]
    return tuple(
        AtenOp(name, depth, median * (share - (shares[i + 1] if i + 1 < len(ops) else 0.0)), median * share, 1, share)
        for i, (name, depth, share) in enumerate(ops)
    )


def _measure(snapshot: Snapshot, names: tuple[str, ...], state: State) -> Iterator[Snapshot]:
    serial = max((w.serial for w in snapshot.what_ifs), default=0)
    for name in names:
        for step in _STEPS:
            snapshot = dataclasses.replace(snapshot, what_if_progress=f"what-if {name}: {step}")
            yield snapshot
        serial += 1
        result = dataclasses.replace(demo_result(name), serial=serial)
        kept = tuple(w for w in snapshot.what_ifs if w.name != name)
        snapshot = dataclasses.replace(snapshot, what_ifs=(*kept, result), what_if_progress="")
        yield snapshot
    yield dataclasses.replace(snapshot, state=state)


@dataclass
class DemoSource:
    """A :class:`~fxtui.wire.snapshot_source.SnapshotSource` that publishes fixed snapshots and answers every command.

    ``run`` publishes ``snapshots`` in order, then answers each command the app sends from the
    latest one (:func:`answer`: a pause, an aten breakdown, the hints, a
    what-if's progress and result) until a ``Stop``; nothing depends on the clock, so what the
    app shows is the same on every run.
    """

    snapshots: Sequence[Snapshot]

    def __post_init__(self) -> None:
        self._commands: queue.SimpleQueue[ViewerCommand] = queue.SimpleQueue()

    def run(self, publish: Callable[[Snapshot], None]) -> None:
        """Publish every snapshot, then answer commands until stopped."""
        latest: Snapshot | None = None
        for snapshot in self.snapshots:
            publish(snapshot)
            latest = snapshot
        while not isinstance(command := self._commands.get(), Stop):
            if latest is None or latest.graph is None:
                continue
            for snapshot in answer(latest, command):
                latest = dataclasses.replace(snapshot, seq=latest.seq + 1)
                publish(latest)

    def send(self, command: ViewerCommand) -> None:
        """Queue ``command``; :meth:`run` answers it."""
        self._commands.put(command)


def resnet18_findings_source() -> DemoSource:
    """A demo source whose snapshot carries hints, what-ifs and thread facts."""
    return DemoSource([findings_snapshot()])
