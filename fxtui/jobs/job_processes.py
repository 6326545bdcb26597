"""The processes of a job without collectives: hogwild workers, not ranks.

A program that trains in several processes with no process group (pytorch/examples
``mnist_hogwild``: ``torch.multiprocessing`` workers updating one model in shared memory, then the
parent's evaluation) has no ranks: no process waits for another in a collective, so there is no
straggler to name and nothing to wait in backward. Its processes are named as what they are —
the program's main process and its workers (``worker 1 of 2, pid 4242``) — and numbered in that
order (the main process first, the workers by pid), which ``--rank`` selects. The figures lead with
a process that trains; the kinds of step only another process runs (the parent's evaluation) are
summed up beside them, their nodes a ``--kind`` away.

A job has collectives when any process has a rank (``RANK``, as torchrun sets it) or ran a
collective op (``c10d``, the ``comm`` phase: a process group made by ``mp.spawn`` without ``RANK``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from fxtui.core.program_run import STEP_KINDS
from fxtui.core.snapshot import Snapshot
from fxtui.jobs.collector import Collector


def has_collectives(collectors: Iterable[Collector]) -> bool:
    """Any of these processes is a rank of a distributed job, or ran a collective."""
    for collector in collectors:
        if collector.hello is not None and collector.hello.rank is not None:
            return True
        if any(node.phase == "comm" for node in collector.nodes.values()):
            return True
    return False


def processes(stepping: list[Collector], program_pid: int) -> list[tuple[Collector, str]]:
    """The processes, the main one first and the workers by pid, each with its name (``worker 1 of 2``)."""

    def pid(collector: Collector) -> int:
        return collector.hello.pid if collector.hello is not None else 0

    main = [c for c in stepping if program_pid and pid(c) == program_pid]
    workers = sorted((c for c in stepping if c not in main), key=pid)
    named = [(c, "main process") for c in main]
    return named + [(c, f"worker {i} of {len(workers)}") for i, c in enumerate(workers, 1)]


def runs_kind(collector: Collector, kind: str) -> bool:
    figures = collector.kinds.get(kind)
    return figures is not None and bool(figures.steps or figures.warmup)


def own_kind(collector: Collector, kind: str | None) -> str:
    """``kind`` when this process runs steps of it, else the kind its own figures lead with."""
    return kind if kind is not None and runs_kind(collector, kind) else collector.kind


def lead_process(ranked: list[tuple[int, Collector]], kind: str | None) -> int:
    """The process whose figures are shown: the first to run ``kind``'s steps (training first when None)."""
    for wanted in [kind] if kind is not None else list(STEP_KINDS):
        for key, collector in ranked:
            if runs_kind(collector, wanted):
                return key
    return ranked[0][0]


def same_kind(snapshot: Snapshot, base: Snapshot) -> bool:
    """Both snapshots' figures are of the same kind of step."""
    return snapshot.steps is not None and base.steps is not None and snapshot.steps.kind == base.steps.kind


def with_every_kind(base: Snapshot, others: Iterable[Snapshot]) -> Snapshot:
    """``base`` with a summary of each kind of step only other processes run (the parent's evaluation), so that the
    header gives it a line."""
    steps = base.steps
    if steps is None:
        return base
    have = {k.kind for k in steps.kinds}
    added = []
    for other in others:
        for summary in other.steps.kinds if other.steps is not None else ():
            if summary.kind not in have:
                have.add(summary.kind)
                added.append(summary)
    if not added:
        return base
    kinds = tuple(sorted((*steps.kinds, *added), key=lambda k: STEP_KINDS.index(k.kind)))
    return dataclasses.replace(base, steps=dataclasses.replace(steps, kinds=kinds))
