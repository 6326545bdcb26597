"""The run figures, exactly: fidelity, overhead and the unattributed remainder from a session under a fake clock
whose profiled run costs more than its uninstrumented one, and each module's change in ``fxtui diff`` with its sign."""

from __future__ import annotations

import pytest
import torch
import torch.fx
from torch import nn

from fxtui.core.snapshot import RunSummary
from fxtui.measure.session import Session
from fxtui.report.data import SCHEMA, SCHEMA_VERSION, ReportData
from fxtui.report.diff import diff_reports

pytestmark = pytest.mark.unit


def test_run_figures_are_the_ratios_the_readme_defines() -> None:
    f = RunSummary.of(attributed_s=6.0, run_median_s=12.0, eager_median_s=8.0)
    assert (f.fidelity, f.overhead, f.unattributed_s) == (0.75, 1.5, 2.0)
    assert RunSummary.of(None, 12.0, 8.0) == RunSummary(None, 1.5, None)
    assert RunSummary.of(6.0, None, 8.0) == RunSummary(0.75, None, 2.0)
    assert RunSummary.of(6.0, 12.0, None) == RunSummary(None, None, None)
    assert RunSummary.of(6.0, 12.0, 0.0) == RunSummary(None, None, None)  # no baseline, no ratio


class TickingClock:
    """Moves only when read (``tick`` ns per read) and when the model's work moves it."""

    def __init__(self, tick: int) -> None:
        self.now, self.tick = 0, tick

    def __call__(self) -> int:
        self.now += self.tick
        return self.now


class Work(nn.Module):
    def __init__(self, clock: TickingClock, cost: int) -> None:
        super().__init__()
        self.clock, self.cost = clock, cost

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.clock.now += self.cost
        return x + 1


class Pair(nn.Module):
    def __init__(self, clock: TickingClock) -> None:
        super().__init__()
        self.a, self.b = Work(clock, 100), Work(clock, 250)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.b(self.a(x)))


def test_fidelity_overhead_and_unattributed_are_exact_when_profiling_costs_time() -> None:
    clock = TickingClock(7)

    class Leafy(torch.fx.Tracer):
        def is_leaf_module(self, m: nn.Module, qualname: str) -> bool:
            return isinstance(m, Work) or super().is_leaf_module(m, qualname)

    root = Pair(clock)
    gm = torch.fx.GraphModule(root, Leafy().trace(root))
    session = Session(gm, (torch.zeros(2),), clock=clock, clock_overhead_ns=7, module_paths={"a": "a", "b": "b"})
    for _ in range(5):
        session.run_pair()
    snap = session.snapshot()
    # Each node is charged its own work exactly: the clock's 7 ns per read are subtracted.
    assert {n: s.median_s for n, s in snap.nodes.items()} == pytest.approx(
        {"x": 0.0, "a": 100e-9, "b": 250e-9, "relu": 0.0, "output": 0.0}, abs=1e-15
    )
    # The uninstrumented run: read, the model's 350 ns, read: 357 ns between the reads.
    assert snap.eager_median_s == pytest.approx(357e-9)
    # The profiled run reads the clock around the program (2), around its graph (2) and around each of the
    # five nodes (10): the 13 reads after the program's first cost 91 ns on top of the 350 ns of work.
    assert snap.run_median_s == pytest.approx(441e-9)
    assert snap.fidelity == pytest.approx(350 / 357)
    assert snap.overhead == pytest.approx(441 / 357)
    assert snap.unattributed_s == pytest.approx(7e-9)
    # The same figures survive into a report, and each step's own ratios are all alike here.
    report = ReportData.from_snapshot(snap)
    assert (report.fidelity, report.overhead) == (snap.fidelity, snap.overhead)
    assert report.unattributed_s == pytest.approx(7e-9)
    assert snap.spreads.fidelity is not None and snap.spreads.fidelity.median == pytest.approx(350 / 357)
    assert snap.spreads.overhead is not None and snap.spreads.overhead.median == pytest.approx(441 / 357)
    # Module times roll up from their nodes, and shares are against the profiled run.
    assert snap.modules[""].inclusive_s == pytest.approx(350e-9)
    assert snap.nodes["b"].pct == pytest.approx(100 * 250 / 441)


def saved(rows: dict[str, float], modules: dict[str, float], run: float, eager: float) -> ReportData:
    return ReportData.from_dict(
        {
            "schema": SCHEMA,
            "version": SCHEMA_VERSION,
            "metadata": {"model": "m", "inputs": ["1×4"], "threads": 1, "runs": 5, "run_median_s": run,
                         "eager_median_s": eager},
            "rows": [{"name": n, "module_path": n.rsplit("_", 1)[0], "median_s": t} for n, t in rows.items()],
            "modules": [{"path": p, "inclusive_s": t} for p, t in modules.items()],
        }
    )  # fmt: skip


def test_diff_gives_each_module_after_minus_before_largest_first() -> None:
    before = saved({"conv_1": 3e-3, "fc_1": 1e-3}, {"": 4e-3, "conv": 3e-3, "fc": 1e-3}, 5e-3, 4.5e-3)
    after = saved({"conv_1": 2e-3, "fc_1": 1.5e-3}, {"": 3.5e-3, "conv": 2e-3, "fc": 1.5e-3}, 4e-3, 3.6e-3)
    d = diff_reports(before, after)
    got = [(m.name, m.before_s, m.after_s, m.delta_s, m.delta_pct) for m in d.modules]
    assert got == [
        ("conv", 3e-3, 2e-3, pytest.approx(-1e-3), pytest.approx(-100 / 3)),
        ("", 4e-3, 3.5e-3, pytest.approx(-0.5e-3), pytest.approx(-12.5)),
        ("fc", 1e-3, 1.5e-3, pytest.approx(0.5e-3), pytest.approx(50.0)),
    ]
    assert [(c.name, c.delta_s) for c in d.nodes] == [("conv_1", pytest.approx(-1e-3)), ("fc_1", pytest.approx(5e-4))]
    assert (d.run.before_s, d.run.after_s) == (5e-3, 4e-3) and d.run.delta_pct == pytest.approx(-20.0)
    assert (d.eager.before_s, d.eager.after_s) == (4.5e-3, 3.6e-3) and d.eager.delta_pct == pytest.approx(-20.0)
