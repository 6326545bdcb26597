"""A job's collector across its processes: one :class:`Collector` per agent, one view of every rank.

A program that starts other Python processes (``torchrun``'s ranks, spawned DataLoader workers)
has an agent in each that imports torch; the processes that run steps are the ones shown. One
of them: its figures, as for a single process. Several (the ranks of a distributed job): the
figures of one rank at a time (the one a viewer asked for, rank 0 first), and for every node
each rank's median side by side — the fastest and slowest rank's median and which rank is
slowest (:class:`~fxtui.core.nodes.NodeStats`' rank fields) — with every rank's pace, phases,
arithmetic and waiting (:class:`~fxtui.core.program_run.RankSummary`), whose straggler line
names the rank holding the others up.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from fxtui.core.column_table import ColumnTable
from fxtui.core.nodes import NodeStats
from fxtui.core.program_run import ProgramState, RankStats, RankSummary, gone_ranks
from fxtui.core.snapshot import Snapshot, State
from fxtui.jobs.collector import Collector
from fxtui.jobs.job_processes import has_collectives, lead_process, own_kind, processes, same_kind, with_every_kind
from fxtui.jobs.rank_paces import RankPaces
from fxtui.jobs.rank_snapshots import Derived, RankSnapshots, fit_window, keeps_ops
from fxtui.jobs.remote_ranks import RemoteRank, RemoteRanks
from fxtui.jobs.step_wait import with_load
from fxtui.wire.agent_messages import Hello
from fxtui.wire.rank_sample import untimed_sentence


class JobCollector:
    """Every process of one program; :meth:`snapshot` shows one rank (or the only process) and compares them all."""

    def __init__(self, command: tuple[str, ...], warmup: int = 5, keep_disturbed: bool = False) -> None:
        self.command = command
        self.warmup = warmup
        self.keep_disturbed = keep_disturbed
        self.agents: dict[int, Collector] = {}
        self.program = ProgramState(command)
        self.built = RankSnapshots()
        self.derived = Derived()
        """Each rank's latest snapshot, rebuilt within a budget (a job of hundreds of ranks)."""
        self.paces = RankPaces()
        """The pace and phases of the ranks outside the comparison (a job of more ranks than it compares)."""
        self.remote = RemoteRanks()
        """The ranks other nodes' collectors hold, when this one leads a job across nodes."""

    def receive(self, message: object, agent: int = 0, ops_taken: bool = True) -> None:
        """Take one message from the agent of process ``agent`` (``ops_taken`` False: a sampled step whose ops the
        collector left out)."""
        collector = self.agents.get(agent)
        if collector is None:
            collector = self.agents[agent] = Collector(
                self.command, warmup=self.warmup, keep_disturbed=self.keep_disturbed
            )
        if isinstance(message, Hello) and collector.hello is None:
            fit_window(collector, message.world_size)  # hundreds of ranks: smaller windows
        collector.receive(message, ops_taken=ops_taken)
        self.built.touched(collector)

    # -- the program ----------------------------------------------------------------------------

    def started(self, pid: int, log: str) -> None:
        self.program = dataclasses.replace(self.program, pid=pid, log=log)

    def tail(self, lines: tuple[str, ...]) -> None:
        if lines != self.program.log_tail:
            self.program = dataclasses.replace(self.program, log_tail=lines)

    def ended(self, code: int) -> None:
        note = self.program.note or next((c.failed for c in self.agents.values() if c.failed), "")
        if not any(c.roots for c in self.agents.values()) and not note:
            note = "no module was called: the program ran no nn.Module"
        self.program = dataclasses.replace(self.program, running=False, exit_code=code, note=note)

    def disturbed(self, sentence: str) -> None:
        """What other work took of the program's cores so far (``""``: nothing worth a word)."""
        if sentence != self.program.disturbance:
            self.program = dataclasses.replace(self.program, disturbance=sentence)

    def loaded(self, others_cores: float, cpus: int, steal_share: float) -> None:
        """What other processes used of the machine's cores while the program ran, and what the hypervisor took."""
        self.program = dataclasses.replace(self.program, others_cores=others_cores, cpus=cpus, steal_share=steal_share)

    def note(self, sentence: str) -> None:
        """Something to say about the program itself (a log that could not be written)."""
        self.program = dataclasses.replace(self.program, note=sentence)

    def reset(self) -> None:
        for collector in self.agents.values():
            collector.reset()
            if collector.hello is not None:
                fit_window(collector, collector.hello.world_size)
            self.built.touched(collector)

    @property
    def steps(self) -> int:
        return max((c.steps for c in self.agents.values()), default=0)

    # -- which processes ----------------------------------------------------------------------

    def ranked(self) -> list[tuple[int, Collector]]:
        """The processes that run steps, by rank (processes without one after, in the order they reported); in a job
        without collectives, numbered as processes (:func:`~fxtui.jobs.job_processes.processes`)."""
        stepping = [c for c in self.agents.values() if c.steps or c.nodes]
        if len(stepping) > 1 and not has_collectives(stepping):
            return [(i, c) for i, (c, _role) in enumerate(processes(stepping, self.program.pid))]
        keyed = [(c.hello.rank if c.hello is not None and c.hello.rank is not None else 10_000 + i, c)
                 for i, c in enumerate(stepping)]  # fmt: skip
        return sorted(keyed, key=lambda kc: kc[0])

    # -- snapshots ----------------------------------------------------------------------------

    def snapshot(self, state: State = State.RUNNING, rank: int | None = None, kind: str | None = None) -> Snapshot:
        """The figures of ``rank`` (the lowest when None or unknown) and of ``kind``'s steps (the kind the figures
        lead with when None), every rank compared beside them."""
        ranked = self.ranked()
        timed = next((c.program for _, c in ranked if c.program.timer), self.program)
        if (timed.timer, timed.timer_why) != (self.program.timer, self.program.timer_why):
            self.program = dataclasses.replace(self.program, timer=timed.timer, timer_why=timed.timer_why)
        remote = self.remote.snapshots(kind, state, {r for r, _ in ranked}) if self.remote else {}
        traces = {r if r < 10_000 else 0: c.trace(kind) for r, c in ranked} if state is State.DONE else {}
        left = {r if r < 10_000 else 0: n for r, c in ranked if (n := c.trace_left_out(kind))} if traces else {}
        if len(ranked) <= 1 and not remote:
            collector = ranked[0][1] if ranked else self._any()
            snapshot = collector.snapshot(state, kind=kind)
            steps = with_load(snapshot.steps, self.program)
            hello = collector.hello
            if hello is not None and hello.rank is not None and not keeps_ops(hello.rank, hello.world_size):
                said = untimed_sentence(hello.rank, hello.world_size)  # one rank of a large job, by its own collector
                snapshot = dataclasses.replace(snapshot, message="; ".join(s for s in (snapshot.message, said) if s))
            return dataclasses.replace(
                snapshot, program=self.program, timelines=traces, steps=steps, trace_left_out=left
            )
        collectives = bool(remote) or has_collectives(c for _, c in ranked)
        untimed: list[RankStats] = []
        if collectives:
            world = max((c.hello.world_size for _, c in ranked if c.hello is not None), default=0)
            ranked, rest, sampled = self.built.sample(ranked, rank, world)
            snapshots = self.built.snapshots(ranked, state, kind, rank)
            untimed = self.paces.figures(rest, kind, self.built.versions)
            roles: dict[int, str] = {}
        else:  # processes on their own (hogwild): each its own kind of step, the one asked for where it runs it
            sampled = ""
            snapshots = {r: c.snapshot(state, kind=own_kind(c, kind)) for r, c in ranked}
            roles = {r: role for (r, _c), (_c2, role) in zip(
                ranked, processes([c for _, c in ranked], self.program.pid), strict=True)}  # fmt: skip
        holders: dict[int, Collector | RemoteRank] = dict(ranked)
        for r, (held, snap) in remote.items():  # other nodes' ranks, as their collectors last said
            snapshots[r], holders[r] = snap, held
            if state is State.DONE and held.trace:
                traces[r] = held.trace
        order = sorted(snapshots)
        shown = rank if rank in snapshots else order[0] if collectives else lead_process(ranked, kind)
        base = snapshots[shown]
        compared = snapshots
        if not collectives:
            base = with_every_kind(base, (s for r, s in snapshots.items() if r != shown))
            compared = {r: s for r, s in snapshots.items() if same_kind(s, base)}  # a worker's steps beside another's
        now = time.time()
        figures = [_figures(r, holders[r], snapshots[r], now, self.derived, roles.get(r, "")) for r in order]
        summary = RankSummary(shown, tuple(sorted([*figures, *untimed], key=lambda f: f.rank)), collectives)
        assert base.graph is not None
        graph = dataclasses.replace(base.graph, ranks=tuple(order))
        nodes = _spread_over_ranks(base, compared, shown, self.derived)
        node = next((f.node for f in summary.ranks if f.rank == shown), -1)
        said = "; ".join(s for s in (base.message or summary.straggler(), gone_ranks(summary.ranks), sampled) if s)
        return dataclasses.replace(
            base, graph=graph, nodes=nodes.with_columns(node=[node] * len(nodes)), program=self.program,
            rank_summary=summary, timelines=traces, steps=with_load(base.steps, self.program), message=said,
            trace_left_out=left,
            other_ranks={r: s for r, s in snapshots.items() if r != shown} if state is State.DONE else {},
        )  # fmt: skip

    def _any(self) -> Collector:
        if not self.agents:
            self.agents[0] = Collector(self.command, warmup=self.warmup)
        return next(iter(self.agents.values()))


def _figures(
    rank: int,
    collector: Collector | RemoteRank,
    snapshot: Snapshot,
    now: float = 0.0,
    derived: Derived | None = None,
    role: str = "",
) -> RankStats:
    """One rank's pace and phases, its arithmetic (Σ forward and backward op medians), what it waits (``role``: a
    process's name in a job without collectives)."""
    steps = snapshot.steps
    compute, backward, comm_ops = (derived or Derived()).sums(rank, snapshot)
    backward_phase = steps.median("backward") if steps is not None else None
    hello: Hello | None = collector.hello
    return RankStats(
        rank=rank,
        host=hello.host if hello is not None else "",
        steps=steps.steps if steps is not None else 0,
        step_median_s=steps.step_median_s if steps is not None else None,
        phase_median_s=steps.phase_median_s if steps is not None else (),
        compute_s=compute,
        comm_s=max(0.0, (backward_phase or 0.0) - backward),
        comm_ops_s=comm_ops,
        pid=hello.pid if hello is not None else 0,
        role=role,
        kind=steps.kind if steps is not None else "",
        node=hello.node if hello is not None and hello.node is not None else -1,
        gone_since=collector.gone_since(now) if isinstance(collector, RemoteRank) else 0.0,
        ops_timed=hello is None or keeps_ops(hello.rank, hello.world_size),
    )


def _spread_over_ranks(
    base: Snapshot, snapshots: dict[int, Snapshot], shown: int, derived: Derived | None = None
) -> ColumnTable[NodeStats]:
    """The shown rank's node statistics, each with the fastest and slowest rank's median and the slowest rank."""
    assert isinstance(base.nodes, ColumnTable)
    names = base.nodes.names
    ranks = sorted(snapshots)
    derived = derived or Derived()
    table = np.full((len(ranks), len(names)), np.nan)
    for row, r in enumerate(ranks):
        table[row] = derived.medians(r, snapshots[r], names)
    have = ~np.isnan(table)
    filled = np.where(have, table, -np.inf)
    slowest = np.array(ranks)[np.argmax(filled, axis=0)]
    with np.errstate(all="ignore"):
        low = np.nanmin(np.where(have, table, np.nan), axis=0)
        high = np.nanmax(np.where(have, table, np.nan), axis=0)
    return base.nodes.with_columns(
        rank=[shown] * len(names),
        rank_min_s=[float(v) for v in np.nan_to_num(low)],
        rank_max_s=[float(v) for v in np.nan_to_num(high)],
        slowest_rank=[int(v) if h else -1 for v, h in zip(slowest, have.any(axis=0), strict=True)],
    )
