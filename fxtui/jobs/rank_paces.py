"""The ranks a large job's collector does not compare node by node: each one's pace and phases, beside the others.

Above :data:`~fxtui.wire.rank_sample.MAX_COMPARED` ranks, only every N-th rank's agent times ops
(:mod:`fxtui.wire.rank_sample`); the others send their steps' wall time, phases and wait for a CPU. Those are what a
rank's line of the comparison shows (its steps, its step's median, each phase's), so every rank of the job stands in
:class:`~fxtui.core.program_run.RankSummary`, each marked whether its ops were timed. No snapshot is built for them
(a snapshot is ~25 ms a rank; these figures are a few medians, ~50 µs). Each is read when first seen, then again
when it changed and is older than :data:`~fxtui.jobs.rank_snapshots.REFRESH_S`, the stalest first, for at most
:data:`REREAD_S` a snapshot: 768 ranks read at once would add ~40 ms to one snapshot in every few.
"""

from __future__ import annotations

import time

from fxtui.core.program_run import RankStats
from fxtui.jobs.collector import Collector
from fxtui.jobs.rank_snapshots import REFRESH_S

#: Seconds a snapshot spends reading again the figures of ranks outside the comparison that changed, at most.
REREAD_S = 0.01


class RankPaces:
    """The latest figures of each rank outside the comparison, and the version of its messages they were read at."""

    def __init__(self) -> None:
        self._kept: dict[tuple[int, str | None], tuple[float, int, RankStats]] = {}

    def figures(
        self, ranked: list[tuple[int, Collector]], kind: str | None, versions: dict[int, int]
    ) -> list[RankStats]:
        """Each of ``ranked``'s figures of ``kind``'s steps (``versions``: messages each collector took, by ``id``)."""
        now = time.monotonic()
        out = {}
        stale: list[tuple[float, int, Collector]] = []
        for rank, collector in ranked:
            kept = self._kept.get((rank, kind))
            if kept is None:
                kept = self._kept[(rank, kind)] = (now, versions.get(id(collector), 0), pace_of(rank, collector, kind))
            elif kept[1] != versions.get(id(collector), 0) and now - kept[0] >= REFRESH_S:
                stale.append((kept[0], rank, collector))
            out[rank] = kept[2]
        stale.sort(key=lambda s: s[0])
        began = time.perf_counter()
        for _, rank, collector in stale:
            if time.perf_counter() - began > REREAD_S:
                break
            kept = self._kept[(rank, kind)] = (now, versions.get(id(collector), 0), pace_of(rank, collector, kind))
            out[rank] = kept[2]
        return list(out.values())


def pace_of(rank: int, collector: Collector, kind: str | None) -> RankStats:
    """``rank``'s steps of ``kind`` (the kind it leads with when None or not one of its kinds), without its ops."""
    kind = kind if kind in collector.kinds else collector.kind
    figures = collector.kinds[kind]
    median, phases = figures.pace()
    hello = collector.hello
    return RankStats(
        rank=rank,
        host=hello.host if hello is not None else "",
        steps=figures.steps,
        step_median_s=median,
        phase_median_s=phases,
        pid=hello.pid if hello is not None else 0,
        kind=kind,
        node=hello.node if hello is not None and hello.node is not None else -1,
        ops_timed=False,
    )
