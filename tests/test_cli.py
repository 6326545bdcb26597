"""The command line: every bad input ends in one sentence and exit status 2; resnet18 end to end."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fxtui.commands.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_sentence(err: str, *fragments: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("fxtui: ")
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "models.py"
    path.write_text(
        textwrap.dedent(
            """
            import torch
            from torch import nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 4)

                def forward(self, x):
                    return torch.relu(self.fc(x))

            class Branchy(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 4)

                def forward(self, x):
                    if x.sum() > 0:
                        return self.fc(x)
                    return self.fc(-x)

            def make():
                return Net(), (torch.randn(2, 8),)

            def broken():
                raise ValueError("no such checkpoint")

            def branchy():
                return Branchy(), torch.randn(2, 8)
            """
        )
    )
    return path


def test_a_file_factory_profiles_and_prints_a_table(capsys: pytest.CaptureFixture[str], model_file: Path) -> None:
    code, out, err = run_cli(capsys, f"{model_file}:make", "--once", "--runs", "3", "--warmup", "1")
    assert code == 0, err
    assert "fidelity" in out and "overhead" in out and "unattributed" in out
    assert "fc" in out and "Linear" in out


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["resnet19"], ["resnet19", "resnet18"]),
        (["a:b:c"], ["a:b:c"]),
        (["missing_file.py:make"], ["missing_file.py"]),
        (["{file}:nothing_here"], ["nothing_here"]),
        (["{file}:broken"], ["broken", "no such checkpoint"]),
        (["{file}:make", "--input-shape", "2,9"], ["fc"]),
        (["{file}:branchy", "--capture", "fx"], ["--submodule"]),
        (["{file}:make", "--threads", "0"], ["--threads"]),
        (["{file}:make", "--json", "/nonexistent-dir/x.json"], ["/nonexistent-dir"]),
        (["{file}:make", "--sort", "speed"], ["speed"]),
        (["{file}:make", "--op", "call_modul"], ["call_modul"]),
        (["{file}:make", "--input-shape", "2,x"], ["2,x"]),
        (["{file}:make", "--runs", "0"], ["--runs"]),
        (["{file}:make", "--dtype", "float13"], ["float13"]),
        (["{file}:make", "--compile-mode", "max-autotune-no-cudagraphs"], ["add --compile"]),
        (["{file}:make", "--compile", "--train"], ["--compile", "--train"]),
        (["{file}:make", "--compile", "--capture", "fx"], ["--capture fx"]),
    ],
)
def test_bad_input_is_one_sentence_and_exit_2(
    capsys: pytest.CaptureFixture[str], model_file: Path, args: list[str], fragments: list[str]
) -> None:
    argv = [a.replace("{file}", str(model_file)) for a in args] + ["--once", "--runs", "1", "--warmup", "0"]
    code, _, err = run_cli(capsys, *argv)
    assert code == 2
    assert_one_sentence(err, *fragments)


def test_debug_shows_the_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "resnet19", "--once", "--debug")
    assert code == 2 and "Traceback" in err


def test_resnet18_end_to_end_with_every_export(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    paths = {k: tmp_path / f"run.{k}" for k in ("json", "csv", "trace")}
    code, out, err = run_cli(
        capsys,
        "resnet18",
        "--once",
        "--runs",
        "3",
        "--warmup",
        "1",
        "--input-shape",
        "1,3,64,64",
        "--json",
        str(paths["json"]),
        "--csv",
        str(paths["csv"]),
        "--chrome-trace",
        str(paths["trace"]),
        "--path",
        "layer1*",
        "--top",
        "5",
    )
    assert code == 0, err
    table = out.split("\n\n", 1)[1]
    assert "layer1" in table and "layer2" not in table
    data = json.loads(paths["json"].read_text())
    assert data["metadata"]["model"] == "resnet18" and len(data["rows"]) == 71
    assert paths["csv"].read_text().count("\n") == 72
    trace = json.loads(paths["trace"].read_text())
    names = {e["name"] for e in trace["traceEvents"]}
    assert {"layer1_0_conv1", "layer1", "conv1"} <= names


def test_the_installed_command_exits_2_without_a_traceback() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "fxtui", "no_such_model", "--once"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2
    assert_one_sentence(proc.stderr, "no_such_model")
