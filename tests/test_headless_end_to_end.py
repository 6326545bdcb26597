"""The headless command as a user meets it: signals before and during the runs, the header of a model TorchDynamo
splits, and ``fxtui diff`` of two real exports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import slow_model_source

from fxtui.commands.cli import main

pytestmark = pytest.mark.e2e

#: ``make``: sleeps 10 ms a call, ``started`` at call 20 (well into the profiled runs), then 1 s a call (time for a
#: second signal inside a run); ``loads_slowly``, ``branchy`` (split by TorchDynamo) and ``small`` besides.
MODELS = slow_model_source(started_at=20, sleep_s=0.01, then_sleep_s=1.0) + textwrap.dedent(
    """


    def loads_slowly():
        Path(__file__).with_name("loading").touch()
        time.sleep(3)  # the signal arrives now, before any run
        return Slow(), torch.randn(2, 4)


    class Branchy(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Linear(8, 8)
            self.head = nn.Linear(8, 4)

        def forward(self, x):
            y = self.stem(x)
            if y.sum().item() > -1e9:  # the data decides: TorchDynamo splits the model here
                y = y * 2
            return self.head(y)


    def branchy():
        return Branchy(), torch.randn(2, 8)


    def small():
        return nn.Sequential(nn.Linear(8, 8), nn.ReLU()), torch.randn(2, 8)
    """
)


@pytest.fixture
def models(tmp_path: Path) -> Path:
    (tmp_path / "models.py").write_text(MODELS)
    return tmp_path


def fxtui(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "fxtui", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def wait_for_file(path: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)


def test_a_second_ctrl_c_stops_at_once_and_leaves_no_partial_export(models: Path) -> None:
    proc = fxtui("models.py:make", "--runs", "100000", "--warmup", "0", "--json", "out.json", cwd=models)
    wait_for_file(models / "started", proc)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and err.strip().splitlines()[-1] == "fxtui: interrupted"
    assert "Traceback" not in err
    assert {p.name for p in models.iterdir()} - {"__pycache__"} == {"models.py", "started"}  # no file, no temporary


def test_sigterm_before_the_first_run_exits_128_plus_15_with_one_sentence(models: Path) -> None:
    proc = fxtui("models.py:loads_slowly", "--runs", "5", "--warmup", "0", "--json", "out.json", cwd=models)
    wait_for_file(models / "loading", proc)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM
    assert err.strip() == "fxtui: stopped by SIGTERM before the first profiled run; nothing to report"
    assert out == "" and not (models / "out.json").exists()


def test_the_header_of_a_model_torchdynamo_splits_names_its_graphs_and_the_break(
    models: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([f"{models / 'models.py'}:branchy", "--once", "--runs", "3", "--warmup", "1"])
    out = capsys.readouterr().out
    assert code == 0
    header = out.split("\n\n", 1)[0].splitlines()
    capture = next(line for line in header if line.startswith("capture"))
    assert capture.startswith("capture    dynamo: TorchDynamo, 2 graphs, 1 graph break (switched from symbolic_trace")
    first_break = next(line for line in header if line.startswith("break 1"))
    assert "item()" in first_break and "models.py" in first_break and "if y.sum().item() > -1e9" in first_break
    assert any(line.startswith("eager      the model run uncaptured:") for line in header)
    # What the remainder is made of depends on the machine's noise; that it is stated does not.
    assert any(line.startswith("unattributed") for line in header)


def test_fxtui_diff_compares_two_real_exports(
    models: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(models)
    for name, threads in (("one.json", "1"), ("two.json", "2")):
        args = ["models.py:small", "--once", "--runs", "3", "--warmup", "1", "--threads", threads, "--json", name]
        assert main(args) == 0
    capsys.readouterr()
    assert main(["diff", "one.json", "two.json"]) == 0
    out = capsys.readouterr().out
    before, after = (json.loads((models / n).read_text()) for n in ("one.json", "two.json"))
    names = {r["name"] for r in before["rows"]}
    assert names == {r["name"] for r in after["rows"]} and {"_0", "_1"} <= names
    assert "settings   differ: threads 1 → 2" in out
    lines = out.splitlines()
    assert any(line.startswith("_0") for line in lines) and any(line.startswith("_1") for line in lines)
    assert "only in" not in out  # the same graph: every node in both
    assert os.path.getsize(models / "one.json") > 0


#: Sleeps 20 ms a call; ``started`` at call 30, past the 10 profiled runs (about 23 calls): the what-if's pairs.
WHAT_IF_MODEL = slow_model_source(started_at=30, sleep_s=0.02)


def test_a_signal_during_the_what_ifs_is_said_in_the_header(tmp_path: Path) -> None:
    (tmp_path / "slow.py").write_text(WHAT_IF_MODEL)
    args = ("slow.py:make", "--once", "--runs", "10", "--warmup", "1", "--keep-disturbed", "--what-if", "threads=1")
    proc = fxtui(*args, cwd=tmp_path)
    wait_for_file(tmp_path / "started", proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    header = out.split("\n\n", 1)[0]
    assert "warning    interrupted by SIGINT after all 10 runs; not measured: what-if threads=1" in header
    assert "what-if    threads=1" not in out  # no half-measured what-if is printed
