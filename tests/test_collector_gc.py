"""The collector process's garbage collector (``fxtui/jobs/collector_gc.py``): what lives is frozen, full passes wait
for the main loop and walk only what is new, a cycle among frozen objects is still freed; and the collector's state
holds as many tracked objects after a thousand more steps as before them, so a full pass never grows with the run.

Each test restores this process's own garbage collector (CPython's thresholds, nothing frozen)."""

from __future__ import annotations

import gc
import os
import types
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import watch_three_snapshots

from fxtui.core.op_nodes import EagerNode, OpTime, RootModule
from fxtui.core.settings import ProgramSettings
from fxtui.core.snapshot import State
from fxtui.jobs import adopt, collector_gc, daemon
from fxtui.jobs.job_state import JobState
from fxtui.wire.agent_messages import Hello, Step
from fxtui.wire.job_directory import JobInfo

pytestmark = pytest.mark.unit


@pytest.fixture
def own_gc() -> Iterator[None]:
    """This process's garbage collector as it was, whatever the test did to it."""
    threshold = gc.get_threshold()
    try:
        yield
    finally:
        collector_gc.release()
        gc.set_threshold(*threshold)


def _make_due() -> None:
    """Ten passes of the middle generation: CPython's own count for a full pass (its third threshold)."""
    for _ in range(collector_gc.DUE_AFTER):
        gc.collect(1)


def test_before_taking_over_nothing_is_collected_or_frozen(own_gc: None) -> None:
    collector_gc.release()
    _make_due()
    assert not collector_gc.collect_if_due()
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold()[2] == collector_gc.DUE_AFTER


def test_taking_over_freezes_what_lives_and_defers_full_passes(own_gc: None) -> None:
    collector_gc.take_over()
    assert gc.get_freeze_count() > 1000  # the modules imported so far
    assert gc.get_threshold()[2] == collector_gc.DEFERRED
    collector_gc.release()
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold()[2] == collector_gc.DUE_AFTER


def test_a_due_pass_runs_once_and_freezes_what_survived_it(own_gc: None) -> None:
    collector_gc.take_over()
    frozen = gc.get_freeze_count()
    kept = [[index] for index in range(500)]  # long-lived state made after the start: 501 tracked lists
    assert not collector_gc.collect_if_due() or gc.get_freeze_count() >= frozen + 501  # not due yet, or just was
    _make_due()
    assert collector_gc.collect_if_due()
    assert gc.get_freeze_count() >= frozen + len(kept) + 1
    assert gc.get_count()[2] == 0
    assert not collector_gc.collect_if_due()  # the next one waits for CPython's count again


def test_a_cycle_among_frozen_objects_is_freed_by_the_whole_pass(own_gc: None) -> None:
    collector_gc.take_over()

    class Cyclic:
        pass

    a, b = Cyclic(), Cyclic()
    a.other, b.other = b, a  # type: ignore[attr-defined]
    gone = weakref.ref(a)
    _make_due()
    assert collector_gc.collect_if_due()  # the cycle survived (referenced): frozen now
    del a, b
    _make_due()
    assert collector_gc.collect_if_due(now=0.0)  # a pass over what is not frozen leaves the frozen cycle
    assert gone() is not None
    _make_due()
    assert collector_gc.collect_if_due(now=1e12)  # past WHOLE_EVERY_S: everything walked
    assert gone() is None


# -- the state's tracked objects do not grow with the steps --------------------------------------------------------

PHASES = (100, 400, 300, 150, 50)


def _nodes(count: int) -> list[EagerNode]:
    return [EagerNode(i, 0, f"layer{i // 2}", "forward", "linear" if i % 2 else "relu", 1, "aten.x")
            for i in range(1, count + 1)]  # fmt: skip


def _step(index: int, first: bool, nodes: list[EagerNode]) -> Step:
    sampled = index % 5 == 0
    ops: list[OpTime] = [(n.id, 1000 + 7 * n.id + index % 3, "8×32", 10 * n.id) for n in nodes] if sampled else []
    roots = [RootModule(0, "Net", {f"layer{i}": "Linear" for i in range(len(nodes) // 2 + 1)})]
    return Step(
        index, "train", 1_000_000 + 1000 * (index % 7), PHASES, sampled, first, ops=ops,
        nodes=list(nodes) if first else [], roots=roots if first else [],
    )  # fmt: skip


def _fed(ranks: int, nodes: int, steps: range, state: JobState | None = None) -> JobState:
    """A collector's state fed ``steps`` of ``ranks`` ranks of a model of ``nodes`` ops, a viewer's snapshot every
    20 steps (as the daemon paces them, the ranks' own snapshots rebuilt for the comparison)."""
    model = _nodes(nodes)
    if state is None:
        state = JobState(ProgramSettings(("train.py",), warmup=2))
        for rank in range(ranks):
            state.receive(Hello(100 + rank, ("train.py",), "2.x", 1, rank=rank, world_size=ranks), rank)
    for index in steps:
        for rank in range(ranks):
            state.receive(_step(index, index == 0, model), rank)
        if index % 20 == 19:
            state.snapshot(State.RUNNING)
    return state


def _tracked_reachable(root: object) -> int:
    """The objects the garbage collector tracks that ``root`` reaches, not going through modules, classes or
    functions (shared by the whole process, not the state's), as a full pass finds them: after a pass, since CPython
    stops tracking a tuple of numbers or strings at the first pass it survives."""
    gc.collect()
    shared = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)
    seen: set[int] = {id(root)}
    todo = [root]
    count = 0
    while todo:
        obj = todo.pop()
        if gc.is_tracked(obj):
            count += 1
        for child in gc.get_referents(obj):
            if id(child) not in seen and not isinstance(child, shared):
                seen.add(id(child))
                todo.append(child)
    return count


def test_the_collector_state_tracks_no_more_objects_after_a_thousand_more_steps() -> None:
    state = _fed(8, 40, range(300))  # the windows allocated, the ranks' graph and statistics built
    before = _tracked_reachable(state)
    _fed(8, 40, range(300, 1300), state)
    after = _tracked_reachable(state)
    assert before > 1000  # it did count the state's objects
    assert after - before <= 0.01 * before, (before, after)


def test_the_collector_state_tracks_no_object_a_node_of_each_rank() -> None:
    """The nodes' figures of each rank are columns (arrays, tuples of numbers), not an object a node and rank that a
    full pass walks: the ranks share one copy of each node's description, so 120 more nodes cost the state of 16
    ranks a few tracked objects a node, not one a node and rank (a ``[calls, steps]`` list a node and rank was 218,000
    tracked objects at 256 ranks)."""
    ranks, small, large = 16, 40, 160
    few = _tracked_reachable(_fed(ranks, small, range(60)))
    many = _tracked_reachable(_fed(ranks, large, range(60)))
    per_node_and_rank = (many - few) / ((large - small) * ranks)
    assert per_node_and_rank < 0.5, (few, many)


# -- the collector's processes take it ------------------------------------------------------------------------------


class _Started(Exception):
    """Raised where a collector process would set up its job: the test has seen what it needed."""


def test_the_daemon_and_the_adopter_take_the_policy_before_they_set_up_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(collector_gc, "take_over", lambda: calls.append("take over"))

    def set_up(*args: object, **kwargs: object) -> None:
        calls.append("job")
        raise _Started

    monkeypatch.setattr(daemon, "detached_job", set_up)
    monkeypatch.setattr(adopt, "detached_job", set_up)
    with pytest.raises(_Started):
        daemon.run(tmp_path)
    assert calls == ["take over", "job"]
    calls.clear()
    lost = JobInfo("1", ("train.py",), str(tmp_path), pid=0, program_pid=os.getpid(), started=0.0)
    monkeypatch.setattr(adopt, "read_info", lambda directory: lost)
    with pytest.raises(_Started):
        adopt.adopt(tmp_path)
    assert calls == ["take over", "job"]


def test_a_job_that_cannot_be_adopted_leaves_the_gc_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(collector_gc, "take_over", lambda: calls.append("take over"))
    monkeypatch.setattr(adopt, "read_info", lambda directory: None)
    assert adopt.adopt(tmp_path) == 1
    assert calls == []


def test_the_collectors_loop_offers_the_due_pass_after_each_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    order: list[str] = []
    monkeypatch.setattr(collector_gc, "collect_if_due", lambda: order.append("due pass") or False)
    monkeypatch.setattr(daemon, "INTERVAL", 0.001)

    watch_three_snapshots(tmp_path, order)
    assert order == ["snapshot", "due pass"] * 3
