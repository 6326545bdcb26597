"""A rank's agent finds the other nodes' collectors through the job's own torch.distributed store.

Only when the job spans collectors: ranks on other nodes (``WORLD_SIZE`` above ``LOCAL_WORLD_SIZE``), or a
collector inside each rank (``torchrun … fxtui run``, :data:`~fxtui.wire.job_link.JOB_SCOPE`). One agent per
collector does it (local rank 0, or every rank when each has its own collector), in a thread of its own, so the
program never waits on it: it opens a client of the job's store at ``MASTER_ADDR:MASTER_PORT`` — the store torchrun's
rendezvous (or rank 0's ``init_process_group``) serves — and reads and writes only keys under
``fxtui/<run id>/``. It never touches the job's process groups: fxtui's bytes never share a socket with its
collectives (as ``torch.distributed.debug`` publishes its per-rank servers in the store, pytorch#167395).

Rank 0's agent asks its collector to lead (:class:`~fxtui.wire.job_link.LeadAsk`) and publishes the answer: the
collector's address, the job's nonce, its key's fingerprint. Every other such agent waits for that key and hands it
to its own collector (:class:`~fxtui.wire.job_link.JoinLead`), which derives the key from the user's secret and
the nonce, and forwards its ranks' figures. Nothing here raises into the program; a store that cannot be reached is
said once on stderr and the node profiles its own ranks.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import time
from collections.abc import Mapping

from fxtui.wire.agent_contract import connect
from fxtui.wire.job_link import (
    JOB_SCOPE,
    LEAD_KEY,
    LEAD_WAIT_S,
    STORE_PREFIX,
    JoinLead,
    LeadAddress,
    LeadAsk,
    lead_value,
    parse_lead,
)

#: Seconds between a member's looks for the lead's key in the store.
LOOK_S = 0.5
#: Seconds to reach the job's store (it is up before the ranks start; rank 0's may come a little later).
STORE_CONNECT_S = 60.0


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    value = env.get(name, "")
    return int(value) if value.lstrip("-").isdigit() else default


def spans_collectors(env: Mapping[str, str]) -> bool:
    """True when this rank's job has ranks that report to another collector than this rank's."""
    world = _int(env, "WORLD_SIZE", 1)
    if world <= 1 or not env.get("MASTER_ADDR") or not env.get("MASTER_PORT"):
        return False
    if env.get(JOB_SCOPE) == "rank":
        return True
    return world > _int(env, "LOCAL_WORLD_SIZE", world)


def speaks_for_its_collector(env: Mapping[str, str]) -> bool:
    """The one agent of a collector that links it: local rank 0 (every rank, when each has a collector)."""
    return env.get(JOB_SCOPE) == "rank" or _int(env, "LOCAL_RANK", 0) == 0


def start(address: str, key: bytes, env: Mapping[str, str] | None = None) -> threading.Thread | None:
    """Link this rank's collector to the job's others when the job spans collectors (a thread; never raises)."""
    env = dict(os.environ if env is None else env)
    if not spans_collectors(env) or not speaks_for_its_collector(env):
        return None
    thread = threading.Thread(target=_link_quietly, args=(address, key, env), daemon=True, name="fxtui-job-store")
    thread.start()
    return thread


def _link_quietly(address: str, key: bytes, env: dict[str, str]) -> None:
    try:
        said = link(address, key, env)
    except Exception as e:  # the store, the collector: whatever fails, the program runs on
        said = f"cannot reach the job's store at {env.get('MASTER_ADDR')}:{env.get('MASTER_PORT')} ({e})"
    if said:
        with contextlib.suppress(Exception):
            print(f"fxtui: {said}; this node's profile holds its own ranks only", file=sys.stderr, flush=True)


def link(address: str, key: bytes, env: Mapping[str, str]) -> str:
    """Publish this collector as the lead (rank 0) or hand it the lead's address; a sentence when it could not."""
    from datetime import timedelta

    import torch.distributed as dist

    host, port = env["MASTER_ADDR"], int(env["MASTER_PORT"])
    run_id = env.get("TORCHELASTIC_RUN_ID") or "none"
    client = dist.TCPStore(host, port, is_master=False, timeout=timedelta(seconds=STORE_CONNECT_S),
                           wait_for_workers=False)  # fmt: skip
    store = dist.PrefixStore(f"{STORE_PREFIX}{run_id}/", client)
    node = _int(env, "GROUP_RANK", -1)
    if _int(env, "RANK", -1) == 0:
        answer = _ask(address, key, LeadAsk(outbound_address(host, port), node=max(node, 0)))
        if not isinstance(answer, LeadAddress):
            return "the collector did not answer as the job's lead"
        if answer.refused:
            return answer.refused
        store.set(LEAD_KEY, lead_value(outbound_address(host, port), answer.port, answer.nonce, answer.fingerprint))
        return ""
    # Looked for, not waited on: a store's wait that times out writes torch's own warnings on the program's stderr.
    deadline = time.monotonic() + LEAD_WAIT_S
    while not store.check([LEAD_KEY]):
        if time.monotonic() > deadline:
            return f"no fxtui collector of rank 0 said where it is in the job's store within {LEAD_WAIT_S:g} s"
        time.sleep(LOOK_S)
    lead_host, lead_port, nonce, fingerprint = parse_lead(store.get(LEAD_KEY).decode())
    _ask(address, key, JoinLead(lead_host, lead_port, nonce, fingerprint, node))
    return ""


def _ask(address: str, key: bytes, message: object) -> object:
    """Send ``message`` to this process's collector on a connection of its own; its answer."""
    connection = connect(address, key)
    try:
        connection.send(message)
        return connection.recv()
    finally:
        connection.close()


def outbound_address(host: str, port: int) -> str:
    """This machine's address on the way to ``host`` (the job's store): the one the other nodes reach it by."""
    with contextlib.suppress(OSError):
        info = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_DGRAM)[0]
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            probe.connect(info[4])  # a datagram socket's connect sends nothing: it only picks the route
            return str(probe.getsockname()[0])
        finally:
            probe.close()
    return "127.0.0.1"
