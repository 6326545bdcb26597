"""Capture modes: TorchDynamo takes the models symbolic tracing cannot, and nothing downstream cares which ran.

Tiny transformers models are built here from small configurations (2 layers, hidden 64);
nothing is downloaded.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import helpers
import pytest
import torch
from torch import nn

from fxtui.core.errors import FxtuiError
from fxtui.measure.capture import capture, one_graph_model
from fxtui.measure.capture.names import module_path
from fxtui.measure.inputs import Inputs
from fxtui.measure.pipeline import make_report, run_profile, session_for_module
from fxtui.measure.session import Session
from fxtui.measure.targets import LoadedModel

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # transformers models throughout

transformers = pytest.importorskip("transformers")

TINY_BERT = "num_hidden_layers=2,hidden_size=64,num_attention_heads=2,intermediate_size=128,vocab_size=512"


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    return helpers.run_cli(capsys, *args, "--once", "--runs", "3", "--warmup", "1")


def tiny_bert() -> nn.Module:
    config = transformers.BertConfig(
        num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128, vocab_size=512
    )
    return transformers.BertModel(config).eval()


def bert_inputs() -> Inputs:
    ids = torch.randint(0, 512, (1, 16), generator=torch.Generator().manual_seed(0))
    return Inputs((), {"input_ids": ids, "attention_mask": torch.ones_like(ids)})


class GlueClock:
    """A clock that only the Python between two graphs moves (4 ms each time), so the figures are exact."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


GLUE = GlueClock()


@torch._dynamo.disable
def python_between_graphs() -> None:
    GLUE.now += 4_000_000


class BreaksOnItem(nn.Module):
    """A branch on a tensor's value: TorchDynamo splits the model there, with Python in between."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(32, 32)
        self.head = nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.stem(x)
        if y.sum().item() > -1e9:  # always true, but only the data says so
            python_between_graphs()  # no node may be charged with it
            y = y * 2
        return self.head(y).relu()


def profiled(module: nn.Module, inputs: Inputs, runs: int = 5, capture_mode: str = "auto"):  # type: ignore[no-untyped-def]
    loaded = LoadedModel(module=module, inputs=inputs, name=type(module).__name__, dtype="float32")
    session = session_for_module(loaded, analyse=False, capture_mode=capture_mode)
    run_profile(session, runs, 1)
    return session, make_report(session, timeline=False)


def test_transformers_model_switches_to_dynamo_and_keeps_its_module_tree() -> None:
    session, report = profiled(tiny_bert(), bert_inputs())
    graph = session.graph
    assert graph.capture == "dynamo"
    assert "symbolic_trace" in graph.capture_reason  # the header says why it switched
    names = {r.name for r in report.rows}
    assert "encoder.layer.0.attention.self.query · linear" in names
    query = next(r for r in report.rows if r.name == "encoder.layer.0.attention.self.query · linear")
    assert query.module_path == "encoder.layer.0.attention.self.query" and query.median_s > 0
    # The tree is the model's own: encoder → layer → 0 → attention → self → query.
    modules = graph.modules
    assert modules["encoder.layer.0.attention.self"].class_name == "BertSelfAttention"
    assert "encoder.layer.0.attention.self.query" in modules["encoder.layer.0.attention.self"].children
    assert modules["encoder"].parent == "" and modules["encoder.layer.0"].parent == "encoder.layer"
    # Parameters belong to the module that owns them.
    weight = graph.node("encoder.layer.0.attention.self.query · weight")
    assert weight.op == "placeholder" and weight.module_path == "encoder.layer.0.attention.self.query"
    # The figures are this report's own medians' ratios (how close to 1 is a measurement: bench_engine.py capture).
    attributed = sum(r.median_s for r in report.rows)
    assert report.fidelity == pytest.approx(attributed / report.eager_median_s)
    assert report.overhead == pytest.approx(report.run_median_s / report.eager_median_s)
    assert report.unattributed_s == pytest.approx(report.eager_median_s - attributed)


def test_node_names_are_the_same_in_every_session() -> None:
    first = capture(tiny_bert(), bert_inputs(), mode="dynamo", name="bert").names
    second = capture(tiny_bert(), bert_inputs(), mode="dynamo", name="bert").names
    assert first == second
    assert len(set(first)) == len(first)  # unique: a second op of a kind in one module gets "#2"
    assert any(name.endswith(" #2") for name in first)


def test_a_graph_break_makes_several_graphs_and_its_python_stays_unattributed() -> None:
    inputs = Inputs((torch.randn(4, 32),))
    captured = capture(BreaksOnItem(), inputs, mode="auto", name="BreaksOnItem")
    session = Session(captured, inputs, clock=GLUE, clock_overhead_ns=0)
    run_profile(session, 5, 1)
    report = make_report(session, timeline=False)
    graph = session.graph
    assert graph.capture == "dynamo" and graph.graphs >= 2
    assert graph.breaks and "item()" in graph.breaks[0].reason
    assert "test_capture.py" in graph.breaks[0].source and "if y.sum().item()" in graph.breaks[0].source
    # The 4 ms of Python between the graphs are in both kinds of run and in no node.
    assert {r.median_s for r in report.rows} == {0.0}
    assert report.run_median_s == report.eager_median_s == pytest.approx(4e-3)
    assert report.unattributed_s == pytest.approx(4e-3) and report.fidelity == 0.0
    assert {n.graph for n in graph.nodes} >= {0, 1}


class BreaksInside(nn.Module):
    """A graph break inside a submodule: TorchDynamo compiles the submodule's frame on its own."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = BreaksOnItem()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x * 2)


def test_modules_of_a_frame_compiled_on_its_own_keep_their_full_path() -> None:
    captured = capture(BreaksInside(), Inputs((torch.randn(4, 32),)), mode="dynamo", name="m")
    assert "inner.head · linear" in captured.names and "inner.stem · linear" in captured.names
    assert captured.module_paths["inner.head · linear"] == "inner.head"


def test_fx_capture_still_names_nodes_by_fx_and_refuses_what_it_cannot_trace() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    captured = capture(model, Inputs((torch.randn(2, 4),)), mode="fx")
    assert captured.capture == "fx" and captured.names == ["input_1", "_0", "_1", "output"]
    with pytest.raises(FxtuiError, match="cannot be traced"):
        capture(BreaksOnItem(), Inputs((torch.randn(4, 32),)), mode="fx")


def test_a_graph_run_twice_per_run_adds_its_calls() -> None:
    gm = torch.fx.symbolic_trace(nn.Linear(8, 8))
    captured = one_graph_model(gm)
    part = captured.parts[0]
    captured.call = lambda inputs: part(part(*inputs.args))  # the same graph twice, as a loop would
    session = Session(captured, Inputs((torch.randn(2, 8),)))
    assert session.timer.calls == [2]
    assert {n.calls for n in session.graph.nodes} == {2}
    session.run_pair()
    one = session.timer.interps[0].last_ns[1]
    assert session.timer.last_ns[1] >= one  # both calls, not the last one alone


def test_dynamo_captures_get_work_and_source_lines_like_fx_captures() -> None:
    loaded = LoadedModel(module=tiny_bert(), inputs=bert_inputs(), name="bert", dtype="float32")
    session = session_for_module(loaded, capture_mode="dynamo")  # analyse: FLOPs, bytes, source lines
    query = session.graph.node("encoder.layer.0.attention.self.query · linear")
    # 1×16 tokens through a 64→64 linear: 2·16·64·64 FLOPs.
    assert query.flops == 2 * 16 * 64 * 64
    assert query.bytes_moved is not None and query.bytes_moved > 64 * 64 * 4
    assert "modeling_bert.py" in query.source
    assert session.captured.late_graphs == 0  # counting the work recompiled nothing


def test_dynamo_module_sources_become_plain_paths() -> None:
    assert module_path("L['self'].encoder.layer[0].attention") == "encoder.layer.0.attention"
    assert module_path("L['self']._modules['stem']") == "stem"
    assert module_path("L['self']") == ""


# -- the command line ------------------------------------------------------------------------


def test_hf_target_builds_from_the_default_configuration_and_overrides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_json = tmp_path / "bert.json"
    code, out, err = run_cli(
        capsys, "hf:bert", "--hf-config", TINY_BERT, "--input-shape", "1,16", "--json", str(out_json)
    )
    assert code == 0, err
    assert out.startswith("model      hf:bert   inputs input_ids: 1×16, attention_mask: 1×16")
    assert "capture    dynamo" in out
    data = json.loads(out_json.read_text())
    assert data["metadata"]["capture"] == "dynamo"
    assert sum(1 for r in data["rows"] if r["name"].endswith("· linear")) == 2 * 6 + 1  # q k v o up down, pooler


def test_hf_weights_are_those_from_config_gives_without_initializing_twice() -> None:
    transformers = pytest.importorskip("transformers")
    from fxtui.measure.targets.default_inputs import SEED
    from fxtui.measure.targets.hf import load_hf

    overrides = [tuple(kv.split("=")) for kv in TINY_BERT.split(",")]
    fast, _ = load_hf("bert", overrides)
    config = transformers.AutoConfig.for_model("bert", **{k: int(v) for k, v in overrides})
    torch.manual_seed(SEED)
    slow = transformers.AutoModel.from_config(config)
    buffers = dict(slow.named_buffers())
    assert all(torch.equal(b, buffers[n]) for n, b in fast.named_buffers())  # position ids and the like
    for name, p in ((n, p.detach()) for n, p in slow.named_parameters()):  # ones, zeros, normal(0, 0.02)
        q = fast.get_parameter(name).detach()
        if p.min() == p.max():
            assert torch.equal(q, p), name
        elif p.numel() >= 4096:
            assert abs(float(q.mean())) < 1e-3 and float(q.std()) == pytest.approx(float(p.std()), rel=0.05), name


def test_a_factory_returning_keyword_inputs_profiles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "gpt.py"
    path.write_text(
        textwrap.dedent(
            """
            import torch
            import transformers

            def make():
                config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=512, n_positions=64)
                ids = torch.randint(0, 512, (1, 16))
                return transformers.GPT2LMHeadModel(config), (), {"input_ids": ids}
            """
        )
    )
    code, out, err = run_cli(capsys, f"{path}:make", "--top", "0")
    assert code == 0, err
    assert "inputs input_ids: 1×16" in out
    assert "transformer.h.1.attn.c_attn" in out and "lm_head · linear" in out


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["hf:bertt"], ["unknown transformers model type 'bertt'", "hf:bert"]),
        (["hf:bert", "--hf-config", "num_hidden_layer=2"], ["no key 'num_hidden_layer'", "num_hidden_layers"]),
        (["hf:bert", "--hf-config", "num_hidden_layers=two"], ["whole number", "'two'"]),
        (["hf:bert", "--hf-config", "oops"], ["key=value"]),
        (["hf:llama"], ["billion parameters", "--hf-config", "num_hidden_layers"]),
        (["resnet18", "--hf-config", "a=1"], ["hf: targets only"]),
        (["{file}:raises", "--capture", "dynamo"], ["does not run on these inputs", "ValueError", "models.py:"]),
        (["hf:bert", "--hf-config", TINY_BERT, "--input-shape", "1,16,3"], ["does not run on these inputs"]),
        (["hf:bert", "--capture", "fx", "--hf-config", TINY_BERT], ["cannot be traced"]),
    ],
)
def test_bad_input_is_one_sentence_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], fragments: list[str]
) -> None:
    path = tmp_path / "models.py"
    path.write_text(
        textwrap.dedent(
            """
            import torch

            class Raises(torch.nn.Module):
                def forward(self, x):
                    raise ValueError("not this input")

            def raises():
                return Raises(), torch.zeros(2)
            """
        )
    )
    code, out, err = run_cli(capsys, *(a.replace("{file}", str(path)) for a in args))
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_the_fold_what_if_on_a_dynamo_capture_says_it_does_not_apply(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys, "hf:bert", "--hf-config", TINY_BERT, "--input-shape", "1,16", "--hints", "--what-if", "fold-bn"
    )
    assert code == 0
    assert "[conv-bn-fold]" not in out
    assert (
        "cannot apply: fold-bn rewrites call_module nodes, which only the fx capture keeps; this session was "
        "captured with dynamo"
    ) in out
