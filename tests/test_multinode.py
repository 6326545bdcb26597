"""A torchrun job across nodes under ``fxtui run`` on every node is one profile: each node is a torchrun launch of its
own on this machine (``--nnodes N --node-rank K``, gloo, one rank a node), found through the job's own store."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import pytest
from helpers import DDP_PROGRAM, DDP_RUN_OPTIONS, NEEDS_GLOO, free_port, fxtui_run, write_secret

from fxtui.core.errors import FxtuiError
from fxtui.core.program_run import RankStats
from fxtui.wire.attach_source import AttachSource
from fxtui.wire.job_directory import find_job, running

pytestmark = [pytest.mark.e2e, pytest.mark.slow, NEEDS_GLOO]


class Job:
    """The nodes of one job, each ``fxtui run … torchrun --node-rank K`` in a directory of its own."""

    def __init__(self, tmp: Path, nodes: int, slow: int, secret: Path) -> None:
        self.tmp, self.nodes, self.slow, self.secret = tmp, nodes, slow, secret
        self.port = free_port()
        (tmp / "ddp.py").write_text(DDP_PROGRAM)
        self.procs: dict[int, subprocess.Popen[str]] = {}
        # Each node's private fxtui directory, as on its own server: short, as a user's runtime directory is (a unix
        # socket's path holds 107 bytes, and pytest's tmp_path under a worker is longer than that with a job's).
        self.runs = Path(tempfile.mkdtemp(prefix="fxtui-nodes-", dir="/tmp"))

    def run_dir(self, node: int) -> Path:
        """Node ``node``'s private fxtui directory (``XDG_RUNTIME_DIR``)."""
        return self.runs / f"run{node}"

    def env(self, node: int, **extra: str) -> dict[str, str]:
        run = self.run_dir(node)
        run.mkdir(mode=0o700, exist_ok=True)
        return {**os.environ, "SLOW_RANK": str(self.slow), "FXTUI_SECRET_FILE": str(self.secret),
                "XDG_RUNTIME_DIR": str(run), **extra}  # fmt: skip

    def torchrun(self, node: int) -> list[str]:
        return ["-m", "torch.distributed.run", "--nnodes", str(self.nodes), "--nproc-per-node", "1",
                "--node-rank", str(node), "--master-addr", "127.0.0.1", "--master-port", str(self.port),
                "ddp.py"]  # fmt: skip

    def start(self, node: int, *fxtui: str, **env: str) -> subprocess.Popen[str]:
        command = fxtui_run(*fxtui, *DDP_RUN_OPTIONS, *self.torchrun(node))
        proc = subprocess.Popen(command, cwd=self.tmp, env=self.env(node, **env), text=True, start_new_session=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
        self.procs[node] = proc
        return proc

    def detach(self, node: int, *fxtui: str, **env: str) -> str:
        """Node ``node`` started with ``--detach``: the id of the job its collector runs (once the command returned)."""
        proc = self.start(node, "--detach", *fxtui, **env)
        assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""
        said = proc.stdout.read() if proc.stdout else ""
        return said.split("started job ", 1)[1].split(":", 1)[0]

    def finish(self, timeout: float = 600) -> dict[int, tuple[int, str, str]]:
        out = {}
        for node, proc in self.procs.items():
            stdout, stderr = proc.communicate(timeout=timeout)
            out[node] = (proc.returncode, stdout, stderr)
        return out

    def kill(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                with_suppress_kill(proc.pid)
        shutil.rmtree(self.runs, ignore_errors=True)


def with_suppress_kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _ranks(saved: dict) -> dict[int, dict]:
    return {r["rank"]: r for r in saved["metadata"]["ranks"]["ranks"]}


def _wait_for(path: Path, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never came"
        time.sleep(0.2)


def _wait_until_gone(pid: int, seconds: float = 60) -> None:
    """Until the killed collector ``pid`` is gone, so that ``fxtui attach`` finds its job lost and adopts it."""
    deadline = time.monotonic() + seconds
    while running(pid):
        assert time.monotonic() < deadline, f"the killed collector {pid} still runs after {seconds:g} s"
        time.sleep(0.05)


def _seen_ranks(job: Job, node: int, job_id: str) -> dict[int, RankStats]:
    """The ranks node ``node``'s collector of ``job_id`` shows a viewer now, as ``fxtui attach`` there would see
    them (taken in this process: a viewer of its own would start a Python for each look)."""
    with mock.patch.dict(os.environ, {"XDG_RUNTIME_DIR": str(job.run_dir(node))}):
        try:
            snapshot = AttachSource(find_job(job_id)).take()
        except FxtuiError:  # between a collector's death and its adopter's start
            return {}
    summary = snapshot.rank_summary if snapshot is not None else None
    return {r.rank: r for r in summary.ranks} if summary is not None else {}


def _wait_for_news(job: Job, node: int, job_id: str, rank: int, fresh: bool = True, seconds: float = 120) -> None:
    """Until node ``node``'s collector has figures of ``rank``, and it is not gone; when ``fresh``, steps past those
    it showed at first (figures that came after this call, not kept ones)."""
    first = _seen_ranks(job, node, job_id).get(rank) if fresh else None
    before = first.steps if first is not None else 0
    deadline = time.monotonic() + seconds
    while True:
        now = _seen_ranks(job, node, job_id).get(rank)
        if now is not None and now.steps > before and not now.gone_since:
            return
        assert time.monotonic() < deadline, f"node {node} had no news of rank {rank} in {seconds:g} s"
        time.sleep(0.5)


def test_every_node_s_rank_is_in_node_0_s_profile_and_the_straggler_is_named_with_its_node(tmp_path: Path) -> None:
    """Three nodes, the straggler on the last: a member's rank past node 1 and a straggler that is neither the lead's
    nor the first member's. (A job of two nodes is every other test's below: its straggler, rank 1 on node 1, is
    named in the attach test, its ranks' nodes in the adoption tests.)"""
    nodes, slow = 3, 2
    job = Job(tmp_path, nodes, slow, write_secret(tmp_path / "secret"))
    try:
        for node in range(nodes):
            job.start(node, "--once", "--json", f"n{node}.json")
        done = job.finish()
    finally:
        job.kill()
    for node, (code, _, stderr) in done.items():
        assert code == 0, f"node {node}: {stderr[-2000:]}"
    saved = json.loads((tmp_path / "n0.json").read_text())
    ranks = _ranks(saved)
    assert sorted(ranks) == list(range(nodes)) and [ranks[r]["node"] for r in range(nodes)] == list(range(nodes))
    assert saved["metadata"]["ranks"]["straggler"].startswith(f"rank {slow} on node {slow} (")
    assert ranks[slow]["compute_s"] > 1.3 * ranks[0]["compute_s"]  # four times the batch
    rows = saved["rows"]
    assert {(r["rank"], r["node"]) for r in rows} == {(r, r) for r in range(nodes)}  # every rank's rows, its node
    stdout = done[0][1]
    assert f"straggler  rank {slow} on node {slow}" in stdout and f"rank {slow:<5} node {slow} (" in stdout
    assert "gone" not in saved["metadata"]["ranks"]["straggler"] and all(not r["gone_since"] for r in ranks.values())


@dataclasses.dataclass
class MemberAdopted:
    """One job of two nodes, node 0 the lead (``--once``), node 1 detached: what ``fxtui attach`` on node 1 showed
    while its first collector ran, then what it showed once that collector was killed and the job adopted, and how
    the nodes ended."""

    tmp: Path
    attach: subprocess.CompletedProcess[str]
    adopted: subprocess.CompletedProcess[str]
    seen: subprocess.CompletedProcess[str]
    done: dict[int, tuple[int, str, str]]


@pytest.fixture(scope="module")
def member_adopted(tmp_path_factory: pytest.TempPathFactory) -> MemberAdopted:
    """The job of the two tests below, run once for both (a job of two nodes is four Pythons importing torch): node
    1's attach comes first, with its first collector; then that collector dies while its rank runs on, ``fxtui
    attach`` adopts the job, and the adopter joins node 0's lead again (the agents said where it is once, to the
    collector that died)."""
    tmp = tmp_path_factory.mktemp("member")
    job = Job(tmp, 2, 1, write_secret(tmp / "secret"))
    stop = tmp / "STOP"
    try:
        job.start(0, "--once", "--json", "n0.json", STOP=str(stop))
        job_id = job.detach(1, STOP=str(stop))
        _wait_for(tmp / "STEPPED.1")
        attach = subprocess.run([sys.executable, "-m", "fxtui", "attach", job_id, "--once", "--json", "a1.json"],
                                cwd=tmp, env=job.env(1), capture_output=True, text=True, timeout=120)  # fmt: skip
        kept = job.run_dir(1) / "fxtui" / f"job-{job_id}"
        _wait_for(kept / "link.json", 60)
        collector = json.loads((kept / "job.json").read_text())["pid"]
        os.kill(collector, signal.SIGKILL)  # the collector; its rank runs on
        _wait_until_gone(collector)
        once = [sys.executable, "-m", "fxtui", "attach", job_id, "--once"]
        adopted = subprocess.run(once, cwd=tmp, env=job.env(1), capture_output=True, text=True, timeout=120)
        # The adopter's reports reach the lead: the lead answers a member that has viewers with the job's other ranks.
        _wait_for_news(job, 1, job_id, 0)
        seen = subprocess.run([*once, "--json", "adopted.json"], cwd=tmp, env=job.env(1), capture_output=True,
                              text=True, timeout=120)  # fmt: skip
        stop.touch()
        done = job.finish()
    finally:
        stop.touch()
        job.kill()
    return MemberAdopted(tmp, attach, adopted, seen, done)


def test_fxtui_attach_on_node_1_shows_the_whole_job(member_adopted: MemberAdopted) -> None:
    attach, done = member_adopted.attach, member_adopted.done
    assert attach.returncode == 0, attach.stderr[-2000:]
    seen = json.loads((member_adopted.tmp / "a1.json").read_text())
    ranks = _ranks(seen)
    assert sorted(ranks) == [0, 1] and ranks[0]["node"] == 0 and ranks[1]["node"] == 1
    # a running job's rows are the shown rank's: rank 0's, whose figures node 1 has only from node 0
    assert {(r["rank"], r["node"]) for r in seen["rows"]} == {(0, 0)}
    assert seen["metadata"]["ranks"]["straggler"].startswith("rank 1 on node 1 (")
    assert done[0][0] == 0, done[0][2][-2000:]


def test_a_member_s_collector_killed_and_adopted_reports_to_the_lead_again(member_adopted: MemberAdopted) -> None:
    """Node 1's detached collector dies while its rank runs on; ``fxtui attach`` adopts the job, and the adopter
    joins node 0's lead again (the agents said where it is once, to the collector that died)."""
    adopted, seen, done = member_adopted.adopted, member_adopted.seen, member_adopted.done
    assert adopted.returncode == 0 and "a new collector watches it" in adopted.stdout, adopted.stderr[-2000:]
    assert seen.returncode == 0, seen.stderr[-2000:]
    adopters = json.loads((member_adopted.tmp / "adopted.json").read_text())
    assert sorted(_ranks(adopters)) == [0, 1]  # the adopter sees the job
    assert done[0][0] == 0, done[0][2][-2000:]
    ranks = _ranks(json.loads((member_adopted.tmp / "n0.json").read_text()))
    assert sorted(ranks) == [0, 1] and ranks[1]["node"] == 1
    assert ranks[1]["gone_since"] == 0  # lost when its collector died, back with the adopter's reports


def _collector_of(node: int, program: int) -> int:
    """The pid of node ``node``'s collector (forked by its ``fxtui run``, which became the program)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == program:
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        at = argv.index(b"--node-rank") + 1 if b"--node-rank" in argv else 0
        if b"fxtui" in argv and b"run" in argv and at and argv[at] == str(node).encode():
            return int(entry.name)
    raise AssertionError(f"no collector of node {node}")


def _ranks_of(node: int, port: int) -> list[int]:
    """The rank processes torchrun started on node ``node`` of the job at ``port``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            env = (entry / "environ").read_bytes().split(b"\0") if entry.name.isdigit() else []
        except OSError:
            continue
        if f"GROUP_RANK={node}".encode() in env and f"MASTER_PORT={port}".encode() in env:
            found.append(int(entry.name))
    return found


def test_a_node_killed_mid_run_leaves_the_others_figures_and_is_said_gone(tmp_path: Path) -> None:
    job = Job(tmp_path, 2, 1, write_secret(tmp_path / "secret"))
    stop = tmp_path / "STOP"
    try:
        job.start(0, "--once", "--json", "n0.json", STOP=str(stop))
        member = job.start(1, "--once", STOP=str(stop))
        _wait_for(tmp_path / "STEPPED.1")
        time.sleep(4)  # a few reports of node 1's figures reach node 0
        # the whole node: its collector, its torchrun, its rank (a session of its own, as torchrun starts it)
        os.kill(_collector_of(1, member.pid), signal.SIGKILL)
        os.killpg(member.pid, signal.SIGKILL)
        for pid in _ranks_of(1, job.port):
            os.kill(pid, signal.SIGKILL)
        done = job.finish()  # node 0's rank meets the lost peer in its next collective and ends
    finally:
        stop.touch()
        job.kill()
    stdout = done[0][1]
    saved = json.loads((tmp_path / "n0.json").read_text())
    ranks = _ranks(saved)
    assert sorted(ranks) == [0, 1] and ranks[1]["steps"] > 0 and ranks[1]["gone_since"] > 0
    assert ranks[0]["gone_since"] == 0
    assert {r["rank"] for r in saved["rows"]} == {0, 1}  # the gone rank's last figures are whole
    assert "gone       rank 1 on node 1 (" in stdout and " gone since " in stdout


def test_a_node_with_another_secret_is_refused_and_the_job_runs_on(tmp_path: Path) -> None:
    job = Job(tmp_path, 2, 1, write_secret(tmp_path / "secret"))
    try:
        job.start(0, "--once", "--json", "n0.json")
        job.start(1, "--once", FXTUI_SECRET_FILE=str(write_secret(tmp_path / "other", "cd")))
        done = job.finish()
    finally:
        job.kill()
    assert done[0][0] == 0 and done[1][0] == 0, (
        done[0][2][-1500:],
        done[1][2][-1500:],
    )  # the training job is the user's: it ran to its end on both
    assert "another fxtui secret than this node's" in done[1][2]
    saved = json.loads((tmp_path / "n0.json").read_text())
    assert saved["metadata"]["ranks"] is None and {r["rank"] for r in saved["rows"]} == {None}  # rank 0's alone
    assert "ab" * 32 not in done[0][2] + done[1][2] + done[0][1] + done[1][1]  # the secret is never said


def test_fxtui_run_inside_each_rank_of_torchrun_is_one_profile(tmp_path: Path) -> None:
    """``torchrun … fxtui run --once``: a collector in each rank; rank 0's leads and its profile holds both ranks."""
    job = Job(tmp_path, 1, 1, write_secret(tmp_path / "secret"))
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port", str(job.port),
               *fxtui_run("--once", *DDP_RUN_OPTIONS, "--json", "r.json", "ddp.py")[1:]]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, env=job.env(0), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    # rank 0's profile (each rank's collector alone would hold one rank: no rank lines, no straggler)
    assert "rank 0     node 0 (" in done.stdout and "rank 1     node 0 (" in done.stdout
    assert "straggler  rank 1 is " in done.stdout
    assert done.stdout.count("\nprogram    ") + done.stdout.startswith("program    ") == 1  # one profile: the job's
    assert "rank 1's figures are in rank 0's profile" in done.stderr


def test_the_lead_s_collector_killed_and_adopted_takes_the_members_reports_again(tmp_path: Path) -> None:
    """Node 0's detached collector (the lead) dies; its adopter listens where the job's store says the lead is, and
    node 1's collector, which looks for its lost lead every two seconds, reports to it."""
    job = Job(tmp_path, 2, 1, write_secret(tmp_path / "secret"))
    stop = tmp_path / "STOP"
    try:
        job_id = job.detach(0, STOP=str(stop))
        job.start(1, "--once", STOP=str(stop))
        _wait_for(tmp_path / "STEPPED.1")
        kept = job.run_dir(0) / "fxtui" / f"job-{job_id}"
        _wait_for(kept / "link.json", 60)
        _wait_for_news(job, 0, job_id, 1, fresh=False)  # node 1 reports to the lead
        collector = json.loads((kept / "job.json").read_text())["pid"]
        os.kill(collector, signal.SIGKILL)  # the lead; its rank runs on
        _wait_until_gone(collector)
        attach = [sys.executable, "-m", "fxtui", "attach", job_id, "--once"]
        adopted = subprocess.run(attach, cwd=tmp_path, env=job.env(0), capture_output=True, text=True, timeout=120)
        _wait_for_news(job, 0, job_id, 1)  # node 1 finds its lead again and reports
        seen = subprocess.run([*attach, "--json", "a0.json"], cwd=tmp_path, env=job.env(0), capture_output=True,
                              text=True, timeout=120)  # fmt: skip
        stop.touch()
        done = job.finish()
    finally:
        stop.touch()
        job.kill()
    assert adopted.returncode == 0 and "a new collector watches it" in adopted.stdout, adopted.stderr[-2000:]
    assert seen.returncode == 0, seen.stderr[-2000:]
    ranks = _ranks(json.loads((tmp_path / "a0.json").read_text()))
    assert sorted(ranks) == [0, 1] and ranks[1]["node"] == 1 and ranks[1]["gone_since"] == 0
    assert done[1][0] == 0, done[1][2][-2000:]
    assert "lost the job's lead" in done[1][2] and "takes this node's ranks again" in done[1][2]
