"""fxtui run on small scripts written here: steps and phases found, the program's own output, errors and status."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

#: A training loop: a DataLoader, AdamW with weight decay, gradient clipping, a scheduler, loss.item().
TRAIN = """
import sys
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8, 10)
    def forward(self, x):
        return self.fc(F.relu(self.conv(x)).mean((2, 3)))

torch.manual_seed(0)
steps = int(sys.argv[1])
data = DataLoader(TensorDataset(torch.randn(steps * 4, 3, 16, 16), torch.randint(0, 10, (steps * 4,))), batch_size=4)
model = Net()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
for i, (x, y) in enumerate(data):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    loss.item()
    STOP
print("argv", sys.argv[1:], "name", __name__)
"""


def script(tmp_path: Path, body: str, name: str = "train.py", stop: str = "") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body).replace("STOP", stop or "pass"))
    return path


def fxtui_run(tmp_path: Path, *args: str, json_out: bool = False) -> tuple[subprocess.CompletedProcess[str], dict]:
    command = [sys.executable, "-m", "fxtui", "run", "--once", "--warmup-steps", "2", "--sample-every", "2"]
    out = tmp_path / "run.json"
    if json_out:
        command += ["--json", str(out)]
    done = subprocess.run([*command, *args], cwd=tmp_path, capture_output=True, text=True, timeout=240)
    return done, json.loads(out.read_text()) if json_out and out.exists() else {}


Run = tuple[subprocess.CompletedProcess[str], dict]


@pytest.fixture(scope="module")
def training_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The training loop run as a module (``-m pkg.train 12 --extra``), once for the tests that read it: its phases
    and nodes, and how a module runs (the scripts of the other tests run by path)."""
    directory = tmp_path_factory.mktemp("training")
    package = directory / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    script(package, TRAIN, "train.py")
    return fxtui_run(directory, "-m", "pkg.train", "12", "--extra", json_out=True)


def test_a_training_loop_is_split_into_phases_and_timed_per_node(training_run: Run) -> None:
    done, saved = training_run
    assert done.returncode == 0, done.stderr
    assert "argv ['12', '--extra'] name __main__" in done.stdout  # its arguments, its __main__, its stdout
    assert done.stderr == ""  # nothing of fxtui's on the program's stderr (runpy once warned there)
    assert (
        "10 training steps after 2 warm-up" in done.stdout
        and "each holds 1 forward, 1 backward, AdamW.step()" in done.stdout
    )
    meta = saved["metadata"]
    assert meta["mode"] == "run" and meta["capture"] == "eager"
    assert meta["optimizer"] == "AdamW" and meta["loss"] == "cross-entropy"  # the class its steps call; its (loss)
    steps = meta["steps"]
    assert steps["kind"] == "train" and steps["steps"] == 10 and steps["warmup"] == 2
    assert steps["sampled"] >= 3
    assert steps["phase_median_s"]["data"] > 0 and steps["phase_median_s"]["backward"] > 0
    assert len(steps["recent"]) == 10 and {"data", "forward", "backward", "optimizer", "other", "sampled"} <= set(
        steps["recent"][0]
    )
    rows = {r["name"]: r for r in saved["rows"]}
    assert rows["conv · convolution"]["phase"] == "forward" and rows["conv · convolution"]["module_path"] == "conv"
    assert rows["conv · ∇convolution_backward"]["phase"] == "backward"
    assert rows["conv · ∇convolution_backward"]["module_path"] == "conv"  # backward charged to its forward module
    assert any(r["phase"] == "optimizer" and r["module_path"] == "AdamW" for r in saved["rows"])
    assert any(r["phase"] == "optimizer" and r["module_path"] == "clip_grad_norm_" for r in saved["rows"])
    assert any(r["phase"] == "data" and r["module_path"] == "DataLoader" for r in saved["rows"])
    modules = {m["path"]: m for m in saved["modules"]}
    assert modules["conv"]["forward_s"] > 0 and modules["conv"]["backward_s"] > 0


def test_an_inference_loop_counts_model_calls(tmp_path: Path) -> None:
    script(
        tmp_path,
        """
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).eval()
        with torch.inference_mode():
            for _ in range(12):
                model(torch.randn(8, 16))
        """,
        "infer.py",
    )
    done, saved = fxtui_run(tmp_path, "infer.py", json_out=True)
    assert done.returncode == 0, done.stderr
    steps = saved["metadata"]["steps"]
    assert steps["kind"] == "eval" and steps["steps"] == 10  # 12 calls: 2 warm-up; the last ends at its return
    names = {r["name"] for r in saved["rows"]}
    assert {"0 · linear", "1 · relu", "2 · linear", "(script) · randn"} <= names  # the script's own op, named


def test_two_models_are_two_roots_of_the_tree(tmp_path: Path) -> None:
    script(
        tmp_path,
        """
        import torch, torch.nn as nn
        gen, disc = nn.Sequential(nn.Linear(4, 8), nn.Tanh()), nn.Sequential(nn.Linear(8, 1))
        opt_g = torch.optim.SGD(gen.parameters(), lr=0.01)
        opt_d = torch.optim.SGD(disc.parameters(), lr=0.01)
        for _ in range(12):
            opt_d.zero_grad(); disc(gen(torch.randn(16, 4)).detach()).mean().backward(); opt_d.step()
            opt_g.zero_grad(); (-disc(gen(torch.randn(16, 4)))).mean().backward(); opt_g.step()
        """,
        "gan.py",
    )
    done, saved = fxtui_run(tmp_path, "gan.py", json_out=True)
    assert done.returncode == 0, done.stderr
    paths = {m["path"] for m in saved["modules"]}
    assert {"Sequential.0", "Sequential_2.0"} <= paths  # each model under its class, in the order first called
    assert saved["metadata"]["steps"]["kind"] == "train"


def test_a_loss_made_afresh_every_step_is_the_models_loss(tmp_path: Path) -> None:
    """``nn.CrossEntropyLoss()(out, y)`` in the loop: the model's (loss), and every sampled step usable."""
    script(
        tmp_path,
        """
        import torch, torch.nn as nn
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for _ in range(30):
            opt.zero_grad()
            nn.CrossEntropyLoss()(model(torch.randn(8, 16)), torch.randint(0, 4, (8,))).backward()
            opt.step()
        """,
        "inline.py",
    )
    done, saved = fxtui_run(tmp_path, "inline.py", json_out=True)
    assert done.returncode == 0, done.stderr
    paths = [m["path"] for m in saved["modules"]]
    assert "(loss)" in paths and not [p for p in paths if p.startswith("CrossEntropyLoss")]  # the model's loss
    steps = saved["metadata"]["steps"]
    assert steps["steps"] == 28 and steps["sampled"] >= 12  # one in 2 after the warm-up, none left out as new
    rows = [r for r in saved["rows"] if r["module_path"] == "(loss)"]
    # computed between the forward and its backward, the loss is the forward's (the namer's rule); and its gradient
    assert {r["phase"] for r in rows} == {"forward", "backward"}
    assert any(r["name"] == "(loss) · _log_softmax" for r in rows)


def test_page_faults_are_counted_and_keeping_freed_memory_removes_them(tmp_path: Path) -> None:
    """A program that makes a large block afresh every step pays a fault per 4 KiB of it; --keep-freed-memory has
    glibc keep it instead."""
    script(
        tmp_path,
        """
        import torch
        model = torch.nn.Linear(64, 64)
        for _ in range(16):
            x = torch.empty(16 * 1024 * 1024).fill_(1.0)  # 64 MiB, above glibc's largest mmap threshold: mapped afresh
            model(torch.randn(4, 64))
            del x
        """,
        "faults.py",
    )
    done, saved = fxtui_run(tmp_path, "faults.py", json_out=True)
    assert done.returncode == 0, done.stderr
    assert saved["metadata"]["steps"]["faults_median"] >= 64 * 1024 * 1024 // 4096  # every page of it
    assert "faults     " in done.stdout and "--keep-freed-memory" in done.stdout
    (tmp_path / "run.json").unlink()
    kept, saved = fxtui_run(tmp_path, "--keep-freed-memory", "faults.py", json_out=True)
    assert kept.returncode == 0, kept.stderr
    assert saved["metadata"]["steps"]["faults_median"] < 100
    assert "faults     " not in kept.stdout


def test_a_script_that_raises_keeps_its_traceback_its_status_and_the_profile(tmp_path: Path) -> None:
    script(tmp_path, TRAIN, stop="if i == 8: raise ValueError('boom in the loop')")
    done, saved = fxtui_run(tmp_path, "train.py", "20", json_out=True)
    assert done.returncode == 1
    assert "ValueError: boom in the loop" in done.stderr
    assert 'train.py", line' in done.stderr and "fxtui" not in done.stderr.split("Traceback")[1]
    assert "exited 1" in done.stdout and saved["metadata"]["steps"]["steps"] >= 5


def test_sys_exit_keeps_its_status(tmp_path: Path) -> None:
    script(tmp_path, TRAIN, stop="if i == 6: sys.exit(3)")
    done, _ = fxtui_run(tmp_path, "train.py", "20")
    assert done.returncode == 3, done.stderr
    assert "exited 3" in done.stdout


def test_a_script_without_a_module_says_so(tmp_path: Path) -> None:
    script(tmp_path, "import torch\nprint(torch.ones(3).sum().item())\n", "plain.py")
    done, _ = fxtui_run(tmp_path, "plain.py")
    assert done.returncode == 0, done.stderr
    assert "3.0" in done.stdout and "no module was called" in done.stdout


def test_a_module_runs_with_dash_m(training_run: Run) -> None:
    done, saved = training_run
    assert done.returncode == 0, done.stderr
    assert "argv ['12', '--extra'] name __main__" in done.stdout  # the arguments after the module are its own
    assert saved["metadata"]["program"]["command"] == ["-m", "pkg.train", "12", "--extra"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.py"], "no such script: missing.py"),
        (["-m", "no_such_module_here"], "no module named 'no_such_module_here'"),
        (["notes.txt"], "notes.txt is not a Python script"),
        ([], "fxtui run needs a script"),
    ],
)
def test_a_program_that_cannot_run_is_one_sentence(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "notes.txt").write_text("this is { not python\n")
    done = subprocess.run(
        [sys.executable, "-m", "fxtui", "run", "--once", *args], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_options_after_the_script_are_the_scripts(tmp_path: Path) -> None:
    from fxtui.commands.parser import command_parser
    from fxtui.commands.parser import split_program as split

    parser = command_parser("run")
    assert split(["--top", "5", "train.py", "--top", "9"], parser) == (["--top", "5"], ["train.py", "--top", "9"])
    assert split(["--once", "-m", "pkg.mod", "-x"], parser) == (["--once"], ["-m", "pkg.mod", "-x"])
    assert split(["--json=a.json", "--", "-weird.py"], parser) == (["--json=a.json"], ["-weird.py"])


def test_the_agent_stays_out_of_a_program_run_without_a_collector(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        "import sys, torch\n"
        "print('fxtui.agent.agent' in sys.modules, [type(f).__name__ for f in sys.meta_path if 'Torch' in "
        "type(f).__name__])\n",
        "probe.py",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXTUI_AGENT")}
    done = subprocess.run(
        [sys.executable, "-m", "fxtui.agent.boot", str(path)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0 and done.stdout.strip() == "False []"  # no agent, no import hook left waiting
