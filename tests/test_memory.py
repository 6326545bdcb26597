"""Memory per node: output bytes, bytes allocated, activations alive after each node, the peak.

Tiny models built here give exact figures; resnet18 checks the issue's target.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch
import torch.fx
from helpers import MLP_SOURCE, write_source
from torch import nn

from fxtui.commands.cli import main
from fxtui.core.findings import Hint
from fxtui.measure.analysis.memory import measure_captured_memory
from fxtui.measure.capture import capture
from fxtui.measure.capture.captured import one_graph_model
from fxtui.measure.explain import hints_for
from fxtui.measure.inputs import Inputs
from fxtui.measure.pipeline import make_report, run_profile, session_for_module
from fxtui.measure.targets import LoadedModel
from fxtui.report.api import Report

pytestmark = pytest.mark.e2e


def nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


class Views(nn.Module):
    """A linear layer, then a view and an in-place ReLU of its output, then a copy."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 32)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        flat = y.view(-1)
        self.act(flat)
        return flat * 2


def memory_of(module: nn.Module, *args: torch.Tensor):  # type: ignore[no-untyped-def]
    inputs = Inputs(args)
    captured = capture(module.eval(), inputs, mode="fx", name=type(module).__name__)
    return measure_captured_memory(captured, inputs)


def test_output_bytes_are_exact_and_views_create_none() -> None:
    x = torch.randn(4, 16)
    found = memory_of(Views(), x).nodes
    assert found["fc"].output_bytes == 4 * 32 * 4
    # A view and an in-place op share the linear layer's storage: no new bytes.
    assert found["view"].output_bytes == 0
    assert found["act"].output_bytes == 0
    assert found["mul"].output_bytes == 4 * 32 * 4
    assert found["x"].output_bytes == 0  # the input is counted apart


class Skip(nn.Module):
    """A long skip connection: ``a`` is read again only after a branch of five layers."""

    def __init__(self, skip: bool) -> None:
        super().__init__()
        self.stem = nn.Linear(64, 256)
        self.branch = nn.Sequential(*[nn.Linear(256, 256) for _ in range(5)])
        self.skip = skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.stem(x)
        b = self.branch(a)
        return a + b if self.skip else b * 2


@pytest.mark.parametrize("skip", [True, False])
def test_a_skip_connection_keeps_its_tensor_alive_across_the_branch(skip: bool) -> None:
    x = torch.randn(8, 64)
    found = memory_of(Skip(skip), x)
    a_bytes = found.nodes["stem"].output_bytes
    layer = 8 * 256 * 4
    assert a_bytes == layer
    branch = [f"branch_{i}" for i in range(5)]
    for name in branch[1:]:
        # Right after a branch layer its own output is alive (the next layer reads it) …
        if skip:
            # … and so is the stem's output, held for the add at the end.
            assert found.nodes[name].live_bytes == layer + found.nodes[name].output_bytes
        else:
            assert found.nodes[name].live_bytes == found.nodes[name].output_bytes
    # After the last node reading them, only that node's result is alive; after the graph, nothing.
    last = "add" if skip else "mul"
    assert found.nodes[last].live_bytes == found.nodes[last].output_bytes == layer
    assert found.nodes["output"].live_bytes == 0
    assert found.summary.peak_live_bytes == (2 * layer if skip else layer)


@torch.fx.wrap
def scaled_sum(x: torch.Tensor) -> torch.Tensor:
    doubled = x * 2  # a temporary the size of x, freed before the function returns
    return doubled.sum(0)


class Temporary(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return scaled_sum(x)


def test_allocated_bytes_include_a_temporary() -> None:
    x = torch.randn(512, 256)
    found = memory_of(Temporary(), x)
    node = found.nodes["scaled_sum"]
    assert node.output_bytes == 256 * 4
    assert node.alloc_bytes is not None and node.alloc_bytes >= nbytes(x) + node.output_bytes
    assert node.temp_bytes >= nbytes(x)
    # The allocator held the temporary and the output at once: more than any live figure.
    assert found.summary.high_water_bytes is not None and found.summary.high_water_bytes >= nbytes(x)
    assert found.summary.high_water_node == "scaled_sum"


class Nested(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 64))
        self.head = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x))


@pytest.fixture(scope="module")
def nested_report() -> Report:
    loaded = LoadedModel(module=Nested().eval(), inputs=Inputs((torch.randn(6, 32),)), name="Nested", dtype="float32")
    session = session_for_module(loaded, analyse=False, capture_mode="fx", memory=True)
    run_profile(session, 3, 1)
    return make_report(session)


def test_module_figures_roll_up_their_nodes(nested_report: Report) -> None:
    modules = {m.path: m for m in nested_report.modules}
    rows = {r.name: r for r in nested_report.rows}
    encoder = [r for r in nested_report.rows if r.module_path.startswith("encoder")]
    assert modules["encoder"].output_bytes == sum(r.info.output_bytes or 0 for r in encoder)
    assert modules["encoder"].peak_live_bytes == max(r.info.live_bytes or 0 for r in encoder)
    assert modules[""].output_bytes == sum(r.info.output_bytes or 0 for r in nested_report.rows)
    assert modules["encoder"].output_bytes == 6 * (128 + 128 + 64) * 4  # the ReLU is not in place: a copy
    assert modules["encoder.1"].output_bytes == rows["encoder_1"].info.output_bytes == 6 * 128 * 4
    memory = nested_report.memory
    assert memory is not None
    assert memory.param_bytes == sum(nbytes(p) for p in Nested().parameters())
    assert memory.peak_live_bytes == max(r.info.live_bytes or 0 for r in nested_report.rows)
    assert rows[memory.peak_node].info.live_bytes == memory.peak_live_bytes


def test_the_figures_survive_json_and_older_files_still_load(nested_report: Report, tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(nested_report.to_json())
    data = json.loads(path.read_text())
    assert {"output_bytes", "alloc_bytes", "live_bytes"} <= set(data["rows"][0])
    assert data["metadata"]["peak_node"] == nested_report.memory.peak_node  # type: ignore[union-attr]
    back = Report.load(path)
    assert back.memory == nested_report.memory
    assert [r.info.live_bytes for r in back.rows] == [r.info.live_bytes for r in nested_report.rows]
    assert [m.peak_live_bytes for m in back.modules] == [m.peak_live_bytes for m in nested_report.modules]
    # A file written before memory was measured: no memory keys at all.
    for row in data["rows"]:
        for key in ("output_bytes", "alloc_bytes", "live_bytes", "saved_bytes"):
            row.pop(key)
    for key in ("peak_live_bytes", "peak_node", "param_bytes", "high_water_bytes"):
        data["metadata"].pop(key)
    path.write_text(json.dumps(data))
    old = Report.load(path)
    assert old.memory is None and all(r.info.output_bytes is None for r in old.rows)
    assert "peak" not in old.header()


def test_a_graph_called_twice_counts_its_outputs_twice() -> None:
    gm = torch.fx.symbolic_trace(nn.Sequential(nn.Linear(8, 8)))
    captured = one_graph_model(gm)
    part = captured.parts[0]
    captured.call = lambda given: part(part(*given.args))
    found = measure_captured_memory(captured, Inputs((torch.randn(3, 8),)))
    assert found.nodes["_0"].output_bytes == 2 * 3 * 8 * 4


def test_resnet18_conv1_and_the_peak() -> None:
    torchvision = pytest.importorskip("torchvision")
    x = torch.randn(5, 3, 224, 224)
    found = memory_of(torchvision.models.resnet18(), x)
    assert found.nodes["conv1"].output_bytes == 5 * 64 * 112 * 112 * 4
    assert found.nodes["relu"].output_bytes == 0  # ReLU(inplace=True)
    assert found.summary.peak_live_bytes >= found.nodes["conv1"].output_bytes
    assert found.nodes[found.summary.peak_node].live_bytes == found.summary.peak_live_bytes
    params = torchvision.models.resnet18()
    assert found.summary.param_bytes == sum(nbytes(t) for t in (*params.parameters(), *params.buffers()))


class Mlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Sequential(nn.Linear(32, 64), nn.ReLU())
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.fc1(x))


def test_a_training_step_reports_what_is_saved_for_backward() -> None:
    loaded = LoadedModel(module=Mlp(), inputs=Inputs((torch.randn(16, 32),)), name="Mlp", dtype="float32")
    session = session_for_module(loaded, analyse=False, train=True, memory=True)
    run_profile(session, 2, 1)
    report = make_report(session)
    memory = report.memory
    assert memory is not None and memory.saved_bytes
    forward = [r for r in report.rows if r.info.phase == "forward"]
    assert memory.saved_bytes == sum(r.info.saved_bytes or 0 for r in forward)
    modules = {m.path: m for m in report.modules}
    # fc1's output (after its ReLU, which the ReLU's gradient and fc2's weight gradient read) is kept.
    assert modules["fc1"].saved_bytes == 16 * 64 * 4
    assert modules[""].saved_bytes == memory.saved_bytes
    # The backward graph starts holding everything saved: its peak is at least that.
    assert memory.backward_peak_bytes is not None and memory.backward_peak_bytes >= memory.saved_bytes
    assert memory.forward_peak_bytes is not None
    assert "saved" in report.header()


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    return write_source(tmp_path, "models.py", MLP_SOURCE)


def test_the_command_line_shows_memory_columns_and_the_peak(
    capsys: pytest.CaptureFixture[str], model_file: Path, tmp_path: Path
) -> None:
    out_json = tmp_path / "run.json"
    code = main([f"{model_file}:make", "--once", "--runs", "2", "--warmup", "0", "--memory", "--json", str(out_json)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "peak" in out and "of activations alive at once" in out
    assert "allocated" in out and "live after" in out
    meta = json.loads(out_json.read_text())["metadata"]
    assert meta["peak_live_bytes"] > 0 and meta["peak_node"] and meta["param_bytes"] == (8 * 64 + 64 + 64 * 4 + 4) * 4


def test_a_memory_sort_measures_memory_without_the_flag(capsys: pytest.CaptureFixture[str], model_file: Path) -> None:
    code = main([f"{model_file}:make", "--once", "--runs", "1", "--warmup", "0", "--sort", "output", "--top", "1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    table = out.split("\n\n", 1)[1]
    assert "_0" in table.splitlines()[2] and "512 B" in table  # the widest output, 2×64 floats


@pytest.mark.parametrize(
    ("args", "fragment"),
    [(["--memory", "--columns", "output,nope"], "nope"), (["--memory", "--sort", "bytes"], "bytes")],
)
def test_bad_memory_input_is_one_sentence_and_exit_2(
    capsys: pytest.CaptureFixture[str], model_file: Path, args: list[str], fragment: str
) -> None:
    code = main([f"{model_file}:make", "--once", "--runs", "1", "--warmup", "0", *args])
    _, err = capsys.readouterr()
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fxtui: ") and fragment in lines[0]


def hints_of(module: nn.Module, x: torch.Tensor, *, train: bool = False) -> dict[str, Hint]:
    loaded = LoadedModel(module=module, inputs=Inputs((x,)), name=type(module).__name__, dtype="float32")
    mode = "auto" if train else "fx"
    session = session_for_module(loaded, analyse=False, capture_mode=mode, train=train, memory=True)
    run_profile(session, 2, 0)
    return {h.rule: h for h in hints_for(session)}


def test_a_node_whose_temporaries_set_the_peak_gets_a_hint() -> None:
    found = hints_of(Temporary(), torch.randn(512, 256))
    hint = found["memory-temporaries"]
    assert hint.nodes == ("scaled_sum",)
    assert "512 KiB" in hint.title  # the temporary x * 2


def test_activations_that_dwarf_the_weights_get_a_batch_hint() -> None:
    conv = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU())
    found = hints_of(conv, torch.randn(8, 3, 32, 32))
    hint = found["memory-batch"]
    # The conv's output, 8×16×32×32 floats, is the peak: 64 KiB per sample.
    assert "64.0 KiB per sample of 8" in hint.title and "a batch of 4" in hint.evidence
    assert "memory-checkpointing" not in found  # inference: nothing is saved for backward


def test_weights_that_dwarf_the_activations_get_no_memory_hint() -> None:
    found = hints_of(Nested(), torch.randn(6, 32))
    assert not {rule for rule in found if rule.startswith("memory-")}


def test_a_step_that_mostly_keeps_activations_gets_a_checkpointing_hint() -> None:
    deep = nn.Sequential(*[m for _ in range(6) for m in (nn.Linear(64, 64), nn.ReLU())])
    found = hints_of(deep, torch.randn(512, 64), train=True)
    hint = found["memory-checkpointing"]
    assert "torch.utils.checkpoint" in hint.evidence and hint.nodes


def test_the_pass_leaves_the_program_as_the_timed_runs_need_it() -> None:
    inputs = Inputs((torch.randn(4, 16),))
    captured = capture(Views().eval(), inputs, mode="fx", name="Views")
    part = captured.parts[0]
    before = part.executor
    measure_captured_memory(captured, inputs)
    # The graph runs through its own forward again, with no profiler left recording.
    assert part.executor == before
    assert not torch.autograd.profiler._is_profiler_enabled


def test_fxtui_diff_compares_the_live_peaks(nested_report: Report, tmp_path: Path) -> None:
    from fxtui.report.diff import diff_reports

    memory = nested_report.memory
    assert memory is not None
    bigger = nested_report.replace(memory=dataclasses.replace(memory, peak_live_bytes=2 * memory.peak_live_bytes))
    line = diff_reports(nested_report, bigger).memory_line
    assert "+100.0%" in line and memory.peak_node in line
    assert diff_reports(nested_report.replace(memory=None), bigger).memory_line == ""


class Breaks(nn.Module):
    """A branch on a tensor's value: TorchDynamo makes two graphs, and ``y`` flows from one to the other."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(32, 32)
        self.head = nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.stem(x)
        if y.sum().item() > -1e9:
            y = y * 2
        return self.head(y)


def test_every_graph_of_a_dynamo_capture_is_measured_and_values_between_them_stay_alive() -> None:
    inputs = Inputs((torch.randn(64, 32),))
    captured = capture(Breaks().eval(), inputs, mode="dynamo", name="Breaks")
    assert len(captured.parts) == 2
    found = measure_captured_memory(captured, inputs)
    assert captured.late_graphs == 0  # no recompile: the pass ran the captured graphs themselves
    layer = 64 * 32 * 4
    assert found.nodes["stem · linear"].output_bytes == layer
    # The second graph takes the stem's output as an input: an activation, alive until its last use.
    assert found.nodes["y"].output_bytes == 0 and found.nodes["y"].live_bytes == layer
    assert found.nodes["mul"].live_bytes == layer  # y is freed after mul reads it; mul's output lives
