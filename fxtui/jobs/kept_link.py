"""A detached collector's part in a job across nodes, kept in its job's directory for a collector that adopts the job.

A collector that dies leaves its ranks running; ``fxtui attach`` starts a collector that adopts them
(:mod:`fxtui.jobs.adopt`). The ranks' agents told the first collector its part in the job once, as they started
(:mod:`fxtui.agent.job_store`), and do not again. So each collector keeps it in ``link.json``: a member, what its
agents said (the lead's address, the job's nonce, its key's fingerprint: what the job's store publishes); the lead,
the address and port it listens on and the nonce it published. Never a key: the adopter derives it again from the
user's secret. A member's adopter joins the lead again; a lead's listens again where the store says the lead is,
and the members, which try again while their lead is gone, report to it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from pathlib import Path

from fxtui.wire.job_link import JoinLead, LeadAddress

#: The file, in a detached job's directory.
LINK = "link.json"


def keep_member(directory: Path, join: JoinLead) -> None:
    """This node reports to the lead ``join`` names."""
    _write(directory, {"role": "member", **dataclasses.asdict(join)})


@dataclasses.dataclass(frozen=True)
class KeptLead:
    """The lead's part: where it listens (``host``, ``address.port``), the nonce it published, its node."""

    host: str
    address: LeadAddress
    node: int


def keep_lead(directory: Path, lead: KeptLead) -> None:
    """This node leads the job."""
    _write(directory, {"role": "lead", "host": lead.host, "node": lead.node, **dataclasses.asdict(lead.address)})


def kept(directory: Path) -> JoinLead | KeptLead | None:
    """What ``directory``'s collector was: a member (where its lead is), the lead, or None (neither, or
    unreadable)."""
    try:
        data = json.loads((directory / LINK).read_text())
        if data.pop("role") == "lead":
            host, node = data.pop("host"), int(data.pop("node"))
            return KeptLead(host, LeadAddress(**data), node)
        return JoinLead(**data)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write(directory: Path, data: dict[str, object]) -> None:
    with contextlib.suppress(OSError):  # the job goes on without it: only an adopter would miss it
        path = directory / LINK
        partial = path.with_suffix(".tmp")
        partial.write_text(json.dumps(data))
        partial.replace(path)
