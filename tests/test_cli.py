"""The command line: every bad input ends in one sentence and exit status 2; resnet18 end to end."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import run_cli

pytestmark = pytest.mark.e2e


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


# -- the front door: every command, its help, its mistakes ------------------------------------------------------

COMMAND_LINES = ("fxtui MODEL", "fxtui run SCRIPT", "fxtui attach [JOB]", "fxtui diff A B", "fxtui models")


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["help"], []], ids=["--help", "-h", "help", "nothing"])
def test_the_overview_lists_every_command_with_an_example(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    code, out, err = run_cli(capsys, *args)
    assert code == 0 and err == ""
    lines = out.splitlines()
    for command in COMMAND_LINES:
        (line,) = [i for i, text in enumerate(lines) if text.startswith(f"  {command} ")]
        assert lines[line + 1].strip().startswith("fxtui ")  # its example, on the next line
    for example in ("fxtui resnet18 --once", "fxtui run train.py", "fxtui diff before.json after.json"):
        assert example in out
    assert "fxtui help [COMMAND]" in out and "-V, --version" in out
    assert max(len(line) for line in lines) <= 80


@pytest.mark.parametrize("args", [["-V"], ["--version"], ["version"], ["--once", "-V", "resnet18"]])
def test_the_version_is_fxtuis_and_torchs(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    import fxtui

    code, out, _ = run_cli(capsys, *args)
    assert code == 0 and out.startswith(f"fxtui {fxtui.__version__} (torch {torch_version()}")


def torch_version() -> str:
    from importlib import metadata

    return metadata.version("torch")


@pytest.mark.parametrize("command", ["model", "run", "attach", "diff", "models"])
def test_help_command_is_the_commands_own_help(capsys: pytest.CaptureFixture[str], command: str) -> None:
    code, by_help, _ = run_cli(capsys, "help", command)
    assert code == 0
    code, by_option, _ = run_cli(capsys, command, "--help")
    assert code == 0 and by_help == by_option
    assert by_help.startswith("usage: fxtui") and "examples:" in by_help


def test_the_model_help_says_what_a_model_is_and_what_explains_it(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_cli(capsys, "resnet18", "--help")
    assert out.startswith("usage: fxtui MODEL [OPTIONS]")
    for looked_for in ("fxtui models", "hf:MODEL_TYPE", "--once", "--hints", "--what-if", "--train", "--generate"):
        assert looked_for in out
    assert "only these FX op types" in out and "with --train or --generate: only these phases" in out


@pytest.mark.parametrize("command", ["run", "attach"])
def test_a_programs_help_offers_only_what_applies_to_a_program(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    _, out, _ = run_cli(capsys, command, "--help")
    assert "--op " not in out and "call_module" not in out  # every row of a program is an ATen call
    assert "--memory" not in out and "measured in one run before timing" not in out
    assert "with --train" not in out and "--phase PHASES" in out
    assert "extra columns: mean, min, max, iqr, source" in out and "flops" not in out


def test_the_run_help_says_where_the_programs_arguments_start(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_cli(capsys, "run", "--help")
    assert out.startswith("usage: fxtui run [OPTIONS] SCRIPT [ARGS…] | fxtui run [OPTIONS] -m MODULE [ARGS…]")
    assert "Everything after SCRIPT (or -m MODULE) is the program's own" in out
    assert "--detach" in out and "--warmup-steps" in out and "--kind" in out


def test_options_may_come_before_or_after_the_command_word() -> None:
    from fxtui.commands.parser import parse

    run = parse(["--once", "--top", "3", "run", "train.py", "--top", "9"])
    assert run.command == "run" and run.args.once and run.args.top == 3
    assert run.args.program == ["train.py", "--top", "9"]  # after the script: the program's own
    model = parse(["--runs", "5", "--aten", "2", "resnet18", "--once"])
    assert model.command == "model" and model.args.target == "resnet18"
    assert (model.args.runs, model.args.aten, model.args.once) == (5, 2, True)
    diff = parse(["--top", "4", "diff", "a.json", "b.json"])
    assert diff.command == "diff" and diff.args.top == 4 and (diff.args.before, diff.args.after) == ("a.json", "b.json")
    assert parse(["model", "resnet18"]).args.target == "resnet18"  # the model command by its word too


@pytest.mark.parametrize(
    ("args", "fragments", "pointer"),
    [
        (["--once"], ["name a model to profile or a command"], "see fxtui --help"),
        (["help", "nope"], ["no command 'nope'"], "see fxtui --help"),
        (["resnet18", "--bogus"], ["unrecognized arguments: --bogus"], "see fxtui model --help"),
        (["resnet18", "--sort", "speed"], ["speed"], "see fxtui model --help"),
        (["resnet18", "--columns", "speed"], ["--columns"], "see fxtui model --help"),
        (["resnet18", "--phase", "backward"], ["add --train or --generate"], "see fxtui model --help"),
        (["resnet18", "--hf-config", "a=1"], ["hf: targets only"], "see fxtui model --help"),
        (["notamodel"], ["unknown model 'notamodel'"], "fxtui models lists them"),
        (["resnet19", "--once"], ["did you mean resnet18"], "fxtui models lists them"),
        (["diff"], ["BEFORE, AFTER"], "see fxtui diff --help"),
        (["diff", "a.json", "b.json", "--top", "x"], ["--top"], "see fxtui diff --help"),
        (["run", "--once"], ["fxtui run needs a script"], "see fxtui run --help"),
        (["run", "--op", "call_function", "train.py"], ["unrecognized arguments: --op"], "see fxtui run --help"),
        (["run", "--memory", "train.py"], ["unrecognized arguments: --memory"], "see fxtui run --help"),
        (["run", "--columns", "flops", "train.py"], ["no column 'flops'"], "see fxtui run --help"),
        (["run", "--phase", "backwrd", "train.py"], ["backwrd"], "see fxtui run --help"),
        (["--kind", "nope", "run", "train.py"], ["--kind"], "see fxtui run --help"),
        (["attach", "--top", "-1"], ["--top"], "see fxtui attach --help"),
        (["attach", "--columns", "gflops"], ["no column 'gflops'"], "see fxtui attach --help"),
        (["models", "a", "b"], ["unrecognized arguments: b"], "see fxtui models --help"),
    ],
)
def test_every_mistake_is_one_sentence_that_points_at_its_commands_help(
    capsys: pytest.CaptureFixture[str], args: list[str], fragments: list[str], pointer: str
) -> None:
    code, out, err = run_cli(capsys, *args)
    assert code == 2 and out == ""
    assert_one_sentence(err, *fragments)
    assert err.strip().endswith(f"({pointer})")


def test_a_mistyped_model_is_said_without_loading_torch() -> None:
    code = (
        "import sys\n"
        "from fxtui.commands.cli import main\n"
        "status = main(['resnet19', '--once'])\n"
        "main(['models', 'resnet'])\n"
        "print(status, sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'torchvision')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "2 []"
    assert "did you mean resnet18" in done.stderr
    assert "resnet18" in done.stdout  # fxtui models resnet listed them, without torch too


def test_the_model_list_is_torchvisions_registry() -> None:
    import torchvision.models as tvm

    from fxtui.commands.model_names import model_names

    names = model_names()
    assert {m.name for m in names} == set(tvm.list_models())
    kinds = {m.name: m.kind for m in names}
    assert kinds["resnet18"] == "classification" and kinds["fasterrcnn_resnet50_fpn"] == "detection"
    assert kinds["raft_small"] == "optical flow" and kinds["quantized_resnet18"] == "quantized"


def test_fxtui_models_lists_names_by_kind_and_filters_them(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "models")
    assert code == 0
    assert out.startswith("classification (") and "\ndetection (" in out and "resnet18" in out
    code, out, _ = run_cli(capsys, "models", "vit_b*")
    assert code == 0 and "vit_b_16" in out and "vit_l_16" not in out and "resnet18" not in out
    code, _, err = run_cli(capsys, "models", "zzz")
    assert code == 2 and "no model name matches 'zzz'" in err


def test_attach_without_a_running_job_is_one_sentence_on_stderr_and_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import time

    from fxtui.wire.job_directory import JobInfo, job_dir, write_info

    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    code, out, err = run_cli(capsys, "attach", "--once")
    assert code == 2 and out == ""
    assert_one_sentence(err, "no running job of this user's", "fxtui run --detach")
    # An ended job: the sentence first, then the latest ended jobs, all on stderr.
    directory = job_dir("ab12cd34")
    directory.mkdir(parents=True, mode=0o700)
    write_info(directory, JobInfo("ab12cd34", ("train.py",), str(tmp_path), 0, running=False, exit_code=0,
                                  started=time.time()))  # fmt: skip
    code, out, err = run_cli(capsys, "attach")
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert lines[0].startswith("fxtui: no running job") and any("ab12cd34" in line for line in lines[1:])


def test_each_table_ends_with_the_next_command_to_try(
    capsys: pytest.CaptureFixture[str], model_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(model_file.parent)
    quick = ["--once", "--runs", "2", "--warmup", "0"]
    code, out, _ = run_cli(capsys, "models.py:make", *quick)
    assert code == 0
    assert out.strip().splitlines()[-1] == (
        "next: fxtui models.py:make --once --runs 2 --warmup 0 --hints   (what to change, with estimated savings)"
    )
    code, out, _ = run_cli(capsys, "models.py:make", *quick, "--modules")
    assert out.strip().splitlines()[-1] == (
        "next: fxtui models.py:make --once --runs 2 --warmup 0 --path fc   (the nodes of fc, the slowest module)"
    )
    code, out, _ = run_cli(capsys, "models.py:make", *quick, "--hints", "--json", "before.json")
    assert out.strip().splitlines()[-1] == (
        "next: fxtui diff before.json AFTER.json   (after a change saved with --json AFTER.json: what moved)"
    )
    monkeypatch.setenv("COLUMNS", "80")  # too narrow for the line: the reason first, the command on its own line
    code, out, _ = run_cli(capsys, "models.py:make", *quick, "--top", "1")
    assert out.strip().splitlines()[-2:] == [
        "next (what to change, with estimated savings):",
        "  fxtui models.py:make --once --runs 2 --warmup 0 --top 1 --hints",
    ]


def test_after_the_hints_the_next_command_measures_one_or_opens_the_app() -> None:
    from types import SimpleNamespace

    from fxtui.commands.next_command import model_next_command
    from fxtui.core.settings import ModelSettings, OutputSettings, Target

    settings = ModelSettings(Target("resnet18"), hints=True)
    hint = SimpleNamespace(what_if="channels-last")
    report = SimpleNamespace(hints=(hint,), what_ifs=(), modules=())
    argv = ["resnet18", "--once", "--hints", "--top", "5"]
    step = model_next_command(argv, settings, OutputSettings(), report)  # type: ignore[arg-type]
    assert step is not None
    assert step.command == "fxtui resnet18 --once --hints --top 5 --what-if channels-last"
    measured = SimpleNamespace(hints=(hint,), what_ifs=(SimpleNamespace(name="channels-last"),), modules=())
    step = model_next_command(argv, settings, OutputSettings(), measured)  # type: ignore[arg-type]
    assert step is not None and step.command == "fxtui resnet18" and "live app" in step.why


def test_tables_fit_columns_and_pipes_get_them_whole(
    capsys: pytest.CaptureFixture[str], model_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(model_file.parent)
    args = ("models.py:make", "--once", "--runs", "2", "--warmup", "0", "--columns", "source")
    code, whole, _ = run_cli(capsys, *args)
    assert code == 0 and max(len(line) for line in whole.splitlines()) > 80  # stdout is not a terminal here
    monkeypatch.setenv("COLUMNS", "80")
    code, fitted, _ = run_cli(capsys, *args)
    assert code == 0 and max(len(line) for line in fitted.splitlines()) <= 80
