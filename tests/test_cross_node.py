"""The collectors of a job across nodes, without torch: the lead takes only collectors that prove the job's key, a
member's reports become the lead's remote ranks, a member whose secret differs says so, a lost member's ranks are gone
with their figures kept."""

from __future__ import annotations

import json
import time
from multiprocessing import AuthenticationError
from pathlib import Path

import pytest
from helpers import write_secret

from fxtui.core.op_nodes import EagerNode, RootModule
from fxtui.core.settings import ProgramSettings
from fxtui.core.snapshot import State
from fxtui.jobs.cross_node import CrossNode, Packers, _dumps, _local_ranks
from fxtui.jobs.job_secret import fingerprint, job_key, read_secret
from fxtui.jobs.job_state import JobState
from fxtui.jobs.rank_snapshots import keeps_ops, stride
from fxtui.report.api import Report
from fxtui.wire.agent_contract import connect
from fxtui.wire.agent_messages import Hello, Step
from fxtui.wire.job_link import JoinLead, LeadAsk, lead_value, parse_lead

pytestmark = pytest.mark.unit


def _node(node: int, rank: int, slow: float) -> JobState:
    """A node's collector state with one rank that ran 12 steps of two nodes (``slow`` times the first's time)."""
    state = JobState(ProgramSettings(("train.py",), warmup=2))
    state.receive(Hello(100 + rank, ("train.py",), "2", 1, rank=rank, world_size=2, host=f"h{node}", node=node), 0)
    nodes = [EagerNode(1, 0, "0", "forward", "addmm", 1, "aten.addmm"),
             EagerNode(2, 0, "0", "backward", "∇mm", 1, "aten.mm")]  # fmt: skip
    roots = [RootModule(0, "Sequential", {"": "Sequential", "0": "Linear"})]
    for i in range(12):
        ops = [(1, int(1e6 * slow), "8x8", 0), (2, int(2e6 * slow), "8x8", 0)]
        first = {"nodes": nodes, "roots": roots} if i == 0 else {}
        state.receive(Step(i, "train", int(5e6), (0, int(1e6), int(3e6), 0, 0), sampled=True, describing=False,
                           ops=ops, warm=i >= 2, **first), 0)  # fmt: skip
    return state


def test_the_lead_takes_a_member_with_the_job_s_key_and_refuses_another(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("FXTUI_SECRET_FILE", str(write_secret(tmp_path / "secret", "ab")))
    lead_state = _node(0, 0, 1.0)
    lead = CrossNode(lead_state)
    answer = lead.lead(LeadAsk("127.0.0.1"))
    assert answer.port and not answer.refused
    host, port, nonce, printed = parse_lead(lead_value("127.0.0.1", answer.port, answer.nonce, answer.fingerprint))
    key = job_key(read_secret(), nonce)
    assert printed == fingerprint(key) and key.hex() not in printed  # the store holds a fingerprint, not the key
    with pytest.raises((AuthenticationError, EOFError, OSError)):
        connect((host, port), job_key(b"\xcd" * 32, nonce), timeout=10).close()  # another secret: refused
    member = _node(1, 1, 3.0)
    connection = connect((host, port), key, timeout=10)
    with connection:
        connection.send_bytes(_dumps(_report(member)))
        deadline = time.monotonic() + 10
        while not lead_state.collector.remote.ranks and time.monotonic() < deadline:
            time.sleep(0.05)
    snapshot = lead_state.snapshot(State.RUNNING)
    assert snapshot.rank_summary is not None
    ranks = {r.rank: r for r in snapshot.rank_summary.ranks}
    assert sorted(ranks) == [0, 1] and ranks[1].node == 1 and ranks[1].host == "h1"
    assert snapshot.rank_summary.straggler().startswith("rank 1 on node 1 (h1) is 200% slower")
    deadline = time.monotonic() + 10  # the member's connection ended without its last report: gone
    while not lead_state.snapshot(State.RUNNING).rank_summary.ranks[1].gone_since and time.monotonic() < deadline:  # type: ignore[union-attr]
        time.sleep(0.05)
    gone = lead_state.snapshot(State.DONE)
    assert gone.rank_summary is not None and gone.rank_summary.ranks[1].gone_since > 0
    assert "rank 1 on node 1 (h1) gone since " in gone.message
    assert 1 in gone.other_ranks and any(
        s.median_s > 0 for s in gone.other_ranks[1].nodes.values()
    )  # its last figures, whole
    saved = Report.from_dict(json.loads(Report.from_snapshot(gone).to_json()))  # as an adopter reads them back
    assert saved.snapshot.rank_summary is not None and saved.snapshot.rank_summary.ranks[1].gone_since > 0
    lead.close()


def _report(state: JobState):  # type: ignore[no-untyped-def]
    from fxtui.wire.job_link import NodeReport

    with state.lock:
        return NodeReport(1, "h1", tuple(_local_ranks(state, Packers(), False)))


def test_a_member_whose_secret_differs_says_so_in_one_sentence(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("FXTUI_SECRET_FILE", str(write_secret(tmp_path / "mine", "cd")))
    key = job_key(bytes.fromhex("ab" * 32), "n0nce")
    member = CrossNode(_node(1, 1, 1.0))
    said = member.join(JoinLead("127.0.0.1", 1, "n0nce", fingerprint(key), node=1))
    assert said.startswith("the job's lead keys it with another fxtui secret than this node's (")
    assert member.role == "" and "ab" * 32 not in said


def test_a_readable_secret_file_is_refused(tmp_path: Path, monkeypatch) -> None:
    path = write_secret(tmp_path / "secret", "ab")
    path.chmod(0o644)
    monkeypatch.setenv("FXTUI_SECRET_FILE", str(path))
    with pytest.raises(Exception, match="can be read by other users"):
        read_secret()


def test_above_256_ranks_every_nth_rank_is_compared_and_timed() -> None:
    assert stride(256) == 1 and stride(257) == 2 and stride(1024) == 4
    assert keeps_ops(8, 1024) and not keeps_ops(9, 1024) and keeps_ops(9, 256) and keeps_ops(None, 4096)


def test_a_member_s_adopter_joins_the_lead_again_and_a_lead_s_adopter_listens_where_the_lead_did(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("FXTUI_SECRET_FILE", str(write_secret(tmp_path / "secret", "ab")))
    lead_dir, member_dir = tmp_path / "lead", tmp_path / "member"
    lead_dir.mkdir()
    member_dir.mkdir()
    lead_state = _node(0, 0, 1.0)
    lead = CrossNode(lead_state)
    lead.keep = lead_dir
    answer = lead.lead(LeadAsk("127.0.0.1"))
    first = CrossNode(_node(1, 1, 2.0))
    first.keep = member_dir
    assert first.join(JoinLead("127.0.0.1", answer.port, answer.nonce, answer.fingerprint, node=1)) == ""
    kept = (member_dir / "link.json").read_text()
    key = job_key(read_secret(), answer.nonce)
    assert answer.nonce in kept and key.hex() not in kept and "ab" * 32 not in kept  # what the store says, no key

    def straggler(state: JobState) -> str:
        snapshot = state.snapshot(State.RUNNING)
        return snapshot.rank_summary.straggler() if snapshot.rank_summary is not None else ""

    def wait_for(words: str, state: JobState = lead_state) -> None:
        deadline = time.monotonic() + 15
        while words not in straggler(state) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert words in straggler(state)

    wait_for("rank 1 on node 1 (h1) is 100% slower")
    first.close()  # this node's collector is gone; its rank (here: its figures, slower now) runs on
    adopter = CrossNode(_node(1, 1, 3.0))
    adopter.resume(member_dir)
    assert adopter.role == "member"
    wait_for("rank 1 on node 1 (h1) is 200% slower")  # the adopter's figures reach the lead
    adopter.close()
    lead.close()  # the lead's collector is gone
    lead_adopter_state = _node(0, 0, 1.0)
    lead_adopter = CrossNode(lead_adopter_state)
    lead_adopter.resume(lead_dir)
    assert lead_adopter.role == "lead" and lead_adopter.lead(LeadAsk("127.0.0.1")) == answer  # as the store says
    member = CrossNode(_node(1, 1, 3.0))
    assert member.join(JoinLead("127.0.0.1", answer.port, answer.nonce, answer.fingerprint, node=1)) == ""
    wait_for("rank 1 on node 1 (h1) is 200% slower", lead_adopter_state)  # a member's reports reach it, its key
    member.close()
    lead_adopter.close()
