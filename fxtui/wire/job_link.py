"""How the collectors of one multi-node job find each other and what they tell one another.

A ``torchrun`` job that spans nodes has one collector per node (``fxtui run torchrun --node-rank K …`` on each),
or one per rank (``torchrun … fxtui run --once …``). The collector holding global rank 0 *leads*: the others
(*members*) send it their ranks' figures, so that its profile, its ``--once`` report and every viewer of it show the
whole job. They find it through the job's own torch.distributed store (``MASTER_ADDR``/``MASTER_PORT``), under
:data:`STORE_PREFIX`: the collectors never import torch, so the agents of the ranks (which have it) read and write
the store and tell their collector what they found, on a connection of their own (:class:`LeadAsk`,
:class:`JoinLead`).

Torch-free data: the agent makes the asks, the collectors the reports. What goes into the store is only what may be
read by whoever reaches it (torch's store is unauthenticated): the lead's address, a per-job nonce, and the
fingerprint of the key derived from the user's fxtui secret and that nonce — never the secret or the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # an annotation only: the command that starts a program reads JOB_SCOPE here, before it starts
    from fxtui.wire.agent_messages import Hello

#: The key prefix fxtui writes under in the job's store (then the job's run id, torchrun's ``--rdzv-id``).
STORE_PREFIX = "fxtui/"
#: The store key that holds the lead collector's address, nonce and key fingerprint.
LEAD_KEY = "lead"
#: Set by a collector in the program's environment when the collector holds one rank only (``torchrun … fxtui run``
#: runs one collector inside each rank): then every rank of a job of more than one reports across collectors.
JOB_SCOPE = "FXTUI_JOB_SCOPE"
#: Seconds a member's agent waits for the lead to appear in the store before its node profiles its own ranks only.
LEAD_WAIT_S = 120.0


@dataclass(frozen=True)
class LeadAsk:
    """The agent of global rank 0 asks its collector to lead the job: listen for the other collectors at ``host``
    (the address this node reaches the job's store from)."""

    host: str
    node: int = 0


@dataclass(frozen=True)
class LeadAddress:
    """The lead collector's answer: the port it listens on, the job's nonce and its key's fingerprint (published in
    the store as they are); ``refused``, a sentence, when it cannot lead."""

    port: int = 0
    nonce: str = ""
    fingerprint: str = ""
    refused: str = ""


@dataclass(frozen=True)
class JoinLead:
    """A member's agent tells its collector where the lead is (as read from the job's store)."""

    host: str
    port: int
    nonce: str
    fingerprint: str
    node: int = -1


@dataclass(frozen=True)
class RankReport:
    """One rank's figures as its node's collector holds them: per kind of step, the packed snapshot
    (:mod:`fxtui.wire.snapshot_packing`, its graph only when new) — node figures, step figures — and, in a node's
    last report, its latest sampled step's ops (a bounded sample: one step's)."""

    rank: int
    hello: Hello
    snapshots: dict[str, Any] = field(default_factory=dict)
    """kind → (graph or None when unchanged, packed snapshot)."""
    trace: tuple[tuple[str, float, float], ...] = ()


@dataclass(frozen=True)
class NodeReport:
    """What a member collector sends the lead every :data:`REPORT_S` seconds: its ranks' figures."""

    node: int
    host: str
    ranks: tuple[RankReport, ...] = ()
    final: bool = False
    """The node's program ended: its ranks are done, not gone."""
    code: int | None = None
    """The node's program's exit status, in its final report."""
    wants_job: bool = False
    """The member has viewers: the lead answers with every other rank's figures (a :data:`JOB_VIEW` report)."""


#: A :class:`NodeReport`'s node when the lead sends a member the job's other ranks (each rank's node is its
#: ``hello.node``).
JOB_VIEW = -2


#: Seconds between a member's reports to the lead (each says the node is there).
REPORT_S = 1.0
#: Seconds between two reports of one rank's figures (when they changed): a rank's node statistics are ~120 kB for
#: a model of 1,000 nodes, so sent every 5 s they cost ~12 kB a step at 2 steps a second.
FIGURES_EVERY_S = 5.0
#: Seconds without a report after which the lead takes a member's ranks for gone.
SILENT_S = 10.0


def lead_value(host: str, port: int, nonce: str, fingerprint: str) -> str:
    """The store's value for :data:`LEAD_KEY`."""
    return f"{host}:{port} {nonce} {fingerprint}"


def parse_lead(value: str) -> tuple[str, int, str, str]:
    """``(host, port, nonce, fingerprint)`` from the store's value; ValueError when it does not read."""
    address, nonce, fingerprint = value.split()
    host, _, port = address.rpartition(":")
    return host, int(port), nonce, fingerprint
