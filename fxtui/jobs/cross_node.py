"""A collector's part in a job across nodes: the lead's listener, or a member's reports to the lead.

The ranks' agents find the lead in the job's store (:mod:`fxtui.agent.job_store`) and tell their collector
(:class:`~fxtui.wire.job_link.LeadAsk`, :class:`~fxtui.wire.job_link.JoinLead`), which is all a torch-free
collector needs: it never reads the store itself.

*Lead* (the collector holding rank 0): derives the job's key from the user's secret and a nonce it draws
(:mod:`fxtui.jobs.job_secret`), listens on TCP at the address its node reaches the store from, and answers only
collectors that prove that key (:class:`~fxtui.wire.sockets.GuardedListener`). Each member's reports go into
:class:`~fxtui.jobs.remote_ranks.RemoteRanks`; a member whose connection ends without its last report is gone, its
figures kept. When the lead's own program ends it waits a little for the members' last reports, then prints.

*Member*: derives the key from its own copy of the secret and the store's nonce; a fingerprint that differs from
the store's is a secret that differs, said in one sentence (and the lead would refuse it anyway). Every
:data:`~fxtui.wire.job_link.REPORT_S` seconds it sends each of its ranks' figures — per kind of step its packed
snapshot (node figures, step figures; the graph only when new), never the ops one by one — so the bytes a second
grow with the ranks and the model's nodes, not with the ops a step holds. Its program's end sends a last report
with each rank's latest sampled step (a bounded sample of ops, for the lead's trace). A lead it loses is looked for
again every :data:`LEAD_RETRY_S`: a collector that adopts the lead's job (:mod:`fxtui.jobs.adopt`) listens where
the lead did, under the same key.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import pickle
import socket
import threading
import time
from collections.abc import Callable
from multiprocessing import AuthenticationError
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fxtui.core.column_table import ColumnTable, equal_tuples
from fxtui.core.errors import FxtuiError
from fxtui.core.program_run import STEP_KINDS
from fxtui.core.snapshot import GraphInfo, Snapshot, State
from fxtui.jobs.job_secret import fingerprint, job_key, new_nonce, read_secret, secret_path
from fxtui.jobs.kept_link import KeptLead, keep_lead, keep_member, kept
from fxtui.wire.agent_contract import connect
from fxtui.wire.job_link import (
    FIGURES_EVERY_S,
    JOB_VIEW,
    REPORT_S,
    JoinLead,
    LeadAddress,
    LeadAsk,
    NodeReport,
    RankReport,
)
from fxtui.wire.snapshot_packing import Packer
from fxtui.wire.sockets import AGENT_LIMIT, GuardedListener, Unpickler

if TYPE_CHECKING:
    from fxtui.jobs.job_state import JobState

#: Seconds the lead waits, once its program ended, for the members' last reports.
MEMBERS_END_S = 20.0
#: Seconds between a rank's figures in a member's reports, at least, while its collector is behind the program.
BEHIND_FIGURES_EVERY_S = 4 * FIGURES_EVERY_S
#: Seconds between a member's looks for a lead it lost (a collector that adopts the lead's job listens where it did).
LEAD_RETRY_S = 2.0
#: Seconds, at most, the lead waits for ranks it never heard of (a member that never came: another secret).
MISSING_END_S = 3.0


class CrossNode:
    """The lead's or a member's side of a job across nodes, for the collector whose figures are ``state``."""

    def __init__(self, state: JobState, warn: Callable[[str], None] = lambda sentence: None) -> None:
        self.state = state
        self.warn = warn
        self.role = ""
        """``lead``, ``member``, or "" (a job on one collector)."""
        self._listener: GuardedListener | None = None
        self._answer: LeadAddress | None = None
        self._members: dict[int, bool] = {}
        """Each member node that connected: True once it said its last."""
        self._members_changed = threading.Condition()
        self._stop = threading.Event()
        self._forwarder: threading.Thread | None = None
        self._code: int | None = None
        self.node = -1
        self.wants_job: Callable[[], bool] = lambda: False
        """A member asks the lead for the job's other ranks while this says so (it has viewers)."""
        self._view_came = threading.Condition()
        self._view_at = -1e9
        self._asked_at = -1e9
        self.sent_bytes = 0
        """Bytes of reports a member sent so far."""
        self.keep: Path | None = None
        """A detached job's directory, where this node's part is kept for a collector that adopts the job
        (:mod:`fxtui.jobs.kept_link`)."""

    # -- the agents ask (ProgramJob's on_link, in the asking agent's connection thread) ----------------------

    def answer(self, message: object, connection: Connection) -> None:
        """Answer an agent's :class:`LeadAsk` or :class:`JoinLead` on its connection."""
        reply: object = ""
        if isinstance(message, LeadAsk):
            reply = self.lead(message)
        elif isinstance(message, JoinLead):
            reply = self.join(message)
        with contextlib.suppress(OSError, ValueError):
            connection.send(reply)

    def lead(self, ask: LeadAsk) -> LeadAddress:
        """Listen for the members (once); where, and the job's nonce and key fingerprint."""
        if self._answer is not None:
            return self._answer
        try:
            secret = read_secret(create=True)
        except FxtuiError as e:
            self._say(f"{e}: the other nodes' ranks are not in this profile")
            return LeadAddress(refused=str(e))
        nonce = new_nonce()
        return self._listen(ask.host, 0, nonce, job_key(secret, nonce), ask.node)

    def _listen(self, host: str, port: int, nonce: str, key: bytes, node: int) -> LeadAddress:
        """Listen for the members at ``host:port`` (0: any port) under ``key``; the answer the store publishes."""
        try:
            listener = GuardedListener((host, port), key, self._serve, warn=self.warn, name="fxtui-nodes")
        except OSError as e:
            self._say(f"cannot listen for the other nodes at {host}: {e.strerror or e}")
            return LeadAddress(refused=f"the lead cannot listen at {host}")
        listener.start()
        self._listener, self.role, self.node = listener, "lead", node
        address = listener.address
        assert not isinstance(address, str)
        self._answer = LeadAddress(int(address[1]), nonce, fingerprint(key))
        if self.keep is not None:
            keep_lead(self.keep, KeptLead(host, self._answer, node))
        return self._answer

    def join(self, ask: JoinLead) -> str:
        """Report to the lead at ``ask``'s address (a thread); a sentence when this node cannot."""
        if self._forwarder is not None:
            return ""
        self.node = ask.node
        try:
            key = job_key(read_secret(), ask.nonce)
        except FxtuiError as e:
            return self._say(f"{e}; this node's ranks are not in node 0's profile")
        if fingerprint(key) != ask.fingerprint:
            return self._say(
                f"the job's lead keys it with another fxtui secret than this node's ({secret_path()}): copy the "
                "lead node's file here (a shared home directory does it); this node's ranks are not in its profile"
            )
        self.role = "member"
        if self.keep is not None:
            keep_member(self.keep, ask)
        self._forwarder = threading.Thread(
            target=self._forward, args=((ask.host, ask.port), key), daemon=True, name="fxtui-node-reports"
        )
        self._forwarder.start()
        return ""

    def resume(self, directory: Path) -> None:
        """A collector that adopted the job in ``directory`` takes up its part (the agents said it only once, to the
        collector that died): a member's joins the lead again; a lead's listens again where the job's store says the
        lead is, under the key of the nonce published there (the members try again while their lead is gone)."""
        was = kept(directory)
        self.keep = directory
        if isinstance(was, JoinLead):
            self.join(was)
        elif isinstance(was, KeptLead):
            try:
                key = job_key(read_secret(), was.address.nonce)
            except FxtuiError as e:
                self._say(f"{e}: the other nodes' ranks are not in this profile")
                return
            if fingerprint(key) != was.address.fingerprint:
                self._say(f"fxtui's secret ({secret_path()}) changed since this job started: the other nodes "
                          "cannot report to this collector; their ranks are not in this profile")  # fmt: skip
                return
            self._listen(was.host, was.address.port, was.address.nonce, key, was.node)

    def _say(self, sentence: str) -> str:
        self.warn(sentence)
        with self.state.lock:
            self.state.collector.note(sentence)
        return sentence

    # -- the lead ---------------------------------------------------------------------------------------

    def _serve(self, connection: Connection) -> None:
        """One member's reports, until its connection ends (a thread per member)."""
        node: int | None = None
        final = False
        packers = Packers()
        try:
            with connection:
                while True:
                    try:
                        report = _NodeUnpickler(io.BytesIO(connection.recv_bytes(AGENT_LIMIT))).load()
                    except (EOFError, OSError):
                        return
                    except Exception as e:  # one report that does not read: the next may
                        self.warn(f"dropped a node's report that does not read ({type(e).__name__}: {e})")
                        continue
                    if not isinstance(report, NodeReport):
                        continue
                    if node is None:
                        node = report.node
                        with self._members_changed:
                            self._members[node] = False
                    with self.state.lock:
                        self.state.collector.remote.take(report)
                    if report.wants_job:
                        try:
                            self._send_view(connection, node, packers)
                        except (OSError, ValueError):
                            return
                    if report.final:
                        final = True
                        with self._members_changed:
                            self._members[node] = True
                            self._members_changed.notify_all()
        finally:
            if node is not None and not final:
                with self.state.lock:
                    self.state.collector.remote.lost(node)
                with self._members_changed:
                    self._members[node] = True  # nothing more will come from it
                    self._members_changed.notify_all()

    def _all_heard(self) -> bool:
        if not all(self._members.values()):
            return False
        with self.state.lock:
            collector = self.state.collector
            world = max((c.hello.world_size for c in collector.agents.values() if c.hello is not None), default=1)
            known = len(collector.ranked()) + len(collector.remote.ranks)
        return known >= world

    # -- either ---------------------------------------------------------------------------------------

    def finish(self, code: int | None) -> None:
        """The program of this node ended: a member sends its last report; the lead waits for the members'."""
        self._code = code
        if self.role == "member" and self._forwarder is not None:
            self._stop.set()
            self._forwarder.join(MEMBERS_END_S)
        elif self.role == "lead":
            deadline = time.monotonic() + MEMBERS_END_S
            missing_deadline = time.monotonic() + MISSING_END_S
            with self._members_changed:
                while not self._all_heard():
                    now = time.monotonic()
                    if now > deadline or (all(self._members.values()) and now > missing_deadline):
                        break
                    self._members_changed.wait(0.2)

    def close(self) -> None:
        self._stop.set()
        if self._listener is not None:
            self._listener.close()

    # -- a member ---------------------------------------------------------------------------------------

    def _forward(self, address: tuple[str, int], key: bytes) -> None:
        """Report to the lead until this node's program ends. A lead lost after it took this node is looked for again
        every :data:`LEAD_RETRY_S` (a collector that adopts the lead's job listens where it did)."""
        try:
            connection: Connection | None = connect(address, key)
        except Exception as e:  # refused (another key), unreachable: this node's profile is its own
            self._say(f"the job's lead at {address[0]}:{address[1]} did not take this node ({type(e).__name__}: "
                      f"{e}); this node's ranks are not in its profile")  # fmt: skip
            return
        lost = ""
        while connection is not None:
            if lost:  # found again: the sentence that said it was lost no longer holds
                self.warn(f"the job's lead at {address[0]}:{address[1]} takes this node's ranks again")
                with self.state.lock:
                    if self.state.collector.program.note == lost:
                        self.state.collector.note("")
            with connection:
                why = self._send_reports(connection)
            if not why:
                return
            lost = self._say(f"lost the job's lead ({why}); this node's ranks are in its own profile while it is gone")
            connection = None
            while connection is None and not self._stop.wait(LEAD_RETRY_S):
                try:
                    connection = connect(address, key)
                except AuthenticationError as e:  # a lead of another key now: no use looking again
                    self._say(f"the job's lead at {address[0]}:{address[1]} no longer takes this node ({e}); this "
                              "node's ranks are in its own profile")  # fmt: skip
                    return
                except Exception:  # still gone
                    continue

    def _send_reports(self, connection: Connection) -> str:
        """This node's reports every :data:`~fxtui.wire.job_link.REPORT_S` on ``connection`` until the program's
        end (""), or why the connection was lost."""
        packers = Packers()  # a new connection: every graph again
        host = socket.gethostname()
        final = False
        while not final:
            final = self._stop.wait(REPORT_S)
            report = self._report(host, packers, final)
            try:
                data = _dumps(report)
                connection.send_bytes(data)
                self.sent_bytes += len(data)
                if report.wants_job:
                    self._take_view(connection)
            except (OSError, ValueError, EOFError) as e:
                return type(e).__name__
        return ""

    def _report(self, host: str, packers: Packers, final: bool) -> NodeReport:
        """This node's ranks' figures now, packed (each graph only when it changed since the last report)."""
        with self.state.lock:
            ranks = _local_ranks(self.state, packers, final)
        return NodeReport(self.node, host, tuple(ranks), final=final, code=self._code if final else None,
                          wants_job=self.wants_job() or time.monotonic() - self._asked_at < 3 * REPORT_S)  # fmt: skip

    def await_view(self, timeout: float = 2 * REPORT_S + 1.0) -> None:
        """On a member: ask the lead for the job's other ranks and wait (at most ``timeout``) for them, when the
        latest came longer than a report ago (a viewer that just attached sees the whole job at once)."""
        if self.role != "member":
            return
        with self._view_came:
            if time.monotonic() - self._view_at < 2 * REPORT_S:
                return
            self._asked_at = time.monotonic()
            self._view_came.wait(timeout)

    def _take_view(self, connection: Connection) -> None:
        """The lead's answer to a report that asked for the job (read within the report's period)."""
        if not connection.poll(REPORT_S):
            return
        view = _NodeUnpickler(io.BytesIO(connection.recv_bytes(AGENT_LIMIT))).load()
        if isinstance(view, NodeReport):
            with self.state.lock:
                self.state.collector.remote.take(view)
            with self._view_came:
                self._view_at = time.monotonic()
                self._view_came.notify_all()

    def _send_view(self, connection: Connection, node: int, packers: Packers) -> None:
        """The lead answers a member that has viewers: every rank but the member's own, packed."""
        with self.state.lock:
            ranks = _local_ranks(self.state, packers, False)
            now = time.time()
            for rank, held in sorted(self.state.collector.remote.ranks.items()):
                if held.node == node or held.gone_since(now):
                    continue
                packed = {}
                for kind, snapshot in held.snapshots.items():
                    packer, last = packers.by_rank.setdefault((rank, kind), (Packer(), [None]))
                    graph = snapshot.graph if snapshot.graph is not last[0] else None
                    last[0] = snapshot.graph
                    packed[kind] = (graph, packer.pack(_plain(snapshot)))
                ranks.append(RankReport(rank, held.hello, packed))
        connection.send_bytes(_dumps(NodeReport(JOB_VIEW, socket.gethostname(), tuple(ranks))))


@dataclasses.dataclass
class Packers:
    """What one connection's reports sent so far: per rank and kind of step, the packer of its snapshots and the
    graph last sent; per rank, how many messages its collector had taken then, and when."""

    by_rank: dict[tuple[int, str], tuple[Packer, list[GraphInfo | None]]] = dataclasses.field(default_factory=dict)
    sent: dict[int, tuple[int, float]] = dataclasses.field(default_factory=dict)


def _local_ranks(state: JobState, packers: Packers, final: bool) -> list[RankReport]:
    """The ranks this collector's agents report that changed since they were last packed with ``packers``,
    packed (``state.lock`` held)."""
    ranks = []
    versions = state.collector.built.versions
    # Behind the program, a rank's figures go at most every BEHIND_FIGURES_EVERY_S: each costs a snapshot (~2 ms for
    # 1,000 nodes; 256 ranks every 5 s took a tenth of a core), which the steps waiting to be taken need more.
    every = BEHIND_FIGURES_EVERY_S if state.lag.shedding else FIGURES_EVERY_S
    for rank, collector in state.collector.ranked():
        hello = collector.hello
        if hello is None or rank >= 10_000:
            continue
        version, now = versions.get(id(collector), 0), time.monotonic()
        seen, at = packers.sent.get(rank, (-1, -1e9))
        if not final and (seen == version or now - at < every):
            continue  # nothing new since this rank's last report, or too soon
        packers.sent[rank] = (version, now)
        snapshots: dict[str, Any] = {}
        for kind in STEP_KINDS:
            figures = collector.kinds[kind]
            if not (figures.steps or figures.warmup):
                continue
            state.collector.built.share_graph(collector, kind)  # one graph for the ranks of one model: built, and
            # pickled in a report, once (256 ranks' first report pickled 256 graphs of 1,000 nodes)
            snapshot = collector.snapshot(State.DONE if final else State.RUNNING, kind=kind)
            packer, last = packers.by_rank.setdefault((rank, kind), (Packer(), [None]))
            graph = snapshot.graph if snapshot.graph is not last[0] else None
            last[0] = snapshot.graph
            snapshots[kind] = (graph, packer.pack(_plain(snapshot)))
        trace = tuple(collector.trace()) if final else ()
        ranks.append(RankReport(rank, hello, snapshots, trace))
    return ranks


#: What a node's report may hold besides a message's allowed types: numpy's arrays and scalars (a snapshot's
#: statistics), rebuilt by these functions and nothing else.
_NUMPY = {
    ("numpy._core.numeric", "_frombuffer"),
    ("numpy.core.numeric", "_frombuffer"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
}


class _NodeUnpickler(Unpickler):
    def find_class(self, module: str, name: str) -> object:
        if (module, name) in _NUMPY:
            return pickle.Unpickler.find_class(self, module, name)
        return super().find_class(module, name)


def _plain(snapshot: Snapshot) -> Snapshot:
    """The snapshot without what a lead does not show of another node's rank: its graph (which travels on its own,
    when new), its nodes' recent samples (the live app's sparklines, the most bytes of a snapshot)."""
    nodes = snapshot.nodes
    if isinstance(nodes, ColumnTable) and "recent" in nodes.columns:
        nodes = ColumnTable(nodes.kind, nodes.names, {**nodes.columns, "recent": equal_tuples((), len(nodes), 0)})
    return dataclasses.replace(snapshot, graph=None, program=None, timelines={}, other_ranks={}, nodes=nodes)


def _dumps(report: NodeReport) -> bytes:
    return pickle.dumps(report, protocol=pickle.HIGHEST_PROTOCOL)
