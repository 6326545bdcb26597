"""A job's processes without collectives (hogwild workers and their parent): processes, not ranks."""

from __future__ import annotations

import pytest

from fxtui.core.op_nodes import EagerNode, RootModule
from fxtui.core.program_run import STEP_PHASES
from fxtui.core.snapshot import State
from fxtui.jobs.ranks import JobCollector
from fxtui.report.process_text import process_lines
from fxtui.wire.agent_messages import Hello, Step

pytestmark = pytest.mark.unit

PHASES = tuple(1000 for _ in STEP_PHASES)
NODES = [
    EagerNode(0, 0, "fc", "forward", "addmm", 1, "aten.addmm", "8×4"),
    EagerNode(1, 0, "fc", "backward", "∇mm", 1, "aten.mm", "8×4"),
]
ROOTS = [RootModule(0, "Net", {"": "Net", "fc": "Linear"})]


def steps(job: JobCollector, agent: int, kind: str, n: int, ns: int, comm: bool = False) -> None:
    for i in range(n):
        ops = [(0, ns, "8×4", 0), (1, ns, "8×4", 1)] if kind == "train" else [(0, ns, "8×4", 0)]
        nodes = [*NODES, EagerNode(2, -1, "collectives", "comm", "allreduce_", 1, "c10d.allreduce_")] if comm else NODES
        if comm:
            ops.append((2, 10, "", 2))
        job.receive(Step(i, kind, 5000, PHASES, True, False, ops=ops, nodes=nodes, roots=ROOTS), agent)


def hogwild(parent_evaluates: bool = True) -> JobCollector:
    """The main process (pid 100) spawns two workers (pids 201, 202) that train; then it evaluates."""
    job = JobCollector(("hogwild.py",))
    job.started(100, "")
    for agent, pid in enumerate((100, 202, 201)):
        job.receive(Hello(pid, ("hogwild.py",), "2.x", 1, host="vm"), agent)
    steps(job, 1, "train", 8, 900)
    steps(job, 2, "train", 8, 600)
    if parent_evaluates:
        steps(job, 0, "eval", 4, 300)
    return job


def test_workers_are_processes_of_the_job_named_as_such_not_ranks() -> None:
    snapshot = hogwild().snapshot(State.DONE)
    ranks = snapshot.rank_summary
    assert ranks is not None and not ranks.collectives
    assert [(r.rank, r.role, r.pid) for r in ranks.ranks] == [
        (0, "main process", 100),
        (1, "worker 1 of 2", 201),
        (2, "worker 2 of 2", 202),
    ]
    assert ranks.straggler() == "" and snapshot.message == ""  # no collective: nobody waits for anybody
    lines = process_lines(ranks)
    assert lines[1].startswith("process    worker 1 of 2, pid 201: 8 training steps") and "(the rows below)" in lines[1]
    assert not any("rank" in line or "waiting" in line for line in lines)


def test_the_figures_lead_with_a_worker_that_trains_and_the_parents_evaluation_is_beside_them() -> None:
    job = hogwild()
    snapshot = job.snapshot(State.DONE)
    assert snapshot.rank_summary is not None and snapshot.rank_summary.shown == 1
    assert snapshot.steps is not None and snapshot.steps.kind == "train"
    kinds = {k.kind: k for k in snapshot.steps.kinds}
    assert kinds["eval"].steps + kinds["eval"].warmup == 4  # the parent's, said in the header
    evaluation = job.snapshot(State.DONE, kind="eval")  # --kind eval: the parent's own figures
    assert evaluation.rank_summary is not None and evaluation.rank_summary.shown == 0
    assert evaluation.steps is not None and evaluation.steps.kind == "eval"


def test_a_job_whose_processes_run_collectives_keeps_its_ranks_and_straggler() -> None:
    """mp.spawn with a process group made without RANK: the collectives say it is a distributed job."""
    job = JobCollector(("ddp_spawn.py",))
    job.started(100, "")
    for agent, pid in enumerate((201, 202)):
        job.receive(Hello(pid, ("ddp_spawn.py",), "2.x", 1), agent)
    steps(job, 0, "train", 8, 900, comm=True)
    steps(job, 1, "train", 8, 600, comm=True)
    ranks = job.snapshot(State.DONE).rank_summary
    assert ranks is not None and ranks.collectives and "slower" in ranks.straggler()
    assert all(r.role == "" for r in ranks.ranks)
