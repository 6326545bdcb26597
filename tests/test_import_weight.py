"""What each process loads as it starts, checked in a fresh interpreter: the collector and the viewer never torch,
the command never the report's writers before the program starts. (The folder rules themselves, read from the
source, are ``tests/test_layering.py``.)"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

PACKAGE = Path(__file__).resolve().parent.parent / "fxtui"


def modules_of(folder: str) -> list[str]:
    """The importable names of the modules under ``fxtui/<folder>``."""
    names = []
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_the_collector_and_the_viewer_never_load_torch() -> None:
    # fxtui run's collector starts while the program imports torch on the same cores: importing torch too would
    # cost the program seconds of a core (its fixed cost), for nothing the collector needs.
    modules = sorted(m for folder in ("jobs", "report") for m in modules_of(folder))
    code = (
        f"import sys, fxtui.commands.run, fxtui.commands.attach; import {', '.join(modules)}; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'torchvision', 'transformers')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_what_runs_before_a_program_starts_imports_no_numpy_and_no_report() -> None:
    # fxtui run's fixed cost: the command parses its options, then the program starts. numpy alone took 86 ms
    # there, the report's writers and the app's job 50 ms more (measured: +0.59 s over python before, +0.30 s
    # after, tests/benchmarks/bench_fixed_cost.py); what prints the profile is imported in the collector.
    code = (
        "import sys; from fxtui.commands.parser import parse; "
        "from fxtui.commands.options import check_output, program_output; "
        "args = parse(['run', '--once', '--sort', 'p90', '--columns', 'mean', 'train.py', '--epochs', '1']).args; "
        "check_output(program_output(args)); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'numpy' or m.startswith('fxtui.report.') "
        "and m != 'fxtui.report.formats' or m.startswith('fxtui.ui')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_importing_the_app_does_not_load_torch() -> None:
    code = (
        "import sys, fxtui.commands.cli, fxtui.commands.model_engine, fxtui.ui.app; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'torchvision')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


#: Run as ``python -c``: fxtui's command up to the moment it becomes the program, with the fork that starts the
#: collector and the exec that starts the program stood in for. It prints what was loaded then, in this interpreter
#: (after the exec the modules would be the new interpreter's), and the program's command line.
UP_TO_THE_EXEC = r"""
import os, sys
fork = os.fork
def no_collector():  # the collector's fork, its child gone at once: only what the command itself loaded counts
    pid = fork()
    if pid == 0:
        os._exit(0)
    return pid
def at_exec(path, argv, env):  # where the program would start
    print(repr((sorted(m for m in sys.modules if m.split('.')[0] in ('fxtui', 'numpy', 'torch')), list(argv))))
    sys.stdout.flush()
    os._exit(0)
os.fork, os.execve = no_collector, at_exec
from fxtui.commands.cli import main
raise SystemExit(main(sys.argv[1:]))
"""

#: What ``fxtui run --once`` may load before its program starts: the parser, the options' checks, and the program's
#: job (its socket and environment). Everything else it loaded was thrown away by the exec.
BEFORE_THE_PROGRAM = {
    "fxtui.commands": {"cli", "options", "output", "parser", "run", "usage"},
    "fxtui.jobs": {"beside", "job_setup", "launch"},
    "fxtui.report": {"formats"},
    "fxtui.wire": {"agent_contract", "agent_env", "agent_intake", "job_directory", "private_dir", "sockets"},
}


@pytest.mark.parametrize("options", [(), ("--sort", "p90", "--phase", "backward", "--kind", "train", "--top", "5")])
def test_fxtui_run_once_loads_only_the_parser_and_the_programs_job_before_the_program_starts(
    tmp_path: Path, options: tuple[str, ...]
) -> None:
    # fxtui run's fixed cost: every module the command imports before it becomes the program is time before the
    # program's first line (numpy, the collector's state, the report, every command's parser: 0.16 s of 0.18 s before,
    # with a bytecode cache; tests/benchmarks/bench_fixed_cost.py). The collector imports what it needs after the fork.
    script = tmp_path / "train.py"
    script.write_text("print('the program')\n")
    argv = ["run", "--once", *options, str(script)]
    done = subprocess.run([sys.executable, "-c", UP_TO_THE_EXEC, *argv], capture_output=True, text=True, check=True)
    loaded, program = ast.literal_eval(done.stdout.strip())
    assert program[-1] == str(script) and "fxtui.agent.boot" in program, program  # it got as far as the exec
    assert not [m for m in loaded if m.split(".")[0] in ("numpy", "torch")], loaded
    for folder, allowed in BEFORE_THE_PROGRAM.items():
        extra = {m.removeprefix(folder + ".") for m in loaded if m.startswith(folder + ".")} - allowed
        assert not extra, f"{folder}: {sorted(extra)} imported before the program starts"
    assert not [m for m in loaded if m.startswith(("fxtui.ui", "fxtui.agent", "fxtui.measure", "fxtui.ops"))], loaded
    heavy = {"fxtui.core.snapshot", "fxtui.core.program_run", "fxtui.wire.agent_messages", "fxtui.wire.job_link",
             "fxtui.core.rows"}  # fmt: skip
    if "--phase" not in options:
        heavy.add("fxtui.core.nodes")  # which names the phases --phase takes, and nothing else needs here
    assert not heavy & set(loaded), sorted(heavy & set(loaded))


def test_a_programs_boot_loads_only_the_environments_names_before_its_first_line(tmp_path: Path) -> None:
    # The program's own interpreter under fxtui run: the boot and the sitecustomize every process of the program
    # runs. Before the program's first line they read the environment's names and set the hook on torch's import,
    # nothing more: the agent comes with torch, and what says the exit status as the program ends.
    from fxtui.jobs.launch import SITE_DIR

    script = tmp_path / "first_line.py"
    script.write_text("import sys\nprint(sorted(sys.modules))\n")
    plain = ast.literal_eval(subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                                            check=True).stdout.strip())  # fmt: skip
    env = {**os.environ, "FXTUI_AGENT": str(tmp_path / "nobody.sock"), "FXTUI_AGENT_KEY": "00"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SITE_DIR, env.get("PYTHONPATH", "")) if p)
    done = subprocess.run([sys.executable, "-m", "fxtui.agent.boot", str(script)], capture_output=True, text=True,
                          env=env, check=True)  # fmt: skip
    extra = set(ast.literal_eval(done.stdout.strip())) - set(plain)
    assert "fxtui.agent.on_torch_import" in extra, extra  # the sitecustomize and the boot did run
    ours = {m for m in extra if m.startswith("fxtui")}
    assert ours <= {"fxtui", "fxtui.agent", "fxtui.agent.on_torch_import", "fxtui.agent.program_exit", "fxtui.wire",
                    "fxtui.wire.agent_env"}, sorted(ours)  # fmt: skip
    heavy = {"dataclasses", "inspect", "multiprocessing", "socket", "numpy", "torch"}
    assert not heavy & extra, sorted(heavy & extra)


#: Run as ``python -c DIRECTORY``: a detached job's collector made as the daemon makes it, the program's start stood
#: in for; it prints what was loaded when the program would start, then whether the job's state was made after.
DAEMON_START = r"""
import sys
from pathlib import Path
from fxtui.jobs.job_setup import detached_job
def start(job):  # where the daemon starts the program
    print(repr(sorted(m for m in sys.modules if m.split('.')[0] in ('fxtui', 'numpy'))), flush=True)
made = detached_job(Path(sys.argv[1]), start=start)
print(type(made.state).__name__, flush=True)
made.server.close()
made.cross.close()
made.job.close()
"""


def test_a_detached_jobs_collector_starts_the_program_before_it_imports_what_aggregates(tmp_path: Path) -> None:
    # fxtui run's app and --detach: the daemon starts the program, then imports the job's state (numpy, the
    # collector, the viewers' server: 0.15-0.2 s of the program's start before), its agents' messages waiting for it.
    import dataclasses
    import json

    from fxtui.core.settings import ProgramSettings

    directory = tmp_path / "job"
    directory.mkdir(mode=0o700)
    (directory / "key").write_text("00" * 32)
    settings = dataclasses.asdict(ProgramSettings(("train.py",)))
    (directory / "settings.json").write_text(json.dumps({**settings, "listen": "", "cwd": str(tmp_path)}))
    done = subprocess.run([sys.executable, "-c", DAEMON_START, str(directory)], capture_output=True, text=True,
                          check=True)  # fmt: skip
    at_start, made = done.stdout.strip().splitlines()
    loaded = ast.literal_eval(at_start)
    assert "fxtui.jobs.launch" in loaded and made == "JobState", done.stdout  # the job was made, its state after
    late = {"numpy", "fxtui.jobs.job_state", "fxtui.jobs.viewers", "fxtui.jobs.cross_node", "fxtui.core.snapshot"}
    assert not late & set(loaded), sorted(late & set(loaded))
