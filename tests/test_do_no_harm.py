"""Under fxtui run a program lives as under python: its output, its signals, its exit status, its children; and a
collector that dies costs it nothing (the program runs to its own end, and fxtui attach says what happened)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fxtui.core.settings import ProgramSettings
from fxtui.jobs.job_start import start_detached
from fxtui.wire.attach_source import AttachSource
from fxtui.wire.job_directory import LOG, PROFILE, JobInfo, find_job, job_dir, read_info, running
from tests.loop_until_stopped import LOOP

pytestmark = pytest.mark.e2e

PY = sys.executable
RUN = [PY, "-m", "fxtui", "run", "--once", "--warmup-steps", "2", "--sample-every", "2", "--top", "3"]


def _default_signals() -> None:
    """The signals a program started from a terminal gets with their default actions. A runner started under
    ``nohup`` (or a shell's background job) passes SIGHUP (or SIGINT) on ignored, and the program would then never
    end by it, under python as under fxtui."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def write(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(body))
    return path


def wait_until(condition, what: str, timeout: float = 180) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"waited {timeout:g} s for {what}")


def figures(info: JobInfo, at_least: int = 1) -> int:
    def enough() -> bool:
        snapshot = AttachSource(info).take()
        return snapshot is not None and snapshot.steps is not None and snapshot.steps.steps >= at_least

    wait_until(enough, f"{at_least} steps of job {info.id}")
    return at_least


def _kept_rows(path: Path) -> bool:
    try:
        return bool(json.loads(path.read_text())["rows"])
    except (OSError, ValueError, KeyError):
        return False


def test_a_killed_collector_costs_the_program_nothing_and_attach_says_so_and_watches_again(tmp_path: Path) -> None:
    write(tmp_path, "loop.py", LOOP)
    info, directory = start_detached(ProgramSettings((str(tmp_path / "loop.py"),), warmup=2, every=2))
    try:
        figures(info, at_least=5)
        wait_until(lambda: _kept_rows(directory / PROFILE), "figures kept on disk")
        os.kill(info.pid, signal.SIGKILL)  # the collector dies as the OOM killer would kill it
        wait_until(lambda: not find_job(info.id).alive, "the collector's end")
        log = directory / LOG
        printed = log.read_text().count("step")
        # Three lines more (it prints every tenth step), and past step 110 (its steps at the end, > 100, below).
        wait_until(lambda: log.read_text().count("step") > max(printed + 2, 11), "the program printing on")
        assert running(info.program_pid)

        attach = subprocess.run([PY, "-m", "fxtui", "attach", info.id, "--once", "--top", "0"], capture_output=True,
                                text=True, timeout=180)  # fmt: skip
        assert attach.returncode == 0, attach.stderr
        first = attach.stdout.splitlines()[0]
        assert "collector is gone" in first and f"pid {info.program_pid}" in first and str(log) in first
        assert re.search(r"\s0\s+addmm\s", attach.stdout)  # the last figures it kept: layer 0's addmm
        assert "a new collector watches it" in attach.stdout
        adopted = find_job(info.id)
        assert adopted.alive and adopted.pid != info.pid
        figures(adopted, at_least=3)  # figures again, from the new collector
    finally:
        (tmp_path / "stop").write_text("5")
    wait_until(lambda: not (read_info(directory) or info).running, "the job's end")
    ended = read_info(directory)
    assert ended is not None and ended.exit_code == 5  # the program's own status, though no parent of its saw it
    assert "done at step" in (directory / LOG).read_text()
    assert ended.steps > 100


def test_a_program_whose_collector_died_runs_to_its_own_end_with_its_output(tmp_path: Path) -> None:
    write(tmp_path, "loop.py", LOOP)
    info, directory = start_detached(ProgramSettings((str(tmp_path / "loop.py"),), warmup=2, every=2))
    figures(info, at_least=3)
    os.kill(info.pid, signal.SIGKILL)
    wait_until(lambda: "step" in (directory / LOG).read_text(), "the program's output")
    (tmp_path / "stop").write_text("0")
    wait_until(lambda: not running(info.program_pid), "the program's end")
    output = (directory / LOG).read_text()
    assert "done at step" in output and "Error" not in output  # no broken pipe: its output was never a pipe
    job = find_job(info.id)
    assert job.running and not job.alive and "lost" in job.line()


def _compare(tmp_path: Path, script: str, *args: str, stdin: int | None = None):  # type: ignore[no-untyped-def]
    """The program under python and under fxtui run --once: each one's status, stdout and stderr."""
    plain = subprocess.run([PY, script, *args], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    fxtui = subprocess.run([*RUN, script, *args], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    return plain, fxtui


CHILDREN = """
import os, sys, torch, torch.nn as nn
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, TensorDataset

def net():
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

def digest(model):
    return round(sum(float(p.detach().double().sum()) for p in model.parameters()), 4)

def train(model, steps, seed):
    torch.manual_seed(seed)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        opt.zero_grad(); model(torch.randn(8, 16)).pow(2).mean().backward(); opt.step()

def train_shared(tensors, steps, seed):  # the child's own model on the parent's shared parameters
    torch.set_num_threads(1)
    model = net()
    for p, shared in zip(model.parameters(), tensors):
        p.data = shared
    train(model, steps, seed)

if __name__ == "__main__":
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = net()
    train(model, 12, 1)
    print("parent trained", digest(model), flush=True)
    child = os.fork()
    if child == 0:  # a forked child: it computes, prints and exits as it would without fxtui
        train(model, 6, 2)
        print("forked child trained", digest(model), flush=True)
        sys.exit(7)
    _, status = os.waitpid(child, 0)
    print("forked child exited", os.waitstatus_to_exitcode(status), flush=True)
    data = DataLoader(TensorDataset(torch.randn(64, 16)), batch_size=8, num_workers=2)  # forked workers
    print("batches", sum(1 for _ in data), flush=True)
    mp.set_start_method("spawn", force=True)
    model.share_memory()
    tensors = [p.data for p in model.parameters()]
    worker = mp.Process(target=train_shared, args=(tensors, 6, 3))  # its own model on the shared tensors
    worker.start(); worker.join()
    print("spawned child exited", worker.exitcode, "shared model", digest(model), flush=True)
    worker = mp.Process(target=train, args=(model, 6, 5))  # the shared model itself, as mnist_hogwild passes it
    worker.start(); worker.join()
    print("spawned hogwild child exited", worker.exitcode, "shared model", digest(model), flush=True)
    train(model, 12, 4)
    print("parent done", digest(model))
"""


@pytest.fixture(scope="module")
def children(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The program with children of every kind, under python and under fxtui run (once for both tests)."""
    directory = tmp_path_factory.mktemp("children")
    write(directory, "children.py", CHILDREN)
    return _compare(directory, "children.py")


def test_forked_and_spawned_children_live_as_under_python(children) -> None:  # type: ignore[no-untyped-def]
    plain, fxtui = children
    assert plain.returncode == 0, plain.stderr
    assert "forked child exited 7" in plain.stdout and "spawned child exited 0" in plain.stdout
    assert fxtui.returncode == plain.returncode, fxtui.stderr
    lines = plain.stdout.splitlines()
    assert fxtui.stdout.splitlines()[: len(lines)] == lines  # the program's output line for line, then the profile
    assert fxtui.stderr == plain.stderr
    assert "training steps" in fxtui.stdout


def test_a_model_shared_with_a_spawned_child_as_mnist_hogwild_does(children) -> None:  # type: ignore[no-untyped-def]
    plain, fxtui = children
    assert plain.returncode == 0, plain.stderr
    assert "spawned hogwild child exited 0" in plain.stdout  # its training in the shared model: the digests below
    assert fxtui.returncode == plain.returncode and fxtui.stdout.startswith(plain.stdout), fxtui.stderr
    assert fxtui.stderr == plain.stderr


CHATTY = """
import torch
model = torch.nn.Linear(4, 4)
for i in range(1_000_000):
    model(torch.randn(2, 4))
    print("line", i)
"""


def test_a_broken_pipe_is_the_programs_as_under_python(tmp_path: Path) -> None:
    write(tmp_path, "chatty.py", CHATTY)

    def head(argv: list[str]) -> tuple[int, str, str]:  # as `… | head -1` does: one line, then the pipe closes
        p = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert p.stdout is not None and p.stderr is not None
        first = p.stdout.readline()
        p.stdout.close()
        err = p.stderr.read()
        return p.wait(timeout=300), first, err

    plain = head([PY, "chatty.py"])
    fxtui = head([*RUN, "chatty.py"])
    assert fxtui == plain  # the same status (its own), line, and traceback: the program's, none of fxtui's
    assert "BrokenPipeError" in plain[2]


SIGNALLED = """
import signal, sys, torch
if len(sys.argv) > 1:  # a program that cleans up on SIGTERM and SIGHUP, once
    def leave(signum, frame):
        print("got", signal.Signals(signum).name, flush=True)
        sys.exit(3)
    signal.signal(signal.SIGTERM, leave)
    signal.signal(signal.SIGHUP, leave)
model = torch.nn.Linear(8, 8)
print("ready", flush=True)
while True:
    model(torch.randn(4, 8)).sum().backward()
"""


@pytest.mark.parametrize(
    ("sig", "to_group", "handled"),
    [
        (signal.SIGINT, True, False),  # Ctrl+C: the terminal signals the foreground process group
        (signal.SIGTERM, False, False),  # kill PID
        (signal.SIGTERM, False, True),
        (signal.SIGTERM, True, True),  # timeout, a job scheduler: the whole group, once each
        (signal.SIGHUP, True, False),  # a closed SSH session
        (signal.SIGHUP, True, True),
    ],
)
def test_signals_reach_the_program_and_its_status_is_its_own(
    tmp_path: Path, sig: signal.Signals, to_group: bool, handled: bool
) -> None:
    write(tmp_path, "signalled.py", SIGNALLED)
    args = ["handle"] if handled else []

    def signalled(argv: list[str]) -> tuple[int, str, str]:
        # As from a terminal: Ctrl+C's default action (a shell that starts a job in the background, as CI may,
        # has its children ignore SIGINT, and then python itself never raises KeyboardInterrupt).
        p = subprocess.Popen([*argv, "signalled.py", *args], cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True,
                             preexec_fn=_default_signals)  # fmt: skip
        assert p.stdout is not None
        ready = p.stdout.readline()
        assert ready == "ready\n"
        if to_group:
            os.killpg(p.pid, sig)
        else:
            os.kill(p.pid, sig)
        try:
            out, err = p.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)  # never left spinning on the cores of the tests that follow
            raise
        return p.returncode, out, err

    plain = signalled([PY])
    fxtui = signalled(RUN)
    assert fxtui[0] == plain[0]  # as a shell sees it: by the same signal, or the same status
    program_lines = plain[1].splitlines()
    assert fxtui[1].splitlines()[: len(program_lines)] == program_lines  # a handler ran once, not twice
    assert fxtui[2].splitlines()[-1:] == plain[2].splitlines()[-1:]  # KeyboardInterrupt's last line, or nothing
    if handled:
        assert "exited 3" in fxtui[1]  # its profile follows, with its status


def test_a_profile_of_a_killed_program_follows_it(tmp_path: Path) -> None:
    write(tmp_path, "signalled.py", SIGNALLED)
    p = subprocess.Popen([*RUN, "signalled.py"], cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline() == "ready\n"
    time.sleep(1)  # some steps (no figure depends on how many)
    p.kill()
    out = p.stdout.read()
    assert p.wait() == -signal.SIGKILL
    assert "ended without a status" in out and "steps" in out


def test_a_full_disk_meets_the_program_as_under_python(tmp_path: Path) -> None:
    from fxtui.jobs.launch import ProgramJob

    chatty = write(tmp_path, "chatty.py", "for i in range(20000):\n    print('a line of output', i)\nprint('done')\n")
    with open("/dev/full", "w") as full:
        plain = subprocess.run([PY, str(chatty)], stdout=full, stderr=subprocess.STDOUT, timeout=120)
    job = ProgramJob((str(chatty),), lambda message, agent: None, log=True)
    job.log_path = Path("/dev/full")  # every write: no space left on the device
    job.start()
    try:
        assert job.wait(120) == plain.returncode != 0  # its own print failed, as it would have
    finally:
        job.log_path = None  # (nothing of the job's to keep)
        job.close()


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One detached job of the loop for the tests below that watch it (each would wait for a program's start-up
    otherwise, and a running loop keeps a core busy): its folder, its info and its job directory. The last of
    them, job.json's, ends it."""
    folder = tmp_path_factory.mktemp("watched")
    write(folder, "loop.py", LOOP)
    info, directory = start_detached(ProgramSettings((str(folder / "loop.py"),), warmup=2, every=2))
    yield folder, info, directory
    (folder / "stop").write_text("0")


def test_a_detached_programs_output_is_its_log_on_its_own_descriptors(watched) -> None:  # type: ignore[no-untyped-def]
    _, info, directory = watched
    wait_until(lambda: "step" in (directory / LOG).read_text(), "the program's output")
    if Path(f"/proc/{info.program_pid}/fd").is_dir():
        for fd in (1, 2):  # no pipe whose reader could die: the file itself, as `>> output.log 2>&1` gives
            assert os.readlink(f"/proc/{info.program_pid}/fd/{fd}") == str(directory / LOG)


def _loads_torch(pid: int) -> bool:
    return "libtorch" in Path(f"/proc/{pid}/maps").read_text()


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc")
def test_the_collectors_never_load_torch(watched, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A collector importing torch costs the program seconds of a core as it starts (its agent's first message
    once carried torch's own version class)."""
    _, info, _ = watched
    write(tmp_path, "loop.py", LOOP)
    once = subprocess.Popen([*RUN, "loop.py"], cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    try:
        figures(info, at_least=5)
        assert once.stdout is not None and once.stdout.readline().startswith("step")
        beside = [int(p) for p in os.listdir("/proc") if p.isdigit() and p != str(once.pid) and
                  "run\0--once" in _cmdline(int(p)) and "loop.py" in _cmdline(int(p))]  # fmt: skip
        assert beside and _loads_torch(once.pid)  # the program does
        assert not _loads_torch(info.pid) and not any(_loads_torch(pid) for pid in beside)
    finally:
        (tmp_path / "stop").write_text("0")
        once.communicate(timeout=300)


def test_job_json_follows_the_program(watched) -> None:  # type: ignore[no-untyped-def]
    folder, info, directory = watched
    try:
        wait_until(lambda: json.loads((directory / "job.json").read_text())["steps"] > 50, "steps in job.json")
        first = json.loads((directory / "job.json").read_text())["steps"]
        wait_until(lambda: json.loads((directory / "job.json").read_text())["steps"] > first, "job.json to move on")
    finally:
        (folder / "stop").write_text("0")
    wait_until(lambda: not json.loads((directory / "job.json").read_text())["running"], "the job's end")
    assert job_dir(info.id) == directory


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return ""


def test_a_launcher_of_this_python_runs_under_the_boot_and_its_status_is_said(tmp_path: Path) -> None:
    """``fxtui run --once torchrun …``: a console script of this Python runs as Python would run it, its status in
    the profile's header and its own."""
    write(
        tmp_path, "train.py", "import sys, torch\nm = torch.nn.Linear(4, 4)\nfor _ in range(12): m(torch.randn(2, 4))\n"
    )
    launcher = tmp_path / "bin" / "launch-train"
    launcher.parent.mkdir()
    launcher.write_text(f"#!{os.path.realpath(PY)}\nimport runpy, sys\nrunpy.run_path(sys.argv[1])\nsys.exit(4)\n")
    launcher.chmod(0o755)
    env = {**os.environ, "PATH": f"{launcher.parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([*RUN, "launch-train", "train.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 4, done.stderr
    assert "exited 4" in done.stdout and "calls" in done.stdout  # its status, and its model calls counted
