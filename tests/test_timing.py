"""The timing interpreter charges each node exactly its own work."""

from __future__ import annotations

import statistics

import pytest
import torch
import torch.fx
from torch import nn

from fxtui.core.errors import FxtuiError, NodeError
from fxtui.measure.session import Session
from fxtui.measure.timing import TimingInterpreter, calibrate_clock
from fxtui.measure.values import describe_value

pytestmark = pytest.mark.unit


class FakeClock:
    """A clock that only moves when the model's own operations move it."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


class Work(nn.Module):
    """Pretends to take ``cost`` nanoseconds (plus ``extra[0]``, changeable between runs)."""

    def __init__(self, clock: FakeClock, cost: int, extra: list[int] | None = None) -> None:
        super().__init__()
        self.clock, self.cost, self.extra = clock, cost, extra or [0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.clock.now += self.cost + self.extra[0]
        return x + 1


class Chain(nn.Module):
    def __init__(self, clock: FakeClock, extra: list[int]) -> None:
        super().__init__()
        self.a = Work(clock, 100)
        self.b = Work(clock, 250, extra)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.b(self.a(x)))


def traced_chain(clock: FakeClock, extra: list[int]) -> torch.fx.GraphModule:
    class Leafy(torch.fx.Tracer):
        def is_leaf_module(self, m: nn.Module, qualname: str) -> bool:
            return isinstance(m, Work) or super().is_leaf_module(m, qualname)

    root = Chain(clock, extra)
    return torch.fx.GraphModule(root, Leafy().trace(root))


def test_each_node_is_charged_exactly_its_own_work() -> None:
    clock = FakeClock()
    gm = traced_chain(clock, [0])
    interp = TimingInterpreter(gm, clock=clock, clock_overhead_ns=0)
    out = interp.run(torch.zeros(2))
    assert torch.equal(out, torch.full((2,), 2.0))
    times = dict(zip(interp.names, interp.last_ns, strict=True))
    assert times == {"x": 0, "a": 100, "b": 250, "relu": 0, "output": 0}
    assert interp.last_run_ns == 350


def test_clock_overhead_is_subtracted_from_every_node() -> None:
    class Ticking(FakeClock):
        def __call__(self) -> int:
            self.now += 7  # every read costs 7 ns
            return self.now

    clock = Ticking()
    gm = traced_chain(clock, [0])
    interp = TimingInterpreter(gm, clock=clock)
    assert interp.clock_overhead_ns == 7
    interp.run(torch.zeros(2))
    assert dict(zip(interp.names, interp.last_ns, strict=True))["b"] == 250


def test_statistics_are_exact_under_a_fake_clock() -> None:
    clock = FakeClock()
    extra = [0]
    gm = traced_chain(clock, extra)
    session = Session(
        gm, (torch.zeros(2),), clock=clock, clock_overhead_ns=0, window=64, module_paths={"a": "a", "b": "b"}
    )
    costs = []
    for k in range(9):
        extra[0] = k * 10 if k % 2 else k * 30  # an uneven spread: 0, 10, 60, 30, 120, 50, 180, 70, 240
        session.run_pair()
        costs.append(250 + extra[0])
    snap = session.snapshot()
    b = snap.nodes["b"]
    seconds = [c / 1e9 for c in costs]
    assert b.count == 9
    assert b.median_s == pytest.approx(statistics.median(seconds))
    assert b.mean_s == pytest.approx(statistics.mean(seconds))
    assert b.min_s == pytest.approx(min(seconds)) and b.max_s == pytest.approx(max(seconds))
    q = statistics.quantiles(seconds, n=4, method="inclusive")
    assert b.iqr_s == pytest.approx(q[2] - q[0])
    assert b.noisy  # IQR/median well above 0.1
    assert not snap.nodes["a"].noisy and snap.nodes["a"].median_s == pytest.approx(100e-9)
    # pct is the node's median against the profiled run's median (a + b)
    assert b.pct == pytest.approx(100 * b.median_s / snap.run_median_s)
    assert snap.modules["b"].inclusive_s == pytest.approx(b.median_s)
    assert snap.modules[""].inclusive_s == pytest.approx(b.median_s + 100e-9)
    assert b.recent == pytest.approx(tuple(seconds))


def test_output_matches_the_graph_module_on_a_real_model() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 6 * 6, 4))
    gm = torch.fx.symbolic_trace(model.eval())
    x = torch.randn(2, 3, 8, 8)
    interp = TimingInterpreter(gm)
    with torch.inference_mode():
        assert torch.allclose(interp.run(x), gm(x))
    assert all(ns >= -interp.clock_overhead_ns for ns in interp.last_ns)
    assert interp.meta is not None and interp.meta[1].shape == "2×8×6×6"


def test_methods_nested_arguments_and_get_attr_run_as_in_the_forward() -> None:
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.ones(3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.cat([x, x * 2], dim=0).view(-1, 3)
            return y[1:, ...] + self.w

    gm = torch.fx.symbolic_trace(M())
    x = torch.arange(6.0).view(2, 3)
    with torch.inference_mode():
        assert torch.equal(TimingInterpreter(gm).run(x), gm(x))


def test_a_failing_node_is_named() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    gm = torch.fx.symbolic_trace(model)
    with pytest.raises(NodeError) as info:
        TimingInterpreter(gm).run(torch.zeros(2, 5))
    assert info.value.node == "_0"
    assert "Linear" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(FxtuiError, match="does not run on these inputs: node _0"):
        Session(gm, (torch.zeros(2, 5),))


def test_inputs_are_fresh_for_every_run() -> None:
    class Mutates(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x.add_(1)
            return x.clone()

    gm = torch.fx.symbolic_trace(Mutates())
    x = torch.zeros(3)
    session = Session(gm, (x,))
    for _ in range(3):
        session.run_pair()
    assert torch.equal(x, torch.zeros(3))  # the caller's tensor is never touched


def test_a_model_that_fails_on_some_runs_keeps_the_session_going() -> None:
    calls = [0]

    class Flaky(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            calls[0] += 1
            if calls[0] % 3 == 0:
                raise RuntimeError("flaky failure")
            return x * 2

    class Leafy(torch.fx.Tracer):
        def is_leaf_module(self, m: nn.Module, qualname: str) -> bool:
            return isinstance(m, Flaky) or super().is_leaf_module(m, qualname)

    root = nn.Sequential(Flaky())
    gm = torch.fx.GraphModule(root, Leafy().trace(root))
    session = Session(gm, (torch.ones(2),))
    for _ in range(6):
        session.run_pair()
    snap = session.snapshot()
    assert session.failures >= 2
    assert snap.error is not None and "flaky failure" in snap.error.message
    assert snap.runs > 0  # the successful runs still count


def test_describe_value_covers_nested_outputs() -> None:
    meta = describe_value((torch.zeros(2, 3), [torch.zeros(1)], {"k": torch.zeros(4)}, None))
    assert meta.shape == "(2×3, [1], {k: 4}, None)"
    assert not describe_value(torch.tensor([1.0, float("nan")]), check_finite=True).finite


@pytest.mark.parametrize(
    ("values", "finite"),
    [
        ([1.0, 2.0], True),
        ([3e38, 3e38], True),  # the sum overflows, the values do not
        ([float("inf"), 1.0], False),
        ([float("-inf"), float("inf")], False),
        ([float("nan"), 0.0], False),
    ],
)
def test_the_finite_check_is_exact_even_when_a_sum_overflows(values: list[float], finite: bool) -> None:
    assert describe_value(torch.tensor(values), check_finite=True).finite is finite


def test_clock_calibration_measures_the_cost_of_two_reads() -> None:
    ticks = iter(range(0, 10**9, 5))
    assert calibrate_clock(lambda: next(ticks), pairs=10) == 5


def test_page_faults_per_run_are_counted_and_explained() -> None:
    # Real faults under each allocator policy are measured in test_allocator (in fresh
    # processes: the policy is process-wide). Here: one count per run, and the header.
    from fxtui.measure.pipeline import make_report

    session = Session(torch.fx.symbolic_trace(nn.Linear(4, 4)), (torch.zeros(2, 4),))
    for _ in range(3):
        session.run_pair()
    assert len(session.faults) == 3
    assert all(f >= 0 for f in session.faults)
    session.faults.extend([16_384] * 5)
    assert session.faults_per_run == 16_384
    header = make_report(session, timeline=False).header()
    assert "16,384 page faults per run" in header


def test_a_node_far_above_its_fastest_run_is_unsteady() -> None:
    from fxtui.core.nodes import NodeStats, is_unsteady

    def stats(median_s: float, min_s: float) -> NodeStats:
        return NodeStats(10, median_s, median_s, median_s, min_s, median_s, 0.0, 1.0)

    # Bimodal and sticky: nearly every run pays the extra, so the IQR stays small.
    assert stats(250e-6, 65e-6).unsteady and not stats(250e-6, 65e-6).noisy
    assert not stats(120e-6, 65e-6).unsteady  # under twice the fastest
    assert not stats(30e-6, 12e-6).unsteady  # 18 µs apart: call overhead, not a disturbance
    assert not is_unsteady(1e-3, 0.0)  # never measured faster than nothing
