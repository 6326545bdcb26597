"""A collector's figures and what it knows of the program, behind one lock: the agents' threads write, the
viewers' threads and the collector's main loop read.

Each agent connection is one process of the program, except when a process comes back: an agent
whose collector stopped reading for long (or died, for a collector that adopts the job) connects
again and says who it is. :class:`JobState` sends the messages of a process that says its pid
again to the figures it already had, so one process stays one (not two ranks, one of them frozen).
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from pathlib import Path

from fxtui.core.op_nodes import EagerNode
from fxtui.core.settings import ProgramSettings
from fxtui.core.snapshot import Snapshot, State
from fxtui.jobs.intake_lag import IntakeLag
from fxtui.jobs.launch import log_tail
from fxtui.jobs.machine_load import Interval, MachineLoad
from fxtui.jobs.rank_snapshots import keeps_ops
from fxtui.jobs.ranks import JobCollector
from fxtui.jobs.thread_waits import beside_wait
from fxtui.wire.agent_messages import Hello, Step

#: Seconds between two looks at the machine's load (each one reads the program's threads' counters in /proc).
LOAD_EVERY_S = 1.0


class JobState:
    """The job's :class:`~fxtui.jobs.ranks.JobCollector` and the program's latest step, for every thread."""

    def __init__(self, settings: ProgramSettings, log: Path | None = None) -> None:
        self.lock = threading.Lock()
        self.collector = JobCollector(settings.command, warmup=settings.warmup, keep_disturbed=settings.keep_disturbed)
        self.log = log
        self.last_step = -1
        """The program's latest step's index, as its agent numbers them (the steps it has taken)."""
        self._kind = ""
        self.received = 0
        """Messages taken so far (a change says the figures may have changed)."""
        self.agents = 0
        """Agent connections that said anything."""
        self._by_pid: dict[tuple[str, int], int] = {}
        self._same: dict[int, int] = {}
        self._nodes: dict[EagerNode, EagerNode] = {}
        """Every node described so far, once (a job of 1,024 ranks described each ~1,700 nodes: ~1 MB a rank)."""
        self.lag = IntakeLag()
        """How far behind the program the steps are taken, and what is left out while behind."""
        self._load: MachineLoad | None = None
        self._load_at = 0.0

    def watch_load(self) -> None:
        """Sample the machine's load (at most every :data:`LOAD_EVERY_S`; the collector's loop calls this): the
        program's processes and their descendants (its DataLoader workers, torchrun's ranks) against every other
        process, so that the header says when other work took the program's cores."""
        now = time.monotonic()
        pid = self.collector.program.pid
        if not pid or now - self._load_at < LOAD_EVERY_S:
            return
        self._load_at = now
        if self._load is None:
            self._load = MachineLoad([pid], own_pid=os.getpid())
        interval = self._load.sample()
        summary = self._load.summary()
        with self.lock:
            if interval is not None:
                self._beside_waits(self._load, interval)
            self.collector.disturbed(summary.line())
            if summary.known and summary.intervals:  # beside each step's wait: what other processes used
                self.collector.loaded(summary.others_cores, summary.cpus, summary.steal_share)

    def _beside_waits(self, load: MachineLoad, interval: Interval) -> None:
        """Each process's other threads' wait that held its steps up over the latest interval
        (:mod:`fxtui.jobs.thread_waits`), to its figures."""
        start = int(interval.start * 1e9)
        end = int(interval.end * 1e9)
        for collector in self.collector.agents.values():
            pid = collector.hello.pid if collector.hello is not None else 0
            if not pid or not (collector.steps or collector.nodes):
                continue
            pool = collector.hello.threads if collector.hello is not None and collector.hello.threads > 0 else None
            beside = beside_wait(load.threads, load.subtree(pid), pid, interval.seconds, pool)
            if beside is not None:
                running, children = beside
                collector.beside.add(start, end, children, running)

    def receive(self, message: object, agent: int) -> None:
        """Take ``message`` from the agent of connection ``agent``."""
        with self.lock:
            if isinstance(message, Hello):  # a process that comes back keeps its figures
                who = (message.host, message.pid)
                self._same[agent] = self._by_pid.setdefault(who, agent)
            agent = self._same.get(agent, agent)
            ops_taken = True
            if isinstance(message, Step):
                if message.nodes:  # the ranks of one model describe the same nodes: one copy of each, not one a rank
                    message = dataclasses.replace(message, nodes=[self._nodes.setdefault(n, n) for n in message.nodes])
                held = self.collector.agents.get(agent)
                hello = held.hello if held is not None else None
                self.lag.note(message, hello.host if hello is not None else None)
                ops_taken = not message.sampled or self._takes_ops(hello)
            self.collector.receive(message, agent, ops_taken)
            self.received += 1
            self.agents = max(self.agents, agent + 1)
            if isinstance(message, Step):
                if message.kind != self._kind:  # the first optimizer step: the calls before were its start
                    self._kind, self.last_step = message.kind, -1
                self.last_step = max(self.last_step, message.index)

    def _takes_ops(self, hello: Hello | None) -> bool:
        """Whether a sampled step's ops are taken: not those of the ranks outside the sample a job of more ranks
        than a collector compares (:func:`~fxtui.jobs.rank_snapshots.keeps_ops`), nor any while the collector is
        behind the program (:mod:`fxtui.jobs.intake_lag`), so that it keeps up."""
        if hello is not None and not keeps_ops(hello.rank, hello.world_size):
            return False
        return not self.lag.leaves_out()

    def snapshot(self, state: State = State.RUNNING, rank: int | None = None, kind: str | None = None) -> Snapshot:
        """The figures now, of ``rank`` and of ``kind``'s steps (each the collector's choice when None), with the
        program's latest output lines when it writes to a log."""
        tail = log_tail(self.log)
        with self.lock:
            if self.log is not None:
                self.collector.tail(tail)
            snapshot = self.collector.snapshot(state, rank, kind)
            if state is State.DONE:
                snapshot = self._with_other_kinds(snapshot, rank)
            behind = self.lag.sentence()
        if behind:
            snapshot = dataclasses.replace(snapshot, message="; ".join(s for s in (snapshot.message, behind) if s))
        return snapshot

    def _with_other_kinds(self, snapshot: Snapshot, rank: int | None) -> Snapshot:
        """The last profile with the figures of every other kind of step the program ran, for a viewer that shows
        them after the collector has gone (each without its ranks' own snapshots and traces: what a report of
        the kind it shows holds, the ranks compared beside it)."""
        steps = snapshot.steps
        if steps is None or len(steps.kinds) < 2:
            return snapshot
        others = {}
        for each in steps.kinds:
            if each.kind != steps.kind:
                other = self.collector.snapshot(State.DONE, rank, each.kind)
                others[each.kind] = dataclasses.replace(other, other_ranks={}, timelines={})
        return dataclasses.replace(snapshot, other_kinds=others)

    @property
    def steps(self) -> int:
        """Steps so far: those the collector counted, or, when it came late (a job adopted), the program's own."""
        return max(self.collector.steps, self.last_step + 1)

    def reset(self) -> None:
        with self.lock:
            self.collector.reset()
