"""What-ifs: each change applies to a copy of a tiny model, is measured interleaved and reports its outputs.

Few pairs (3) keep these fast; the figures are checked for shape and sense, never for speed
(tests/benchmarks/bench_whatif.py prints what they measure on a real model).
"""

from __future__ import annotations

import math

import pytest
import torch
from helpers import ConvNet, Mlp, conv_session
from torch import nn

from fxtui.core.errors import FxtuiError
from fxtui.core.findings import WhatIf
from fxtui.core.what_if_catalogue import CATALOGUE, parse_what_ifs
from fxtui.measure.inputs import Inputs
from fxtui.measure.pipeline import loaded_from_module, make_report, run_profile, session_for_module
from fxtui.measure.session import Session
from fxtui.measure.targets import LoadedModel
from fxtui.measure.whatif.changes import CHANGES, compile_failure
from fxtui.measure.whatif.outputs import output_difference
from fxtui.measure.whatif.runner import run_what_ifs, what_if_options
from fxtui.report.api import Report
from fxtui.report.export import export

pytestmark = pytest.mark.e2e

PAIRS = 3


class Counter(nn.Module):
    """Integers in, integers out: nothing floating to change."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2 + 1


@pytest.fixture(scope="module")
def convnet() -> Session:
    return conv_session()


def measure(session: Session, *names: str) -> tuple[WhatIf, ...]:
    return run_what_ifs(session, names, pairs=PAIRS)


def other_threads(session: Session) -> str:
    return "threads=1" if session.graph.threads != 1 else "threads=2"


# -- each what-if on a tiny model -----------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "largest_rel_diff"),
    [
        ("channels-last", 1e-5),  # the same arithmetic in another layout
        ("fold-bn", 1e-4),  # float32 rounding of the folded weights
        ("threads", 1e-5),
        ("bf16", 0.1),
        ("int8-dynamic", 0.2),
    ],
)
def test_each_what_if_applies_measures_and_reports_how_far_the_outputs_moved(
    convnet: Session, name: str, largest_rel_diff: float
) -> None:
    if name == "threads":
        name = other_threads(convnet)
    (result,) = measure(convnet, name)
    assert result.error == "" and result.measured, result
    assert result.name == name and result.title
    assert result.pairs == PAIRS
    assert result.before_s and result.after_s and result.before_s > 0 and result.after_s > 0
    assert result.before_p25_s <= result.before_s <= result.before_p75_s  # type: ignore[operator]
    assert result.after_p25_s <= result.after_s <= result.after_p75_s  # type: ignore[operator]
    assert result.max_abs_diff is not None and result.max_rel_diff is not None
    assert result.max_rel_diff <= largest_rel_diff
    if name in ("bf16", "int8-dynamic"):
        assert result.max_abs_diff > 0  # lower precision shows in the output
    changes = [abs(c.change_s) for c in result.nodes]
    assert changes == sorted(changes, reverse=True)  # what got faster or slower, largest first
    assert "" in {m.path for m in result.modules}
    assert convnet.what_ifs[name] == result


def test_every_catalogued_what_if_has_one_change_and_the_demo_offers_each() -> None:
    from fxtui.ui.demo.demo_what_ifs import NAMES

    assert set(CHANGES) == set(CATALOGUE) - {"threads=N"}
    assert set(NAMES) == set(CHANGES) | {"threads=1"}


def test_the_session_model_and_inputs_are_left_as_they_were(convnet: Session) -> None:
    weight = convnet.captured.root.conv.weight.detach().clone()  # type: ignore[union-attr]
    x = convnet.inputs.args[0]
    measure(convnet, "channels-last", "fold-bn", "int8-dynamic")
    assert torch.equal(convnet.captured.root.conv.weight, weight)  # type: ignore[union-attr]
    assert x.is_contiguous() and not x.is_contiguous(memory_format=torch.channels_last)
    assert isinstance(convnet.captured.root.fc, nn.Linear)  # not the quantized one  # type: ignore[union-attr]
    assert "bn" in convnet.timer.names


def test_channels_last_and_bf16_keep_every_node_fold_bn_drops_the_batchnorm(convnet: Session) -> None:
    nodes = {n.name for n in convnet.graph.nodes if n.op not in ("placeholder", "output")}
    channels_last, bf16, fold = measure(convnet, "channels-last", "bf16", "fold-bn")
    for result in (channels_last, bf16):
        assert {c.name for c in result.nodes} == nodes
        assert all(c.before_s is not None and c.after_s is not None for c in result.nodes)
    by_name = {c.name: c for c in fold.nodes}
    assert by_name["bn"].before_s is not None and by_name["bn"].after_s is None  # gone
    assert by_name["conv"].before_s is not None and by_name["conv"].after_s is not None  # kept, fused
    assert by_name["conv"].module_path == "conv"
    modules = {m.path: m for m in fold.modules}
    assert modules["bn"].after_s is None and modules["conv"].after_s is not None
    assert "fold 1 BatchNorm layer into the convolution" in fold.title


def test_bf16_is_cpu_autocast_and_says_so(convnet: Session) -> None:
    (result,) = measure(convnet, "bf16")
    assert "torch.autocast('cpu', dtype=torch.bfloat16)" in result.title
    assert "weights and inputs unchanged" in result.title


def test_compile_is_measured_per_module_with_its_compile_time() -> None:
    session = session_for_module(loaded_from_module(Mlp().eval(), torch.randn(4, 16)), analyse=False)
    (result,) = measure(session, "compile")
    assert result.measured, result.error
    assert result.nodes == ()  # kernels and graph nodes: none is on both sides
    # Each module before (Σ of its graph nodes) → after (Σ of its kernels), as --compile charges them.
    modules = {m.path: m for m in result.modules}
    assert modules["fc1"].before_s and modules["fc1"].after_s, modules
    assert result.setup_s > 0 and "compiled it in" in result.title
    assert result.max_rel_diff is not None and result.max_rel_diff < 1e-4


def test_a_compile_that_fails_is_one_sentence(monkeypatch: pytest.MonkeyPatch, convnet: Session) -> None:
    from torch._inductor.exc import InvalidCxxCompiler

    def no_compiler(model: nn.Module, **kwargs: object) -> object:
        raise InvalidCxxCompiler()

    monkeypatch.setattr(torch, "compile", no_compiler)
    (result,) = measure(convnet, "compile")
    assert result.error.startswith("torch.compile needs a working C++ compiler") and "\n" not in result.error

    def broken(model: nn.Module, **kwargs: object) -> object:
        raise RuntimeError("lowering failed\nat some long trace")

    monkeypatch.setattr(torch, "compile", broken)
    (result,) = measure(convnet, "compile")
    assert result.error == "torch.compile failed: RuntimeError: lowering failed"


def test_a_compile_failure_names_the_innermost_error() -> None:
    inner = ValueError("unsupported op")
    outer = RuntimeError("backend='inductor' raised:")
    outer.__cause__ = inner
    assert compile_failure(outer) == "torch.compile failed: ValueError: unsupported op"


def test_progress_goes_pair_by_pair_and_a_cancel_ends_the_measurement_between_pairs() -> None:
    session = conv_session()
    said: list[str] = []

    def cancelled() -> bool:
        return any("pair 2 of" in line for line in said)

    results = run_what_ifs(session, ["channels-last", "bf16"], pairs=5, progress=said.append, cancelled=cancelled)
    assert results == () and session.what_ifs == {}  # nothing half-measured is kept
    assert said[0] == "what-if channels-last: applying the change"
    assert "what-if channels-last: pair 1 of 5" in said and not any(line.startswith("what-if bf16") for line in said)


# -- what cannot apply ----------------------------------------------------------------------


def test_what_cannot_apply_is_one_sentence_and_the_others_still_run() -> None:
    session = session_for_module(loaded_from_module(Mlp().eval(), torch.randn(4, 16)), analyse=False)
    threads = other_threads(session)
    channels_last, fold, result = measure(session, "channels-last", "fold-bn", threads)
    assert channels_last.error == "channels-last changes 4-D image tensors, and none of this model's inputs is one"
    assert fold.error.startswith("the model has no Conv→BatchNorm pair to fold")
    for failed in (channels_last, fold):
        assert not failed.measured and failed.before_s is None and "\n" not in failed.error
    assert result.measured and result.name == threads


def test_int8_needs_a_linear_layer_and_bf16_a_floating_point_model() -> None:
    conv_only = nn.Sequential(nn.Conv2d(3, 4, 3)).eval()
    session = session_for_module(loaded_from_module(conv_only, torch.randn(1, 3, 8, 8)), analyse=False)
    (int8,) = measure(session, "int8-dynamic")
    assert int8.error == "int8-dynamic quantizes nn.Linear layers, and this model has none"
    ints = session_for_module(loaded_from_module(Counter(), torch.arange(6)), analyse=False)
    (bf16,) = measure(ints, "bf16")
    assert (
        bf16.error == "bf16 changes floating-point arithmetic, and this model has no floating-point parameter or input"
    )


def test_fold_bn_needs_the_fx_capture() -> None:
    session = conv_session(capture="dynamo")
    options = {o.name: o.reason for o in what_if_options(session)}
    assert options["fold-bn"].startswith("fold-bn rewrites call_module nodes, which only the fx capture keeps")
    (channels_last,) = measure(session, "channels-last")  # a TorchDynamo capture is captured again, changed
    assert channels_last.measured
    assert {c.name for c in channels_last.nodes} == {
        n.name for n in session.graph.nodes if n.op not in ("placeholder", "output")
    }


def test_a_training_step_offers_thread_counts_only() -> None:
    loaded = LoadedModel(module=ConvNet(), inputs=Inputs((torch.randn(4, 3, 16, 16),)), name="ConvNet", dtype="float32")
    session = session_for_module(loaded, analyse=False, train=True)
    options = {o.name: o.reason for o in what_if_options(session)}
    assert "training step" in options["channels-last"] and "only threads=N applies" in options["compile"]
    assert options[other_threads(session)] == ""
    (result,) = measure(session, other_threads(session))
    assert result.measured
    assert result.max_abs_diff is None and "every training step changes the parameters" in result.note


def test_options_offer_every_what_if_and_a_thread_count_other_than_the_sessions(convnet: Session) -> None:
    options = {o.name: o for o in what_if_options(convnet)}
    assert {"channels-last", "bf16", "fold-bn", "compile", "int8-dynamic"} <= set(options)
    counts = [n for n in options if n.startswith("threads=")]
    assert counts and f"threads={convnet.graph.threads}" not in counts
    assert all(o.reason == "" for o in options.values())


# -- names ----------------------------------------------------------------------------------


def test_names_are_parsed_once_each_in_order() -> None:
    assert parse_what_ifs("bf16, channels-last,bf16,threads=3") == ("bf16", "channels-last", "threads=3")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("fp16", "no what-if 'fp16'; choose from channels-last, bf16, fold-bn, threads=N, compile, int8-dynamic"),
        ("threads=0", "'threads=0' is not a thread count"),
        ("threads=two", "is not a thread count"),
        ("threads=N", "write threads=N with N ≥ 1, e.g. threads=1"),
        (",", "takes names like channels-last,bf16"),
    ],
)
def test_an_unknown_name_lists_the_valid_ones(text: str, says: str) -> None:
    with pytest.raises(FxtuiError) as caught:
        parse_what_ifs(text)
    assert says in str(caught.value)


# -- output difference ----------------------------------------------------------------------


def test_output_difference_is_relative_to_each_outputs_own_size() -> None:
    big, small = torch.tensor([100.0, -200.0]), torch.tensor([0.5, 1.0])
    changed_big, changed_small = torch.tensor([101.0, -200.0]), torch.tensor([0.5, 1.1])
    abs_diff, rel_diff = output_difference({"a": big, "b": small}, {"a": changed_big, "b": changed_small})
    assert abs_diff == pytest.approx(1.0)
    assert rel_diff == pytest.approx(0.1, rel=1e-4)  # 0.1 ÷ 1.0 beats 1 ÷ 200


def test_output_difference_compares_in_float32_and_skips_integers() -> None:
    a = (torch.ones(3), torch.arange(3))
    b = (torch.ones(3, dtype=torch.bfloat16) * 1.5, torch.arange(3) + 7)
    assert output_difference(a, b) == (0.5, 0.5)


def test_output_difference_treats_a_nan_on_one_side_as_infinite_and_shared_nans_as_equal() -> None:
    nan = float("nan")
    assert output_difference(torch.tensor([1.0, nan]), torch.tensor([1.0, nan])) == (0.0, 0.0)
    abs_diff, _ = output_difference(torch.tensor([1.0, 2.0]), torch.tensor([1.0, nan]))
    assert abs_diff == math.inf


def test_outputs_of_another_structure_are_not_compared() -> None:
    assert output_difference((torch.ones(2),), (torch.ones(2), torch.ones(2))) == (None, None)
    assert output_difference(torch.ones(2), torch.ones(3)) == (None, None)
    assert output_difference(torch.arange(2), torch.arange(2)) == (None, None)


# -- verdict and JSON -----------------------------------------------------------------------


def result(before: tuple[float, float, float], after: tuple[float, float, float]) -> WhatIf:
    return WhatIf(
        "x",
        "x",
        before_p25_s=before[0],
        before_s=before[1],
        before_p75_s=before[2],
        after_p25_s=after[0],
        after_s=after[1],
        after_p75_s=after[2],
        pairs=5,
    )


def test_a_verdict_only_when_the_spreads_do_not_overlap() -> None:
    assert result((9.0, 10.0, 11.0), (6.0, 7.0, 8.0)).verdict == "faster"
    assert result((9.0, 10.0, 11.0), (12.0, 13.0, 14.0)).verdict == "slower"
    overlapping = result((9.0, 10.0, 11.0), (8.0, 9.0, 9.5))
    assert overlapping.verdict == "" and overlapping.saving_pct == pytest.approx(10.0)
    assert WhatIf("x", "x", error="cannot").verdict == "" and WhatIf("x", "x", error="cannot").saving_pct is None


def test_what_ifs_round_trip_through_the_json_report(convnet: Session, tmp_path) -> None:  # type: ignore[no-untyped-def]
    run_profile(convnet, 3, 1)
    folded, _ = measure(convnet, "fold-bn", "int8-dynamic")
    convnet.what_ifs["compile"] = WhatIf("compile", "torch.compile", error="torch.compile failed: boom")
    report = make_report(convnet, timeline=False)
    path = tmp_path / "r.json"
    export(report, {"json": str(path)})
    loaded = Report.load(path)
    assert loaded.what_ifs == report.what_ifs
    data = report.metadata()["what_ifs"]
    fold = next(w for w in data if w["name"] == "fold-bn")
    assert {"name", "before_s", "after_s", "before_p25_s", "after_p75_s", "max_abs_diff", "max_rel_diff"} <= set(fold)
    assert fold["nodes"]["bn"]["after_s"] is None and fold["nodes"]["conv"]["before_s"] > 0
    assert list(fold["nodes"]) == [c.name for c in folded.nodes]  # largest change first
    assert data[-1]["error"] == "torch.compile failed: boom"


def test_an_infinite_output_difference_is_written_as_null() -> None:
    data = WhatIf("bf16", "t", before_s=1.0, after_s=1.0, max_abs_diff=math.inf, max_rel_diff=math.inf).to_dict()
    assert data["max_abs_diff"] is None and data["max_rel_diff"] is None


def test_the_text_says_a_large_slowdown_as_a_factor_and_gives_no_verdict_within_the_spread() -> None:
    from fxtui.core.what_if_text import change_text
    from fxtui.report.findings_text import what_if_text

    assert change_text(result((0.9, 1.0, 1.1), (11.0, 12.0, 13.0))) == "12.0× slower"
    assert change_text(result((9.0, 10.0, 11.0), (11.5, 12.0, 13.0))) == "20.0% slower"
    assert (
        change_text(result((9.0, 10.0, 11.0), (8.0, 9.0, 9.5)))
        == "-10.0% run time (p25–p75 ranges overlap: no verdict)"
    )
    text = what_if_text(WhatIf("compile", "torch.compile", error="torch.compile failed: boom"))
    assert text.splitlines() == [
        "what-if    compile: torch.compile",
        "           cannot apply: torch.compile failed: boom",
    ]
