"""A busy machine is reported, not explained away: runs other work disturbed are read, counted, left out."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch import nn

from fxtui.core.sample_window import SampleWindow
from fxtui.core.units import format_ratio
from fxtui.measure.interference import DISTURBED_SHARE, LoadProbe, Reading, RunLoad
from fxtui.measure.pipeline import make_report
from fxtui.measure.session import Session
from fxtui.report.api import Report

pytestmark = pytest.mark.unit


class FakeProbe:
    """Says, run after run, what share of it other work took."""

    known = True

    def __init__(self, shares: list[float]) -> None:
        self.shares: Iterator[float] = iter(shares)

    def read(self) -> None:
        return None

    def since(self, before: object) -> RunLoad:
        share = next(self.shares, 0.0)
        return RunLoad(
            wall_ns=1_000_000,
            cpu_ns=round(1e6 * (1 - share)),
            wait_ns=round(1e6 * share),
            steal_ns=0,
            involuntary=0,
            minor_faults=0,
        )


def session_with(shares_per_step: list[float], keep: bool) -> Session:
    session = Session(
        torch.fx.symbolic_trace(nn.Sequential(nn.Linear(8, 8), nn.ReLU())), (torch.randn(2, 8),), keep_disturbed=keep
    )
    # each step has two runs: the step's share goes to its profiled run, its uninstrumented one is quiet
    session.probe = FakeProbe([s for share in shares_per_step for s in (share, 0.0)])  # type: ignore[assignment]
    for _ in shares_per_step:
        session.run_pair()
    return session


def test_disturbed_steps_are_counted_and_left_out_of_the_figures_once_enough_quiet_ones_remain() -> None:
    shares = [0.0] * 6 + [0.5, 0.3, 0.8, 0.0]
    snap = session_with(shares, keep=False).snapshot()
    d = snap.disturbance
    assert d is not None and (d.steps, d.disturbed, d.left_out, d.used) == (10, 3, 3, 7)
    assert d.median_lost == pytest.approx(0.5) and d.worst_lost == pytest.approx(0.8)
    assert snap.runs == 10  # every step is kept in the window; the figures use the quiet ones
    line = d.line()
    assert line.startswith("3 of 10 steps disturbed") and "50%" in line and "worst 80%" in line
    assert "leave out 3" in line and "--keep-disturbed" in line
    assert not d.affects_figures


def test_keep_disturbed_keeps_them_and_says_so() -> None:
    d = session_with([0.0] * 6 + [0.5, 0.5], keep=True).snapshot().disturbance
    assert d is not None and d.left_out == 0 and d.kept == 2 and d.used == 8
    assert "include them (--keep-disturbed)" in d.line() and d.affects_figures


def test_with_too_few_quiet_steps_the_disturbed_ones_stay_and_the_line_says_why() -> None:
    d = session_with([0.5, 0.0, 0.6, 0.4], keep=False).snapshot().disturbance
    assert d is not None and d.left_out == 0 and d.kept == 3
    assert "fewer than 5 quiet steps" in d.line()


def test_a_quiet_machine_shows_no_line() -> None:
    snap = session_with([0.0, DISTURBED_SHARE / 2, 0.0], keep=False).snapshot()
    assert snap.disturbance is not None and snap.disturbance.line() == ""
    report = make_report(snap_session := session_with([0.0] * 3, keep=False), timeline=False)
    assert snap_session.disturbance().disturbed == 0
    header = report.header()
    assert "disturbed" not in header
    # What no node accounts for is read as usual, never as other work's doing: the model's glue, or
    # none when a short session's node medians add up to more than the uninstrumented median (a CI
    # run on a busy machine failed here while the report counted 0 disturbed steps).
    unattributed = next(line for line in header.splitlines() if line.startswith("unattributed"))
    assert "Python glue" in unattributed or "unattributed none" in unattributed
    assert "other work slowed" not in unattributed


def test_the_window_leaves_disturbed_rows_out_of_the_quantiles_only() -> None:
    w = SampleWindow(1, window=32)
    for k in range(12):
        slow = k % 3 == 0  # 4 disturbed rows, 100× slower
        w.add_run([1000 if slow else 10], run_ns=2000 if slow else 20, disturbed=slow)
        w.add_eager(2000 if slow else 20)
    s = w.stats()
    assert s.used == 8 and s.left_out == 4 and s.disturbed == 4
    # the max is a running one, over every sample
    assert list(s.median) == [pytest.approx(10e-9)] and list(s.maximum) == [pytest.approx(1000e-9)]
    assert s.run is not None and s.run.q75 == pytest.approx(20e-9)
    everything = w.stats(leave_out_disturbed=False)
    assert everything.used == 12 and everything.run is not None
    assert everything.run.q75 == pytest.approx(2000e-9)


def test_header_and_json_carry_the_disturbance_and_the_ranges(tmp_path: Path) -> None:
    session = session_with([0.0] * 6 + [0.5] * 2, keep=True)
    report = make_report(session, timeline=False)
    # a remainder to explain (a model this small can have none: its node medians may exceed the run's)
    shown = report.replace(eager_median_s=report.attributed_s + 1e-3)
    header = shown.header()
    assert "disturbed  2 of 8 steps disturbed" in header
    assert "other work slowed the uninstrumented runs too" in header and "Python glue" not in header
    lines = {line.split()[0]: line for line in header.splitlines()}
    sp = report.spreads
    assert sp.fidelity is not None and sp.overhead is not None
    # Each figure says what it is, and its range that it is each step's own ratio, not the figure's spread.
    assert lines["fidelity"] == (
        f"fidelity   {format_ratio(shown.fidelity)} = Σ node medians ÷ uninstrumented median; "
        f"each step's own ratio {format_ratio(sp.fidelity.q25)}–{format_ratio(sp.fidelity.q75)} (p25–p75)"
    )
    assert lines["overhead"] == (
        f"overhead   {format_ratio(shown.overhead)} = profiled median ÷ uninstrumented median; "
        f"each step's own ratio {format_ratio(sp.overhead.q25)}–{format_ratio(sp.overhead.q75)} (p25–p75)"
    )
    path = tmp_path / "r.json"
    path.write_text(report.to_json())
    back = Report.load(path)
    assert back.disturbance == report.disturbance
    assert back.spreads == report.spreads and back.spreads.overhead is not None
    assert back.to_dict()["metadata"]["overhead_range"] == report.to_dict()["metadata"]["overhead_range"]
    assert dataclasses.asdict(back.disturbance)["left_out"] == 0  # type: ignore[arg-type]


def test_the_probe_charges_waits_and_steal_exactly_and_ignores_threads_born_mid_run() -> None:
    # How much another process takes from a run on a real machine is a measurement, printed by
    # tests/benchmarks/bench_interference.py; here the arithmetic, on readings given exactly.
    probe = LoadProbe()
    probe._cpus = 2
    before = Reading(ns=0, threads={1: (0, 0), 2: (100, 0)}, steal_ns=1_000, involuntary=3, minor_faults=10)
    after = Reading(
        ns=1_000_000,
        threads={1: (600_000, 200_000), 2: (400_100, 200_000), 3: (9_999_999, 9_999_999)},
        steal_ns=1_000 + 2 * 50_000,
        involuntary=5,
        minor_faults=17,
    )
    load = probe.since(before, after)
    assert (load.wall_ns, load.cpu_ns, load.wait_ns, load.steal_ns) == (1_000_000, 1_000_000, 400_000, 50_000)
    assert (load.involuntary, load.minor_faults) == (2, 7)
    # 400 µs waited of the 1.4 ms the threads wanted, plus 50 µs of 1 ms stolen
    assert load.lost_share == pytest.approx(400_000 / 1_400_000 + 0.05)
    assert load.disturbed
    quiet = probe.since(before, dataclasses.replace(after, threads={1: (990_000, 10_000)}, steal_ns=1_000))
    assert quiet.lost_share == pytest.approx(0.01) and not quiet.disturbed
    probe.close()


def test_the_probe_reads_this_process_s_own_threads() -> None:
    probe = LoadProbe()
    if not probe.known:
        pytest.skip("this kernel does not report run-queue waits")
    reading = probe.read()
    assert reading.threads is not None and threading.get_native_id() in reading.threads
    probe.close()
