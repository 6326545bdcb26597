"""The live app's own drawing is told apart from other work: the display took it, not other processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import torch
from torch import nn

from fxtui.core.findings import Disturbance
from fxtui.measure.interference import LoadProbe, RunLoad
from fxtui.measure.session import Session

pytestmark = pytest.mark.e2e


class DisplayProbe:
    """Runs of which ``share`` was lost, ``display`` of it while the display drew."""

    known = True

    def __init__(self, shares: list[tuple[float, float]]) -> None:
        self.shares: Iterator[tuple[float, float]] = iter(shares)

    def read(self) -> None:
        return None

    def since(self, before: object) -> RunLoad:
        share, display = next(self.shares, (0.0, 0.0))
        return RunLoad(
            wall_ns=1_000_000,
            cpu_ns=round(1e6 * (1 - share)),
            wait_ns=round(1e6 * share),
            steal_ns=0,
            involuntary=0,
            minor_faults=0,
            display_ns=round(1e6 * display),
        )


def disturbance(steps: list[tuple[float, float]]) -> Disturbance:
    session = Session(torch.fx.symbolic_trace(nn.Sequential(nn.Linear(8, 8))), (torch.randn(2, 8),))
    session.probe = DisplayProbe([s for step in steps for s in (step, (0.0, 0.0))])  # type: ignore[assignment]
    for _ in steps:
        session.run_pair()
    return session.disturbance()


def test_steps_the_display_disturbed_say_the_display_took_their_time() -> None:
    line = disturbance([(0.3, 0.3)] * 4 + [(0.0, 0.0)] * 6).line()
    assert line.startswith("4 of 10 steps disturbed: the display took 30% of their time (median; worst 30%)")
    assert "other processes" not in line


def test_a_mix_names_both_and_other_work_alone_stays_as_before() -> None:
    mixed = disturbance([(0.4, 0.1)] * 3).line()
    assert mixed.startswith("3 of 3 steps disturbed: the display took 10% and other processes or the hypervisor 30%")
    other = disturbance([(0.4, 0.0)] * 3).line()
    assert other.startswith("3 of 3 steps disturbed: other processes or the hypervisor took 40% of their time")


def test_the_display_share_is_the_wait_up_to_the_displays_own_cpu_time() -> None:
    load = RunLoad(wall_ns=10, cpu_ns=6, wait_ns=4, steal_ns=0, involuntary=0, minor_faults=0, display_ns=1)
    assert load.lost_share == pytest.approx(0.4) and load.display_share == pytest.approx(0.1)
    busy_display = RunLoad(wall_ns=10, cpu_ns=6, wait_ns=4, steal_ns=0, involuntary=0, minor_faults=0, display_ns=9)
    assert busy_display.display_share == pytest.approx(0.4)  # never more than was lost
    assert RunLoad(10, 6, 4, 0, 0, 0).display_share == 0.0  # no display watched


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity (Linux)")
def test_the_probe_charges_a_watched_display_sharing_the_core_with_the_wait() -> None:
    probe = LoadProbe()
    if not probe.known:
        pytest.skip("this kernel does not report run-queue waits")
    before_affinity = os.sched_getaffinity(0)
    cpu = min(before_affinity)
    spin = f"import os, time\nos.sched_setaffinity(0, {{{cpu}}})\nt = time.time()\nwhile time.time() - t < 20: pass"
    display = subprocess.Popen([sys.executable, "-c", spin])
    try:
        assert probe.watch(display.pid)
        os.sched_setaffinity(0, {cpu})  # this thread and the "display" now share one core
        time.sleep(0.3)
        before = probe.read()
        end = time.perf_counter() + 0.4
        while time.perf_counter() < end:
            pass
        load = probe.since(before)
    finally:
        os.sched_setaffinity(0, before_affinity)
        display.kill()
        display.wait()
    assert load.display_ns is not None and load.display_ns > 0
    assert load.disturbed and 0 < load.display_share <= load.lost_share
    assert probe.display_cpu() is None and probe.display is None  # the display has gone: nothing watched
