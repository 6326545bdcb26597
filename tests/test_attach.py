"""Jobs of fxtui run: detached, watched, left and rejoined; their collector is its user's alone."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from multiprocessing.connection import Client
from pathlib import Path

import pytest

from fxtui.core.settings import ProgramSettings
from fxtui.core.snapshot import State
from fxtui.jobs.job_start import start_detached
from fxtui.wire.attach_source import AttachSource
from fxtui.wire.job_directory import KEY, VIEWER, JobInfo, find_job, job_dir, read_key
from fxtui.wire.viewer_commands import Stop, StopProgram
from tests.loop_until_stopped import LOOP

pytestmark = pytest.mark.e2e


def _started(directory: Path):  # type: ignore[no-untyped-def]
    script = directory / "loop.py"
    script.write_text(textwrap.dedent(LOOP))
    info, _ = start_detached(ProgramSettings((str(script),), warmup=2, every=2))
    yield info
    (directory / "stop").write_text("0")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and find_job(info.id).alive:
        time.sleep(0.2)


@pytest.fixture
def job(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A job of the test's own: it may end it."""
    yield from _started(tmp_path)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One job the tests that only watch it share (each waits for the program's start-up otherwise); the last of
    them, in the module's order, ends it, and the tests after it start jobs of their own."""
    yield from _started(tmp_path_factory.mktemp("shared"))


def until(condition, what: str, timeout: float = 120) -> None:  # type: ignore[no-untyped-def]
    """Wait for ``condition()`` (a busy machine gets its time; nothing here is a timing)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}")
        time.sleep(0.1)


def figures(info: JobInfo, at_least: int = 1, timeout: float = 120):  # type: ignore[no-untyped-def]
    """A snapshot of the running job with at least ``at_least`` steps."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        snapshot = AttachSource(info).take()
        if snapshot is not None and snapshot.steps is not None and snapshot.steps.steps >= at_least:
            return snapshot
        time.sleep(0.2)
    raise AssertionError(f"job {info.id} showed fewer than {at_least} steps in {timeout} s")


def test_a_detached_job_is_watched_left_and_watched_again_its_figures_still_growing(shared: JobInfo) -> None:
    first = figures(shared, at_least=5)
    assert first.graph is not None and first.program is not None and first.program.running
    assert any(n.name == "0 · addmm" for n in first.graph.nodes)
    later = figures(shared, at_least=first.steps.steps + 20)  # type: ignore[union-attr]
    assert later.steps.sampled >= first.steps.sampled  # type: ignore[union-attr]
    listed = subprocess.run([sys.executable, "-m", "fxtui", "attach"], capture_output=True, text=True, timeout=60)
    assert shared.id in listed.stdout


def test_attach_once_writes_the_running_jobs_profile(shared: JobInfo, tmp_path: Path) -> None:
    figures(shared, at_least=5)
    out = tmp_path / "now.json"
    done = subprocess.run(
        [sys.executable, "-m", "fxtui", "attach", shared.id[:4], "--once", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    meta = json.loads(out.read_text())["metadata"]
    assert meta["mode"] == "run" and meta["steps"]["steps"] >= 5 and meta["program"]["exit_code"] is None
    assert find_job(shared.id).alive  # the job goes on


def test_a_killed_viewer_costs_the_job_nothing_and_two_viewers_both_work(shared: JobInfo) -> None:
    figures(shared, at_least=3)
    viewer = subprocess.Popen(
        [sys.executable, "-c", f"import time; from fxtui.wire.attach_source import AttachSource; "
         f"from fxtui.wire.job_directory import find_job; s = AttachSource(find_job({shared.id!r})); "
         f"print('connected', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert viewer.stdout is not None and viewer.stdout.readline() == "connected\n"  # killed once it is connected
    viewer.kill()
    viewer.wait()
    viewer.stdout.close()
    one, two = AttachSource(shared), AttachSource(shared)
    got: list[list[object]] = [[], []]
    for source, sink in zip((one, two), got, strict=True):
        threading.Thread(target=source.run, args=(sink.append,), daemon=True).start()
    until(lambda: got[0] and got[1], "both viewers' snapshots")  # both viewers get snapshots
    for source in (one, two):
        source.send(Stop())
    assert find_job(shared.id).alive


def test_a_malformed_message_is_dropped_with_a_warning(shared: JobInfo) -> None:
    figures(shared, at_least=3)
    connection = Client(str(job_dir(shared.id) / VIEWER), family="AF_UNIX", authkey=read_key(shared))
    connection.send_bytes(b"this is not a pickle")
    connection.send(object())  # a pickle, but not a command
    log = job_dir(shared.id) / "collector.log"
    until(lambda: "which a job does not take" in log.read_text(), "the collector's warnings")
    connection.close()
    assert figures(shared, at_least=3).graph is not None  # the collector still serves
    assert "does not read" in log.read_text()


def test_a_jobs_files_are_its_users_alone(shared: JobInfo) -> None:
    directory = job_dir(shared.id)
    assert stat.S_IMODE(directory.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE((directory / KEY).stat().st_mode) == 0o600
    assert stat.S_IMODE((directory / VIEWER).stat().st_mode) == 0o600
    if os.getuid() != 0:
        pytest.skip("only root can try as another user here")
    try:
        subprocess.run([sys.executable, "-c", "pass"], user="nobody", cwd="/tmp", check=True)
    except (PermissionError, subprocess.CalledProcessError):
        pytest.skip("user nobody cannot run this checkout's Python here")
    done = subprocess.run(
        [sys.executable, "-m", "fxtui", "attach", shared.id], capture_output=True, text=True, user="nobody",
        env={**os.environ, "HOME": "/tmp"}, cwd="/tmp",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def _watching(job: JobInfo) -> tuple[AttachSource, list[object], threading.Thread]:
    """A viewer of the job on a thread of its own, once its first snapshot came: the source, what it has seen (it
    goes on growing), and the thread."""
    source = AttachSource(job)
    seen: list[object] = []
    watcher = threading.Thread(target=source.run, args=(seen.append,), daemon=True)
    watcher.start()
    until(lambda: seen, "the viewer's first snapshot")
    return source, seen, watcher


def test_a_job_that_ends_while_watched_leaves_its_last_figures_and_its_status(shared: JobInfo) -> None:
    """The shared job's end: the tests above watched it running (its loop would spin beside the tests below)."""
    job = shared
    figures(job, at_least=3)
    source, _seen, watcher = _watching(job)
    Path(job.command[0]).with_name("stop").write_text("3")  # beside the loop's script
    watcher.join(60)
    assert source.last is not None and source.last.state is State.DONE
    assert source.exit_code == 3 and source.last.program is not None and source.last.program.exit_code == 3
    assert (job_dir(job.id) / "profile.json").exists()  # an ended job offers its saved profile
    done = subprocess.run([sys.executable, "-m", "fxtui", "attach", job.id], capture_output=True, text=True)
    # The table names the module (0) and the op (addmm) once each.
    assert done.returncode == 0 and "exited 3" in done.stdout and re.search(r" 0 +addmm ", done.stdout)


def test_a_viewer_can_stop_the_program(job: JobInfo) -> None:
    figures(job, at_least=3)
    source = AttachSource(job)
    source.send(StopProgram())
    source.run(lambda snapshot: None)
    assert source.exit_code == -signal.SIGINT  # as Ctrl+C would
    assert source.last is not None and source.last.program is not None and not source.last.program.running


def test_a_killed_collector_leaves_the_viewer_its_last_figures(job: JobInfo) -> None:
    figures(job, at_least=3)
    _source, seen, watcher = _watching(job)
    os.kill(job.pid, signal.SIGKILL)
    watcher.join(30)
    last = seen[-1]
    assert last.state is State.ERROR and "ended unexpectedly" in last.message  # type: ignore[attr-defined]
    assert last.graph is not None and last.steps is not None  # type: ignore[attr-defined]
    os.kill(job.program_pid, signal.SIGKILL)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_rank_on_another_server_reports_over_tcp_and_a_viewer_watches_over_tcp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fxtui.jobs.launch import SITE_DIR
    from fxtui.wire.attach_source import remote_job

    script = tmp_path / "loop.py"
    script.write_text(textwrap.dedent(LOOP))
    port = _free_port()
    monkeypatch.setenv("RANK", "0")  # the job's own program is rank 0; the other server's is rank 1
    info, _ = start_detached(ProgramSettings((str(script),), warmup=2, every=2), listen=f"127.0.0.1:{port}")
    try:
        assert info.listen == f"127.0.0.1:{port}" and info.agents == f"127.0.0.1:{port + 1}"
        token = read_key(info)
        env = {**os.environ, "RANK": "1", "FXTUI_AGENT": info.agents, "FXTUI_AGENT_KEY": token.hex(),
               "PYTHONPATH": SITE_DIR}  # fmt: skip
        (tmp_path / "elsewhere").mkdir()
        remote = tmp_path / "elsewhere" / "loop.py"
        remote.write_text(textwrap.dedent(LOOP))
        other = subprocess.Popen([sys.executable, str(remote)], env=env)
        try:
            deadline = time.monotonic() + 180
            snapshot = None
            while time.monotonic() < deadline:
                snapshot = AttachSource(remote_job(info.listen), token).take()  # a viewer over TCP, with the token
                if snapshot is not None and snapshot.graph is not None and snapshot.graph.ranks == (0, 1):
                    break
                time.sleep(0.2)
            assert snapshot is not None and snapshot.graph is not None and snapshot.graph.ranks == (0, 1)
            assert snapshot.rank_summary is not None and len(snapshot.rank_summary.ranks) == 2
        finally:
            (tmp_path / "elsewhere" / "stop").write_text("0")
            other.wait(60)
        with pytest.raises(Exception):  # noqa: B017 (the key's challenge fails: multiprocessing's own error)
            Client(("127.0.0.1", port), family="AF_INET", authkey=b"not the token")
    finally:
        (tmp_path / "stop").write_text("0")
