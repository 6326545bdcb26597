"""fxtui run on scripts that compile their own model: Inductor's kernels timed on sampled steps and charged to the
user's modules, the program's compiled graphs left as they were."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.test_run import fxtui_run, script

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

#: A small residual CNN compiled with torch.compile; the script prints TorchDynamo's counters at the end.
COMPILED = """
import os, sys
import torch, torch.nn as nn, torch.nn.functional as F

class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c)
    def forward(self, x):
        return F.relu(self.bn(self.conv(x))) + x

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.block1 = Block(8)
        self.block2 = Block(8)
        self.fc = nn.Linear(8, 10)
    def forward(self, x):
        return self.fc(self.block2(self.block1(self.stem(x))).mean((2, 3)))

torch.manual_seed(0)
model = Net()
if sys.argv[3] == "in-place":
    model.compile()  # the module's own calls compiled: no wrapper
    compiled = model
elif sys.argv[3] == "forward":
    model.forward = torch.compile(model.forward)  # transformers' models are often compiled this way
    compiled = model
else:
    compiled = torch.compile(model)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))
for _ in range(int(sys.argv[1])):
    if sys.argv[2] == "train":
        opt.zero_grad()
        F.cross_entropy(compiled(x), y).backward()
        opt.step()
    else:
        with torch.no_grad():
            compiled(x)
from torch._dynamo.utils import counters
print("graphs", counters["stats"]["unique_graphs"], "recompiles", sum(counters["recompiles"].values()))
"""


def _clean(stderr: str) -> str:
    """The program's stderr less torch's own notice that this machine has no CUDA."""
    return "\n".join(line for line in stderr.splitlines() if "No CUDA runtime is found" not in line)


Run = tuple[subprocess.CompletedProcess[str], dict]


@pytest.fixture(scope="module")
def compiled_run(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], tuple[Path, Run]]:
    """``compiled_run(kind, how)``: the script's directory and its run under ``fxtui run``, made once per file (a
    compile is most of a run's time; the test of a second run reads the first one's directory)."""
    made: dict[tuple[str, str], tuple[Path, Run]] = {}

    def get(kind: str, how: str) -> tuple[Path, Run]:
        if (kind, how) not in made:
            directory = tmp_path_factory.mktemp(f"compiled-{kind}-{how}")
            script(directory, COMPILED, "compiled.py")
            made[kind, how] = directory, fxtui_run(directory, "compiled.py", "14", kind, how, json_out=True)
        return made[kind, how]

    return get


@pytest.mark.parametrize(
    ("kind", "how"), [("train", "wrapped"), ("infer", "wrapped"), ("train", "in-place"), ("infer", "forward")]
)
def test_a_compiled_model_is_timed_kernel_by_kernel_and_charged_to_its_modules(
    compiled_run: Callable[[str, str], tuple[Path, Run]], kind: str, how: str
) -> None:
    _, (done, saved) = compiled_run(kind, how)
    assert done.returncode == 0, done.stderr
    assert _clean(done.stderr) == ""  # no warning about fxtui's hooks, nothing of TorchDynamo's about them
    assert "graphs 1 recompiles 0" in done.stdout  # the program's compiled graph is the one it would have alone
    assert "compiled   the program's compiled code:" in done.stdout
    steps = saved["metadata"]["steps"]
    assert steps["sampled"] >= 3
    rows = {r["name"]: r for r in saved["rows"]}
    conv = rows["block1.conv · convolution"]
    assert conv["kernel"] == "extern_kernels.convolution" and conv["phase"] == "forward"
    assert conv["module_path"] == "block1.conv" and conv["fused_nodes"] == ["block1.conv · conv2d"]
    fused = [r for r in saved["rows"] if (r["kernel"] or "").startswith("cpp_fused") and r["phase"] == "forward"]
    assert fused and all(r["fused_nodes"] for r in fused)
    # A kernel fusing a block's batch norm, relu and add is charged to the block, with each source's module.
    block = [r for r in fused if r["module_path"] == "block2" and len(set(r["fused_modules"])) > 1]
    assert block and {"block2", "block2.bn"} <= set(block[0]["fused_modules"])
    assert rows["<compiled>"]["phase"] == "forward" and rows["<compiled>"]["median_s"] > 0
    # The compiled graph's work is its kernels': never also counted as eager ops.
    assert not [r for r in saved["rows"] if r["target"] in ("aten.convolution", "aten.convolution_backward")]
    modules = {m["path"]: m for m in saved["modules"]}
    assert modules["block1.conv"]["forward_s"] > 0
    if kind == "train":
        backward = rows["block1.conv · ∇convolution_backward"]
        assert backward["phase"] == "backward" and backward["kernel"].endswith("convolution_backward.default")
        assert rows["∇<compiled>"]["phase"] == "backward"
        assert modules["block1.conv"]["backward_s"] > 0
        assert any(r["phase"] == "optimizer" for r in saved["rows"])  # the eager optimizer, op by op as before


def test_the_kernels_are_learnt_in_every_run(compiled_run: Callable[[str, str], tuple[Path, Run]]) -> None:
    """A second run finds Inductor's caches warm: its graphs still come with their kernels' origins. (The first run
    is the inference test's, in the same directory.)"""
    directory, first = compiled_run("infer", "wrapped")
    for done, saved in (first, fxtui_run(directory, "compiled.py", "14", "infer", "wrapped", json_out=True)):
        assert done.returncode == 0, done.stderr
        assert any(r["module_path"] == "block1.conv" and r["kernel"] for r in saved["rows"])


#: A Llama of one layer (a second layer doubled the compile and showed nothing the first does not) compiled as
#: transformers' models often are; each generate() call is a prefill and five decode steps.
GENERATE = """
import sys, torch
from transformers import LlamaConfig, LlamaForCausalLM
torch.manual_seed(0)
config = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=4,
                     num_key_value_heads=2, max_position_embeddings=128)
model = LlamaForCausalLM(config).eval()
model.forward = torch.compile(model.forward)
for _ in range(int(sys.argv[1])):
    model.generate(torch.randint(0, 256, (1, 12)), max_new_tokens=6, do_sample=False, pad_token_id=0)
"""


def test_a_compiled_generate_splits_its_kernels_into_prefill_and_decode(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    script(tmp_path, GENERATE, "generate.py")
    done, saved = fxtui_run(tmp_path, "generate.py", "9", json_out=True)
    assert done.returncode == 0, done.stderr
    rows = saved["rows"]
    q_proj = [r for r in rows if r["module_path"] == "model.layers.0.self_attn.q_proj" and r["kernel"]]
    assert {r["phase"] for r in q_proj} == {"prefill", "decode"}  # the same kernel, in each step of the call
    assert {r["phase"] for r in rows if r["name"].startswith("<compiled>")} == {"prefill", "decode"}
    assert not [r for r in rows if r["kernel"] and r["phase"] == "forward"]  # every one in a generate() call


def test_a_hook_run_eagerly_runs_at_every_call_of_a_compiled_module_and_stays_out_of_its_graph() -> None:
    import warnings

    import torch
    from torch._dynamo.utils import counters
    from torch.nn.modules.module import register_module_forward_pre_hook

    from fxtui.ops.dynamo_skip import run_eagerly

    class Net(torch.nn.Module):  # a user's module (torch.nn's own are traced call and hooks alike)
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(x).relu()

    seen: list[str] = []

    def hook(module: torch.nn.Module, args: object) -> None:
        if torch.compiler.is_compiling():
            return
        seen.append(type(module).__name__)

    torch._dynamo.reset()
    counters.clear()
    run_eagerly(hook)
    handle = register_module_forward_pre_hook(hook)
    try:
        model = torch.compile(Net())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's note that global hooks also fire for the wrapper
            for _ in range(3):
                model(torch.randn(2, 4))
    finally:
        handle.remove()
        graphs = counters["stats"]["unique_graphs"]
        torch._dynamo.reset()
    # The module's own call, every time, as plain Python (unmarked, TorchDynamo compiles the hook's frame to nothing).
    assert seen.count("Net") == 3
    assert "Linear" not in seen  # inside the compiled forward: traced, and left out of the graph
    assert graphs == 1


def test_the_agent_leaves_the_programs_warning_filters_and_module_hooks_alone() -> None:
    """The agent adds no global module hook (torch.compile would warn of it), so it touches no warning filter."""
    import warnings

    from torch.nn.modules import module

    from fxtui.agent.agent import Agent

    before = list(warnings.filters)
    agent = Agent(lambda message: None)
    agent.install()
    assert warnings.filters == before and not module._has_any_global_hook()
    agent.uninstall()
    assert warnings.filters == before


def test_a_compiled_graph_fxtui_cannot_time_is_said_once_as_the_programs_warning() -> None:
    """A torch whose generated wrapper fxtui cannot read: its kernels stay in <compiled>, and the header says why."""
    from fxtui.core.snapshot import State
    from fxtui.jobs.collector import Collector
    from fxtui.ops.kernels import CompiledKernels
    from fxtui.wire.agent_messages import Bye, Hello, Step

    kernels = CompiledKernels()
    assert kernels.unsaid() == ""
    kernels.failed = "a compiled graph's kernels are not timed: no call function in Inductor's wrapper"
    note = kernels.unsaid()
    assert note == kernels.failed and kernels.unsaid() == ""  # said once
    collector = Collector(("train.py",), warmup=0)
    collector.receive(Hello(1, ("train.py",), "2", 2))
    collector.receive(Step(0, "train", 1000, (0, 500, 500, 0, 0, 0), False, False, note=note))
    collector.receive(Bye(1))
    program = collector.snapshot(State.DONE).program
    assert program is not None and program.note == note
