"""The collector process's garbage collector (``fxtui/jobs/collector_gc.py``): what lives is frozen, full passes wait
for the main loop and walk only what is new, a cycle among frozen objects is still freed; and the collector's state
holds as many tracked objects after a thousand more steps as before them, so a full pass never grows with the run.

Each test restores this process's own garbage collector (CPython's thresholds, nothing frozen)."""

from __future__ import annotations

import gc
import types
import weakref
from collections.abc import Iterator

import pytest

from fxtui.core.op_nodes import EagerNode, OpTime, RootModule
from fxtui.core.settings import ProgramSettings
from fxtui.core.snapshot import State
from fxtui.jobs import collector_gc
from fxtui.jobs.job_state import JobState
from fxtui.wire.agent_messages import Hello, Step

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

NODES = [EagerNode(i, 0, f"layer{i // 2}", "forward", "linear" if i % 2 else "relu", 1, "aten.x") for i in range(1, 41)]
ROOTS = [RootModule(0, "Net", {f"layer{i}": "Linear" for i in range(20)})]
PHASES = (100, 400, 300, 150, 50)


def _step(index: int, first: bool) -> Step:
    sampled = index % 5 == 0
    ops: list[OpTime] = [(n.id, 1000 + 7 * n.id + index % 3, "8×32", 10 * n.id) for n in NODES] if sampled else []
    return Step(
        index, "train", 1_000_000 + 1000 * (index % 7), PHASES, sampled, first, ops=ops,
        nodes=list(NODES) if first else [], roots=list(ROOTS) if first else [],
    )  # fmt: skip


def _tracked_reachable(root: object) -> int:
    """The objects the garbage collector tracks that ``root`` reaches, not going through modules, classes or
    functions (shared by the whole process, not the state's)."""
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
    ranks = 8
    state = JobState(ProgramSettings(("train.py",), warmup=2))
    for rank in range(ranks):
        state.receive(Hello(100 + rank, ("train.py",), "2.x", 1, rank=rank, world_size=ranks), rank)

    def feed(steps: range) -> None:
        for index in steps:
            for rank in range(ranks):
                state.receive(_step(index, first=index == 0), rank)
            if index % 20 == 19:
                state.snapshot(State.RUNNING)  # a viewer's, as the daemon paces them

    feed(range(300))  # the windows allocated, the ranks' graph and statistics built
    before = _tracked_reachable(state)
    feed(range(300, 1300))
    after = _tracked_reachable(state)
    assert before > 1000  # it did count the state's objects
    assert after - before <= 0.01 * before, (before, after)
