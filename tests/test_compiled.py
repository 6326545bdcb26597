"""--compile: a tiny CNN and a tiny transformer compiled by Inductor, every kernel timed and charged to its modules.

Each model is compiled once for the whole file (a module-scoped fixture): compiling is what takes
the time, and every test reads the same report.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import fxtui
from fxtui.core.compilation import CompiledSummary, common_ancestor, even_split, fused_text, module_comparison
from fxtui.core.errors import FxtuiError
from fxtui.report.data import ReportData
from fxtui.report.text import header, module_table

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


class Block(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.bn(self.conv(x))) + x


class TinyCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.block1 = Block(8)
        self.block2 = Block(8)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.block2(self.block1(self.stem(x)))
        return self.fc(x.mean((2, 3)))


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask).transpose(1, 2).reshape(b, t, d)
        return self.out(y)


class Layer(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, 2)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), mask)
        return x + self.mlp(self.norm2(x))


class TinyTransformer(nn.Module):
    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.layers = nn.ModuleList([Layer(dim), Layer(dim)])
        self.head = nn.Linear(dim, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # A causal mask made once in the model's own forward, as BERT makes its attention mask: every layer's
        # attention reads it.
        t = x.shape[1]
        mask = torch.arange(t)[None, :] <= torch.arange(t)[:, None]
        for layer in self.layers:
            x = layer(x, mask)
        return self.head(x)


def _model(kind: str) -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    if kind == "cnn":
        return TinyCNN().eval(), torch.randn(2, 3, 16, 16)
    return TinyTransformer().eval(), torch.randn(2, 8, 16)


#: Each model's report, made once for the whole file: compiling is what takes the time.
_REPORTS: dict[str, fxtui.Report] = {}


def _profiled(kind: str) -> fxtui.Report:
    if kind not in _REPORTS:
        model, x = _model(kind)
        _REPORTS[kind] = fxtui.profile(model, x, runs=5, warmup=1, compile=True, keep_disturbed=True)
    return _REPORTS[kind]


@pytest.fixture(params=["cnn", "transformer"])
def report(request: pytest.FixtureRequest) -> fxtui.Report:
    return _profiled(request.param)


def test_rows_are_kernel_calls_each_with_the_source_nodes_it_fuses(report: fxtui.Report) -> None:
    assert report.capture == "compiled"
    assert report.rows and all(r.kernel for r in report.rows)
    summary = report.compiled
    assert summary is not None and summary.graphs == 1 and summary.kernels + summary.externs == len(report.rows)
    # An extern call is named by its operation; a generated kernel by what it computes.
    assert any(r.kernel.startswith("extern_kernels.") for r in report.rows)
    assert any(r.kernel.startswith("cpp_fused") for r in report.rows)
    assert all(len(r.fused_nodes) == len(r.fused_modules) for r in report.rows)
    assert len({r.name for r in report.rows}) == len(report.rows)


def test_every_kernel_is_charged_to_the_common_module_of_what_it_fuses(report: fxtui.Report) -> None:
    paths = {m.path for m in report.modules}
    for row in report.rows:
        assert row.fused_nodes, f"{row.name} fuses no source node"
        assert row.module_path == common_ancestor(row.fused_modules)
        assert row.module_path in paths
        assert row.name.startswith(f"{row.module_path} · ") or not row.module_path


def test_an_extern_call_is_charged_to_its_own_operation_not_to_the_nodes_that_made_its_inputs() -> None:
    report = _profiled("transformer")
    attention = [r for r in report.rows if r.kernel.startswith("torch.ops.aten._scaled_dot_product")]
    assert len(attention) == 2, [r.kernel for r in report.rows]
    # The mask is made at the root, but the attention runs in each layer's attention module.
    assert [r.module_path for r in attention] == ["layers.0.attn", "layers.1.attn"]


def test_a_kernel_fused_across_two_modules_goes_to_their_common_ancestor() -> None:
    report = _profiled("cnn")
    # Inductor fuses block1's batch norm, its ReLU and the residual add of block1's own forward into one loop.
    fused = [r for r in report.rows if {"block1.bn", "block1.relu"} <= set(r.fused_modules)]
    assert fused, [(r.name, r.fused_modules) for r in report.rows]
    row = fused[0]
    assert row.module_path == common_ancestor(row.fused_modules)
    assert row.module_path in ("block1", "")
    assert "(fused)" in row.name
    # It counts in its ancestor's time, not in the batch norm's.
    modules = {m.path: m for m in report.modules}
    assert modules[row.module_path].inclusive_s >= row.median_s
    in_bn = sum(r.median_s for r in report.rows if r.module_path.startswith("block1.bn"))
    assert modules.get("block1.bn") is None or modules["block1.bn"].inclusive_s == pytest.approx(in_bn)


def test_each_module_has_its_eager_time_beside_its_compiled_time(report: fxtui.Report) -> None:
    summary = report.compiled
    assert summary is not None and summary.eager_s and report.eager_median_s
    for m in report.modules:
        assert m.compiled_s == m.inclusive_s
    with_ops = [m for m in report.modules if m.eager_s]
    assert with_ops and all(m.eager_s == summary.eager_modules[m.path] for m in with_ops)
    # The eager root holds every eager op: its time is the Σ of its children's plus its own ops'.
    top = [p for p in summary.eager_modules if p and "." not in p]
    assert summary.eager_modules[""] >= sum(summary.eager_modules[p] for p in top) * (1 - 1e-9)
    text = header(report)
    assert "compiled   Inductor (default)" in text and "eager median →" in text and "kernels    fidelity" in text
    assert "compiled ÷ eager" in module_table(report)


def test_a_module_fused_whole_into_an_ancestors_kernel_keeps_its_row_saying_where(tmp_path: Path) -> None:
    report = _profiled("cnn")
    summary = report.compiled
    assert summary is not None
    modules = {m.path: m for m in report.modules}
    assert set(summary.eager_modules) <= set(modules)  # every module with eager time has a row
    # Inductor fuses each block's batch norm and ReLU with the block's add: neither module has a kernel of its own.
    whole = {p: m for p, m in modules.items() if m.nodes == 0}
    assert {"block1.bn", "block1.relu", "block2.bn", "block2.relu"} <= set(whole), sorted(whole)
    for path, m in whole.items():
        assert m.eager_s == summary.eager_modules[path] and m.compiled_s == 0.0
        # Where its work went: a kernel charged to each named module computes one of its nodes.
        assert m.fused_into, path
        for home in m.fused_into:
            assert any(r.module_path == home and path in r.fused_modules for r in report.rows), (path, home)
    line = next(line for line in module_table(report, top=0).splitlines() if line.startswith("block1.bn "))
    assert f"fused into {modules['block1.bn'].fused_into[0] or '(root)'}" in line, line
    # The JSON: compiled_s 0 and fused_into, read back as written.
    path = tmp_path / "compiled.json"
    path.write_text(report.to_json())
    row = next(m for m in json.loads(path.read_text())["modules"] if m["path"] == "block1.bn")
    assert row["compiled_s"] == 0.0 and row["eager_s"] > 0
    assert row["fused_into"] == list(modules["block1.bn"].fused_into)
    again = {m.path: m for m in ReportData.load(path).modules}
    assert again["block1.bn"] == modules["block1.bn"]


def test_the_json_carries_kernels_fused_nodes_and_module_times(report: fxtui.Report, tmp_path: Path) -> None:
    path = tmp_path / "compiled.json"
    path.write_text(report.to_json())
    data = json.loads(path.read_text())
    row = data["rows"][0]
    assert {"kernel", "fused_nodes", "module_path"} <= set(row)
    assert all("eager_s" in m and "compiled_s" in m for m in data["modules"])
    assert data["metadata"]["compiled"]["kernels"] == report.compiled.kernels  # type: ignore[union-attr]
    again = ReportData.load(path)
    assert again.compiled == report.compiled
    assert [r.fused_nodes for r in again.rows] == [r.fused_nodes for r in report.rows]


def test_a_missing_compiler_is_one_sentence() -> None:
    import torch._inductor.config as config

    model, x = _model("cnn")
    with config.patch({"cpp.cxx": ("fxtui-no-such-compiler++",)}), pytest.raises(FxtuiError) as raised:
        fxtui.profile(model, x, runs=1, warmup=0, compile=True)
    text = str(raised.value)
    assert text.startswith("--compile needs a C++ compiler") and "\n" not in text


def test_a_model_that_cannot_compile_is_one_sentence() -> None:
    class Raises(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise ValueError("no such layer")

    with pytest.raises(FxtuiError) as raised:
        fxtui.profile(Raises(), torch.randn(2), runs=1, warmup=0, compile=True)
    text = str(raised.value)
    assert "\n" not in text and "ValueError: no such layer" in text


def test_compile_cannot_be_combined_with_train() -> None:
    model, x = _model("cnn")
    with pytest.raises(FxtuiError, match=r"--compile .* cannot be combined with --train"):
        fxtui.profile(model, x, runs=1, warmup=0, compile=True, train=True)


def test_the_comparison_and_the_split_read_as_the_readme_says() -> None:
    assert module_comparison("layer3", 4.1e-3, 1.9e-3) == "layer3: 4.10 ms eager → 1.90 ms compiled (×0.46)"
    assert module_comparison("maxpool", 11.1e-3, 0.0, ("",)) == "maxpool: 11.1 ms eager → fused into (root)"
    assert module_comparison("flat", 1e-6, 0.0) == "flat: 1.00 µs eager → no kernel"
    assert fused_text(("", "layer1.0")) == "fused into (root), layer1.0"
    assert fused_text(("", "layer1.0"), most=1) == "fused into (root) +1"
    assert common_ancestor(["layer1.0.bn1", "layer1.0.relu", "layer1.1.conv1"]) == "layer1"
    assert common_ancestor(["layer1.0", "layer2.0"]) == ""
    split = even_split(("a.bn", "a.relu", "a.bn"), 3.0)
    assert split == {"a.bn": 2.0, "a.relu": 1.0} and math.isclose(sum(split.values()), 3.0)
    assert CompiledSummary.from_dict(CompiledSummary(kernels=3, eager_modules={"a": 1.0}).to_dict()).kernels == 3


def test_the_module_tree_holds_modules_without_nodes_and_the_kernels_that_fuse_them() -> None:
    from fxtui.core.nodes import NodeInfo, build_module_tree

    def kernel(name: str, index: int, path: str, fused: tuple[str, ...]) -> NodeInfo:
        return NodeInfo(name, index, "call_function", name, "fused", path, name, fused_modules=fused)

    nodes = [
        kernel("conv", 0, "conv1", ("conv1",)),
        kernel("bn+relu+pool", 1, "", ("bn1", "relu", "maxpool", "layer1.0.conv1")),
        kernel("layer1.0 · bn+add", 2, "layer1.0", ("layer1.0.bn1", "layer1.0")),
    ]
    tree = build_module_tree(nodes, {}, extra=["bn1", "relu", "maxpool", "layer1.0.bn1", "flatten"])
    assert tree["maxpool"].nodes == () and tree["maxpool"].fused == ("bn+relu+pool",)
    assert tree[""].children == ("conv1", "layer1", "bn1", "relu", "maxpool", "flatten")
    # A kernel charged to the root that computes a node deep in layer1 holds some of layer1's and layer1.0's work.
    assert tree["layer1"].fused == tree["layer1.0"].fused == ("bn+relu+pool",)
    assert tree["layer1.0.bn1"].fused == ("layer1.0 · bn+add",)
    assert tree["flatten"].fused == () and tree["conv1"].fused == ()  # a kernel of its own is not "fused into"


def test_the_chrome_trace_nests_each_kernel_in_its_module_spans() -> None:
    from fxtui.report.chrome_trace import chrome_trace

    report = _profiled("cnn")
    events = [e for e in chrome_trace(report)["traceEvents"] if e.get("ph") == "X"]
    modules = [e for e in events if e["cat"] == "module"]
    kernels = [e for e in events if "fused_nodes" in e["args"]]
    assert len(kernels) == len(report.rows)
    for k in kernels:
        path = k["args"]["module"]
        if not path:
            continue
        holding = [m for m in modules if m["args"]["path"] == path]
        assert any(m["ts"] <= k["ts"] and k["ts"] + k["dur"] <= m["ts"] + m["dur"] + 1e-3 for m in holding), k["name"]


def test_diff_compares_an_eager_run_and_a_compiled_run_per_module() -> None:
    from fxtui.report.diff import diff_reports
    from fxtui.report.findings_text import diff_table

    model, x = _model("cnn")
    eager = fxtui.profile(model, x, runs=5, warmup=1, capture="eager", keep_disturbed=True)
    compiled = _profiled("cnn")
    diff = diff_reports(eager, compiled)
    changed = {c.name: c for c in diff.modules}
    assert {"", "stem", "block1", "block2", "fc"} <= set(changed)
    block1 = next(m for m in compiled.modules if m.path == "block1")
    assert changed["block1"].after_s == block1.inclusive_s
    text = diff_table(diff)
    assert "block1" in text and "kernels and the other run's nodes share no name" in text
    assert "only in before" not in text


def test_headless_compile_without_a_compiler_exits_2_with_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch._inductor.config as config

    from fxtui.commands.cli import main

    (tmp_path / "tiny.py").write_text(
        "import torch\n\ndef make():\n    return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())\n"
    )
    with config.patch({"cpp.cxx": ("fxtui-no-such-compiler++",)}):
        status = main([f"{tmp_path / 'tiny.py'}:make", "--input-shape", "2,4", "--compile", "--once"])
    err = capsys.readouterr().err.strip()
    assert status == 2
    assert err.startswith("fxtui: --compile needs a C++ compiler") and len(err.splitlines()) == 1, err


def test_a_recompile_after_the_capture_is_counted_with_its_reason() -> None:
    from fxtui.measure.capture.compiled import capture_compiled
    from fxtui.measure.inputs import Inputs

    # Every nn.Sequential shares one forward: models compiled by earlier tests would add their own cache
    # entries' guard failures to this recompile's reasons.
    torch._dynamo.reset()
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval()
    captured = capture_compiled(model, Inputs((torch.randn(2, 4),)), name="mlp")
    assert captured.late_graphs == 0
    with captured.running():
        captured.run(Inputs((torch.randn(3, 4),)))  # another batch size: TorchDynamo's guard fails, it compiles anew
    assert captured.late_graphs == 1
    reasons = captured.notes.summary().recompiles  # type: ignore[union-attr]
    assert len(reasons) == 1 and "size" in reasons[0], reasons
