"""Each rank's snapshot for the comparison across ranks, rebuilt within a budget: a collector of hundreds of ranks.

A rank's snapshot costs ~25 ms for a model of 1,000 ops (its statistics, its module table, its step summary). Built
for every rank at every viewer's refresh (4 a second), 256 ranks would take seven seconds a refresh. So the rank a
viewer is shown is rebuilt whenever it changed, and the others only when they changed and their snapshot is older
than :data:`REFRESH_S`, the stalest first, for at most :data:`REBUILD_S` a refresh: each rank's figures in the
comparison are a few seconds old at most, and a refresh costs the shown rank and a few others. Above
:data:`~fxtui.wire.rank_sample.MAX_COMPARED` ranks the comparison holds a sample (every N-th rank, and the shown
one): the only ranks whose agents time their ops (:mod:`fxtui.wire.rank_sample`); the others' pace and phases stand
beside them (:mod:`fxtui.jobs.rank_paces`), and the view says so. A job's last snapshot (its end) is built whole,
every rank fresh.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from fxtui.core.column_table import ColumnTable, equal_tuples
from fxtui.core.sample_window import SampleWindow
from fxtui.core.snapshot import Snapshot, State
from fxtui.jobs.collector import Collector
from fxtui.wire.rank_sample import MAX_COMPARED, sample_sentence, stride, times_ops

__all__ = ["MAX_COMPARED", "REBUILD_S", "REFRESH_S", "Derived", "RankSnapshots", "fit_window", "keeps_ops", "stride"]

#: Seconds a rank's snapshot in the comparison may be old before it is rebuilt (when it changed).
REFRESH_S = 2.0
#: Seconds a refresh spends rebuilding ranks other than the shown one, at most (one at least).
REBUILD_S = 0.05


#: Sampled steps each rank's statistics keep when a collector holds this many ranks or fewer (the window's own
#: default); above, fewer, so that the memory of a collector of hundreds of ranks stays under a gigabyte.
FULL_WINDOW_RANKS = 64


def fit_window(collector: Collector, world: int) -> None:
    """Give a new rank's statistics a window that fits a job of ``world`` ranks: 256 sampled steps up to
    :data:`FULL_WINDOW_RANKS` ranks, down to 64 at :data:`~fxtui.wire.rank_sample.MAX_COMPARED` (each of a 1,000-node
    model's windows is ~1.8 MB at 256). A larger job's ranks outside the sample time no op: their windows stay empty,
    so its sampled ranks keep as many steps as 256 ranks do."""
    timed = min(world, MAX_COMPARED)
    if timed <= FULL_WINDOW_RANKS:
        return
    steps = max(32, 256 * FULL_WINDOW_RANKS // timed)
    for figures in collector.kinds.values():
        if not figures.window.columns and not figures.window.steps:
            figures.window = SampleWindow(window=steps)


def keeps_ops(rank: int | None, world: int) -> bool:
    """Whether the collector takes the ops of ``rank``'s sampled steps in a job of ``world`` ranks: those of the
    ranks whose agents time them (:func:`~fxtui.wire.rank_sample.times_ops`; an agent of an fxtui from before that
    rule still sends the others', which are left out)."""
    return times_ops(rank, world)


class RankSnapshots:
    """The latest snapshot of each rank (by agent), and how many messages it had when built."""

    def __init__(self) -> None:
        self.versions: dict[int, int] = {}
        """Messages each process's collector took (by ``id`` of its collector): a change says rebuild."""
        self._built: dict[tuple[int, str | None, State], tuple[float, int, Snapshot, bool]] = {}
        self._donors: dict[tuple[object, ...], Collector] = {}
        """A rank whose graph others with the same nodes share (by kind, node counts, threads, script)."""

    def touched(self, collector: Collector) -> None:
        key = id(collector)
        self.versions[key] = self.versions.get(key, 0) + 1

    def sample(
        self, ranked: list[tuple[int, Collector]], shown: int | None, world: int = 0
    ) -> tuple[list[tuple[int, Collector]], list[tuple[int, Collector]], str]:
        """The ranks compared, the others, and what the view says: every rank, none and "" up to
        :data:`~fxtui.wire.rank_sample.MAX_COMPARED` ranks in a job of ``world`` (at least as many as ``ranked``);
        above, every ``stride``-th rank (those whose agents time their ops) and the shown one."""
        world = max(world, len(ranked))
        every = stride(world)
        if every == 1:
            return ranked, [], ""
        sample = [(r, c) for r, c in ranked if r % every == 0 or r == shown]
        rest = [(r, c) for r, c in ranked if not (r % every == 0 or r == shown)]
        return sample, rest, sample_sentence(len(sample), world)

    def snapshots(
        self, ranked: list[tuple[int, Collector]], state: State, kind: str | None, shown: int | None
    ) -> dict[int, Snapshot]:
        """Each rank's snapshot: the shown one (the first when None) fresh, the others within the budget."""
        now = time.monotonic()
        first = shown if shown in {r for r, _ in ranked} else (ranked[0][0] if ranked else None)
        out: dict[int, Snapshot] = {}
        stale: list[tuple[float, int, Collector]] = []
        for rank, collector in ranked:
            key = (rank, kind, state)
            built = self._built.get(key)
            version = self.versions.get(id(collector), 0)
            if built is None and rank != first and state is not State.DONE:
                stale.append((-1.0, rank, collector))  # never built: first in line, absent until then
                continue
            if built is not None and rank == first and built[3]:
                built = None  # kept without its samples: the shown rank's sparklines need them
            if built is not None and (built[1] == version or (rank != first and state is not State.DONE)):
                out[rank] = built[2]
                if built[1] != version and now - built[0] >= REFRESH_S:
                    stale.append((built[0], rank, collector))
                continue
            out[rank] = self._build(key, collector, state, kind, now, version, lean=False)
        stale.sort(key=lambda s: s[0])
        began = time.perf_counter()
        for _, rank, collector in stale:
            if time.perf_counter() - began > REBUILD_S:
                break
            version = self.versions.get(id(collector), 0)
            out[rank] = self._build((rank, kind, state), collector, state, kind, now, version)
        return out

    def _build(self, key: tuple[int, str | None, State], collector: Collector, state: State, kind: str | None,
               now: float, version: int, lean: bool = True) -> Snapshot:  # fmt: skip
        """Rank ``key[0]``'s snapshot now; ``lean``: kept without its nodes' recent samples (only the shown rank's
        sparklines draw them, and they are most of a snapshot's memory: 256 ranks' took ~110 MB)."""
        self.share_graph(collector, kind)
        snapshot = collector.snapshot(state, kind=kind)
        nodes = snapshot.nodes
        lean = lean and state is not State.DONE and isinstance(nodes, ColumnTable) and "recent" in nodes.columns
        if lean:
            assert isinstance(nodes, ColumnTable)
            flat = ColumnTable(nodes.kind, nodes.names, {**nodes.columns, "recent": equal_tuples((), len(nodes), 0)})
            snapshot = dataclasses.replace(snapshot, nodes=flat)
        self._built[key] = (now, version, snapshot, lean)
        return snapshot

    def share_graph(self, collector: Collector, kind: str | None) -> None:
        """Give ``collector`` the graph another rank built from the same nodes (the ranks of a data-parallel job
        run one model): built once, not once a rank (~60 ms and ~0.5 MB each for 1,000 nodes)."""
        kind = kind or collector.kind
        figures = collector.kinds.get(kind)
        if figures is None or not collector.nodes:
            return
        key = (len(collector.nodes), len(collector.roots), collector._described, len(figures.nodes))
        cached = collector._graphs.get(kind)
        if cached is not None and cached[0] == key:
            return
        hello = collector.hello
        signature = (kind, key, hello.threads if hello is not None else 0, collector.program.script)
        donor = self._donors.get(signature)
        if donor is None or donor is collector:
            self._donors[signature] = collector
            return
        theirs = donor._graphs.get(kind)
        if (
            theirs is not None
            and theirs[0] == key
            and donor.kinds[kind].nodes == figures.nodes
            and donor.nodes == collector.nodes
            and donor.roots == collector.roots
        ):
            collector._graphs[kind] = theirs


class Derived:
    """What the comparison derives from each rank's snapshot, kept while that snapshot is the rank's latest: a
    rank rebuilt every few seconds is not summed again at every refresh."""

    def __init__(self) -> None:
        self._sums: dict[int, tuple[Snapshot, tuple[float, float, float]]] = {}
        self._aligned: dict[int, tuple[Snapshot, tuple[str, ...], np.ndarray]] = {}

    def sums(self, rank: int, snapshot: Snapshot) -> tuple[float, float, float]:
        """Σ of the rank's forward and backward ops' medians, of its backward ops', of its collectives'."""
        kept = self._sums.get(rank)
        if kept is not None and kept[0] is snapshot:
            return kept[1]
        graph = snapshot.graph
        compute = backward = comm_ops = 0.0
        if graph is not None and isinstance(snapshot.nodes, ColumnTable):
            medians = np.asarray(snapshot.nodes.column("median_s"), dtype=np.float64)
            phases = np.array([info.phase for info in graph.nodes][: len(medians)])
            medians = medians[: len(phases)]
            compute = float(medians[(phases == "forward") | (phases == "backward")].sum())
            backward = float(medians[phases == "backward"].sum())
            comm_ops = float(medians[phases == "comm"].sum())
        self._sums[rank] = (snapshot, (compute, backward, comm_ops))
        return compute, backward, comm_ops

    def medians(self, rank: int, snapshot: Snapshot, names: tuple[str, ...]) -> np.ndarray:
        """The rank's median of each of ``names`` (NaN where it has none)."""
        kept = self._aligned.get(rank)
        if kept is not None and kept[0] is snapshot and (kept[1] is names or kept[1] == names):
            return kept[2]
        other = snapshot.nodes
        if isinstance(other, ColumnTable):
            index = other.index
            values = np.asarray(other.column("median_s"), dtype=np.float64)
            at = np.array([index.get(n, -1) for n in names], dtype=np.int64)
            aligned = np.where(at >= 0, values[np.maximum(at, 0)] if len(values) else np.nan, np.nan)
        else:
            aligned = np.full(len(names), np.nan)
        self._aligned[rank] = (snapshot, names, aligned)
        return aligned
