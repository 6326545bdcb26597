"""The rerun loop: a model that starts to raise stops the reruns after a few runs in a row, keeps the figures,
and reruns again on Resume."""

from __future__ import annotations

import itertools
import threading
import time

import pytest
import torch
import torch.fx
from torch import nn

from fxtui.core.snapshot import Snapshot, State
from fxtui.measure.live import MAX_FAILURES_IN_A_ROW, LiveSource
from fxtui.measure.session import Session
from fxtui.wire.viewer_commands import Resume, Stop

pytestmark = pytest.mark.unit

_calls = itertools.count()
_FAIL_AFTER = [10**9]


@torch.fx.wrap
def sensor(x: torch.Tensor) -> torch.Tensor:
    if next(_calls) >= _FAIL_AFTER[0]:
        raise RuntimeError("the sensor went away")
    return x


class StartsFailing(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(sensor(x))


class Snapshots:
    def __init__(self) -> None:
        self.got: list[Snapshot] = []
        self.arrived = threading.Condition()

    def __call__(self, snapshot: Snapshot) -> None:
        with self.arrived:
            self.got.append(snapshot)
            self.arrived.notify_all()

    def wait_for(self, predicate, after: int = 0) -> Snapshot:  # type: ignore[no-untyped-def]
        with self.arrived:
            assert self.arrived.wait_for(lambda: any(predicate(s) for s in self.got[after:]), timeout=60)
            return next(s for s in self.got[after:] if predicate(s))


def test_a_model_that_starts_raising_stops_the_reruns_keeps_the_figures_and_resumes() -> None:
    gm = torch.fx.symbolic_trace(StartsFailing())
    _FAIL_AFTER[0] = 10**9
    source = LiveSource(lambda progress: Session(gm, (torch.randn(2, 4),)), warmup=1, interval=0.0)
    got = Snapshots()
    worker = threading.Thread(target=source.run, args=(got,), daemon=True)
    worker.start()
    got.wait_for(lambda s: s.runs >= 5)
    _FAIL_AFTER[0] = 0  # every call from now on raises
    stopped = got.wait_for(lambda s: s.state is State.STOPPED)
    assert "raised in 5 runs in a row" in stopped.message
    assert stopped.error is not None and stopped.error.node == "sensor"
    assert stopped.runs >= 5 and stopped.nodes["lin"].median_s > 0  # the figures so far stay
    session = source.session
    assert session is not None
    failures = session.failures
    assert failures == MAX_FAILURES_IN_A_ROW
    time.sleep(0.3)  # a loop that kept rerunning would fail hundreds of times meanwhile
    assert session.failures == failures
    seen = len(got.got)
    source.send(Resume())
    again = got.wait_for(lambda s: s.state is State.STOPPED, after=seen)
    assert session.failures == 2 * MAX_FAILURES_IN_A_ROW and again.runs == stopped.runs
    source.send(Stop())
    worker.join(timeout=30)
    assert not worker.is_alive()
