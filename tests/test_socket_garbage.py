"""Garbage on a running job's sockets — random bytes, zeros, a huge length prefix, half a frame then silence, forty
connections at once, over the local sockets and TCP — is refused or timed out on its own: the collector keeps serving
its agent and its viewers, and the program runs on."""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fxtui.core.settings import ProgramSettings
from fxtui.jobs.job_start import start_detached
from fxtui.wire.attach_source import AttachSource, remote_job
from fxtui.wire.job_directory import VIEWER, JobInfo, find_job, job_dir, read_key, running

pytestmark = pytest.mark.e2e

LOOP = """
import pathlib, torch
here = pathlib.Path(__file__).parent
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
while not (here / "stop").exists():
    opt.zero_grad(); model(torch.randn(8, 16)).sum().backward(); opt.step()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JobInfo]:
    directory = tmp_path_factory.mktemp("garbage")
    (directory / "loop.py").write_text(textwrap.dedent(LOOP))
    info, _ = start_detached(
        ProgramSettings((str(directory / "loop.py"),), warmup=2, every=2), listen=f"127.0.0.1:{_free_port()}"
    )
    yield info
    (directory / "stop").write_text("")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and find_job(info.id).alive:
        time.sleep(0.2)


def steps_now(info: JobInfo, more_than: int = 0, token: bytes | None = None) -> int:
    """The job's steps as a viewer attaching now sees them, once more than ``more_than``."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        source = AttachSource(remote_job(info.listen), token) if token else AttachSource(info)
        snapshot = source.take()
        if snapshot is not None and snapshot.steps is not None and snapshot.steps.steps > more_than:
            return snapshot.steps.steps
        time.sleep(0.5)
    raise AssertionError(f"job {info.id} showed no more than {more_than} steps")


def _unix(path: Path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(path))
    return s


def _tcp(address: str) -> socket.socket:
    host, _, port = address.rpartition(":")
    return socket.create_connection((host, int(port)))


GARBAGE = {
    "random bytes": os.urandom(4096),
    "100 kB of zeros": bytes(100_000),
    "ff ff ff ff then noise": b"\xff\xff\xff\xff" + os.urandom(64),
    "a huge 64-bit length": b"\xff\xff\xff\xff" + struct.pack("!Q", 1 << 40) + b"x" * 100,
    "half a frame": struct.pack("!i", 200) + b"half",
}


def _write(connect, data: bytes) -> socket.socket:  # type: ignore[no-untyped-def]
    s = connect()
    s.settimeout(5)
    with contextlib.suppress(OSError):  # refused before it had all of it: as it should be
        s.sendall(data)
    return s


@pytest.mark.parametrize("where", ["viewer.sock", "agent.sock", "tcp"])
def test_garbage_and_a_flood_leave_the_job_served(job: JobInfo, where: str) -> None:
    directory = job_dir(job.id)
    connect = (lambda: _tcp(job.listen)) if where == "tcp" else (lambda: _unix(directory / where))
    before = steps_now(job)
    held = [_write(connect, data) for data in GARBAGE.values()]  # left open: half a frame, then silence
    held += [connect() for _ in range(40)]  # forty at once, saying nothing
    try:
        after = steps_now(job, more_than=before)  # attaching meanwhile: served, and the figures are current
        assert after > before
        if where == "tcp":
            assert steps_now(job, more_than=after, token=read_key(job)) > after
    finally:
        for s in held:
            s.close()
    assert running(job.program_pid) and find_job(job.id).alive
    log = (directory / "collector.log").read_text()
    assert "refused a connection that did not prove the job's key" in log


def test_a_viewer_with_the_key_that_sends_a_huge_length_is_dropped_alone(job: JobInfo) -> None:
    from multiprocessing.connection import Client

    connection = Client(str(job_dir(job.id) / VIEWER), family="AF_UNIX", authkey=read_key(job))
    with socket.socket(fileno=os.dup(connection.fileno())) as raw:
        raw.sendall(b"\xff\xff\xff\xff" + struct.pack("!Q", 1 << 40) + b"noise")
    before = steps_now(job)
    assert steps_now(job, more_than=before) > before  # the others are served meanwhile
    connection.close()
