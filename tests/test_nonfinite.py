"""NaN anywhere, or an inf that reaches an output, is a warning; an inf masked on purpose is a fact."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fxtui.core.nodes import NodeInfo
from fxtui.core.nonfinite import nonfinite_warnings, values_fact
from fxtui.measure.pipeline import make_report
from fxtui.measure.session import Session
from fxtui.measure.values import describe_value

pytestmark = pytest.mark.unit


class MaskedLog(nn.Module):
    """T5's relative-position buckets in small: the log of zero, masked with torch.where."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        distance = x.abs()
        small = distance < 1
        large = torch.log(distance) * 2.0  # -inf where the distance is 0
        return torch.where(small, distance, large) + 1


class InfOut(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(x.abs()) + 1  # -inf where x is 0, kept to the output


class NanInside(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        nan = torch.sqrt(x - 10)  # NaN for every x < 10
        return torch.nan_to_num(nan) + x  # masked, but a NaN is a warning wherever it appears


def session(module: nn.Module) -> Session:
    return Session(torch.fx.symbolic_trace(module), (torch.tensor([0.0, 2.0, 3.0]),))


def names(s: Session, kind: str) -> list[str]:
    return [n.name for n in s.graph.nodes if n.nonfinite == kind]


def test_an_inf_masked_before_the_output_is_a_fact_of_the_node_not_a_warning() -> None:
    s = session(MaskedLog())
    assert s.graph.value_warnings == ()
    assert make_report(s, timeline=False).warnings == ()
    assert names(s, "inf") == ["log", "mul"]
    log = s.graph.node("log")
    assert "masked before any output" in values_fact(log, s.graph.value_warnings)
    assert values_fact(s.graph.node("add"), s.graph.value_warnings) == ""


def test_an_inf_that_reaches_the_output_is_a_warning_that_says_inf_and_where_it_starts() -> None:
    s = session(InfOut())
    (warning,) = s.graph.value_warnings
    assert warning.startswith("inf reaches the model's output") and "first appears in log" in warning
    assert "NaN" not in warning
    assert "reaches an output" in values_fact(s.graph.node("log"), s.graph.value_warnings)


def test_a_nan_is_a_warning_even_when_masked_and_says_nan() -> None:
    s = session(NanInside())
    (warning,) = s.graph.value_warnings
    assert warning.startswith("NaN in the output of 1 node(s), first sqrt")
    assert make_report(s, timeline=False).warnings == (warning,)


def test_gradients_that_turn_inf_are_named_as_such() -> None:
    def node(name: str, op: str, phase: str, nonfinite: str) -> NodeInfo:
        return NodeInfo(name, 0, op, name, name, "", name, phase=phase, nonfinite=nonfinite)

    nodes = [node("∇log", "call_function", "backward", "inf"), node("output", "output", "backward", "inf")]
    assert nonfinite_warnings(nodes) == ("inf reaches the gradients: it first appears in ∇log",)


@pytest.mark.parametrize(
    ("values", "kind"),
    [
        ([1.0, 2.0], ""),
        ([3e38, 3e38], ""),  # the sum overflows, the values do not
        ([float("inf"), 1.0], "inf"),
        ([float("-inf"), float("nan")], "nan"),
    ],
)
def test_describe_value_tells_nan_from_inf(values: list[float], kind: str) -> None:
    assert describe_value(torch.tensor(values), check_finite=True).nonfinite == kind
    assert describe_value((torch.ones(1), [torch.tensor(values)]), check_finite=True).nonfinite == kind
