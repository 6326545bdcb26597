"""The ranks of a job that other collectors hold (other nodes'), as the lead collector last heard of them.

A member collector sends the lead each of its ranks' figures every second (:class:`~fxtui.wire.job_link.NodeReport`):
per kind of step a packed snapshot, its graph only when new. The lead keeps the latest of each rank; its
:class:`~fxtui.jobs.ranks.JobCollector` shows them beside its own ranks. A node that goes silent (killed, its
network gone) keeps its last figures whole; its ranks are marked gone since the last word heard from it.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

from fxtui.core.program_run import STEP_KINDS
from fxtui.core.snapshot import GraphInfo, Snapshot, State
from fxtui.wire.agent_messages import Hello
from fxtui.wire.job_link import JOB_VIEW, SILENT_S, NodeReport
from fxtui.wire.snapshot_packing import Unpacker


@dataclass
class RemoteRank:
    """One rank of another collector's: its greeting and its latest figures per kind of step."""

    hello: Hello
    node: int
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    graphs: dict[str, GraphInfo] = field(default_factory=dict)
    unpackers: dict[str, Unpacker] = field(default_factory=dict)
    trace: list[tuple[str, float, float]] = field(default_factory=list)
    heard: float = 0.0
    """Wall-clock time of its node's latest report."""
    done: bool = False
    """Its node said its program ended."""
    lost_at: float = 0.0
    """When its node's connection ended without a last report (0: it did not)."""

    @property
    def steps(self) -> int:
        return max((s.steps.steps for s in self.snapshots.values() if s.steps is not None), default=0)

    def gone_since(self, now: float) -> float:
        """The last word heard of it when it is gone (its node lost, or silent for :data:`SILENT_S`), else 0."""
        if self.done:
            return 0.0
        if self.lost_at or now - self.heard > SILENT_S:
            return self.heard
        return 0.0

    def snapshot(self, kind: str | None) -> Snapshot | None:
        """Its figures of ``kind``'s steps (the kind it leads with when None)."""
        if kind is not None:
            return self.snapshots.get(kind)
        return next((self.snapshots[k] for k in STEP_KINDS if k in self.snapshots), None)


class RemoteRanks:
    """Every rank other collectors reported, by rank."""

    def __init__(self) -> None:
        self.ranks: dict[int, RemoteRank] = {}
        self.nodes: dict[int, str] = {}
        """Each member node that reported, and its host."""
        self.reports = 0

    def __bool__(self) -> bool:
        return bool(self.ranks)

    def take(self, report: NodeReport, now: float | None = None) -> None:
        """A member's report: its ranks' latest figures replace what was known of them."""
        now = time.time() if now is None else now
        self.reports += 1
        if report.node != JOB_VIEW:
            self.nodes[report.node] = report.host
        for each in report.ranks:
            held = self.ranks.get(each.rank)
            node = report.node if report.node != JOB_VIEW else (each.hello.node if each.hello.node is not None else -1)
            if held is None or held.hello.pid != each.hello.pid:
                held = self.ranks[each.rank] = RemoteRank(each.hello, node)
            for kind, (graph, packed) in each.snapshots.items():
                if graph is not None:
                    held.graphs[kind] = graph
                unpacker = held.unpackers.setdefault(kind, Unpacker())
                snapshot = unpacker.unpack(packed)
                if kind in held.graphs:
                    held.snapshots[kind] = dataclasses.replace(snapshot, graph=held.graphs[kind])
            if each.trace:
                held.trace = list(each.trace)
        told = {each.rank for each in report.ranks}
        for rank, held in self.ranks.items():
            if held.node == report.node or (report.node == JOB_VIEW and rank in told):
                held.heard, held.lost_at = now, 0.0
                held.done = held.done or report.final

    def lost(self, node: int, now: float | None = None) -> None:
        """``node``'s connection ended without its last report: its ranks are gone (their figures stay)."""
        now = time.time() if now is None else now
        for held in self.ranks.values():
            if held.node == node and not held.done:
                held.lost_at = now

    def snapshots(self, kind: str | None, state: State, skip: set[int]) -> dict[int, tuple[RemoteRank, Snapshot]]:
        """Each remote rank's figures of ``kind`` (ranks in ``skip`` are held here too, and shown from here)."""
        out = {}
        for rank, held in sorted(self.ranks.items()):
            if rank in skip:
                continue
            snapshot = held.snapshot(kind)
            if snapshot is not None:
                out[rank] = (held, dataclasses.replace(snapshot, state=state))
        return out
