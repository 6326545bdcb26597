"""A user's jobs: programs running under ``fxtui run`` that a viewer can attach to, and their directories.

Each job has a directory of its own in this user's fxtui directory (0700, :func:`private_dir`):
``job.json`` (what runs, its collector's pid, how it is doing; rewritten as it goes),
``key`` (0600: what a viewer proves it may watch with), ``viewer.sock`` (where the collector
serves viewers), ``agent.sock`` (where the program's agents report), ``output.log`` (the
program's output) and, once it ends, ``profile.json`` (its last profile, as ``--json``
writes it). Everything about a job is found from the directory: no registry to keep.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from fxtui.core.errors import FxtuiError
from fxtui.core.program_run import exit_text
from fxtui.core.settings import ProgramSettings
from fxtui.jobs.launch import private_dir
from fxtui.jobs.pid_watch import running

#: An ended job's directory (its output and last profile) is kept this long, then removed when a job starts.
KEEP_ENDED_S = 7 * 24 * 3600

#: The job's collector, detached (``python -m``).
DAEMON = "fxtui.jobs.daemon"
#: A new collector for a job whose collector died (``python -m``).
ADOPTER = "fxtui.jobs.adopt"

#: A job's files.
INFO, KEY, VIEWER, LOG, PROFILE = "job.json", "key", "viewer.sock", "output.log", "profile.json"


@dataclass(frozen=True)
class JobInfo:
    """What ``job.json`` says of a job."""

    id: str
    command: tuple[str, ...]
    cwd: str
    pid: int
    """The collector's process (the job's own process group and session)."""
    program_pid: int = 0
    started: float = 0.0
    steps: int = 0
    running: bool = True
    exit_code: int | None = None
    listen: str = ""
    """Where the collector also listens on TCP (``HOST:PORT``), when asked."""
    agents: str = ""
    """Where agents of ranks on other servers report (``HOST:PORT``), when the collector listens on TCP."""

    @property
    def alive(self) -> bool:
        """The collector still runs (a job whose collector was killed is not, nor one that ended and waits, a
        zombie, for the process that started it to read its status)."""
        return bool(self.pid) and running(self.pid)

    def line(self) -> str:
        """One line for a list of jobs: id, what runs, pid, when it started, steps so far, state."""
        started = time.strftime("%H:%M:%S", time.localtime(self.started)) if self.started else "?"
        if not self.running:
            state = exit_text(self.exit_code)
        else:
            state = "running" if self.alive else "lost (its collector is gone)"
        where = f"pid {self.program_pid or self.pid}"
        return f"{self.id}  {' '.join(self.command)}  {where}  started {started}  {self.steps} steps  {state}"


def job_dir(job_id: str) -> Path:
    return private_dir() / f"job-{job_id}"


def read_info(directory: Path) -> JobInfo | None:
    """The job in ``directory``; None when it is not one (or cannot be read)."""
    try:
        data = json.loads((directory / INFO).read_text(encoding="utf-8"))
        data["command"] = tuple(data["command"])
        return JobInfo(**data)
    except (OSError, ValueError, TypeError, KeyError):
        return None


def write_info(directory: Path, info: JobInfo) -> None:
    """Rewrite ``job.json`` whole (a viewer listing jobs never reads half of it)."""
    tmp = directory / f".{INFO}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(asdict(info), f)
    os.replace(tmp, directory / INFO)


def list_jobs(running_only: bool = False) -> list[JobInfo]:
    """This user's jobs, newest first."""
    jobs = [info for d in private_dir().glob("job-*") if (info := read_info(d)) is not None]
    if running_only:
        jobs = [j for j in jobs if j.running and j.alive]
    return sorted(jobs, key=lambda j: -j.started)


def prune_ended(keep_s: float = KEEP_ENDED_S, now: float | None = None) -> list[str]:
    """Remove the directories of this user's jobs that ended more than ``keep_s`` ago; their ids.

    A job has ended when its collector is gone (it finished, or was killed: a lost job); its age is the time
    since its ``job.json`` was last written (the collector's last word). Jobs whose collector runs and
    directories that are not jobs are left alone; the directory of an ``fxtui run --once`` whose collector
    was killed goes after as long.
    """
    import shutil

    now = time.time() if now is None else now
    removed = []
    for directory in private_dir().glob("run-*"):  # fxtui run --once's, left by a collector that was killed
        with contextlib.suppress(OSError):
            if now - directory.stat().st_mtime > keep_s and not _answers(directory / "agent.sock"):
                shutil.rmtree(directory)
    for directory in private_dir().glob("job-*"):
        info = read_info(directory)
        if info is None or info.alive or (info.running and info.program_pid and running(info.program_pid)):
            continue  # a collector runs, or a lost job's program does (its output still goes there)
        with contextlib.suppress(OSError):
            if now - (directory / INFO).stat().st_mtime > keep_s:
                shutil.rmtree(directory)
                removed.append(info.id)
    return removed


def _answers(path: Path) -> bool:
    """Something listens on the socket ``path`` (a collector still running)."""
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def find_job(text: str) -> JobInfo:
    """The job named by ``text``: its id (or the start of it), or its program's or collector's pid."""
    path = Path(text)
    if path.is_dir():
        info = read_info(path)
        if info is None:
            raise FxtuiError(f"{text} is not an fxtui job's directory")
        _owned(path)
        return info
    jobs = list_jobs()
    found = [j for j in jobs if j.id.startswith(text) or str(j.pid) == text or str(j.program_pid) == text]
    if not found:
        raise FxtuiError(f"no job {text!r} of this user's (fxtui attach lists them)")
    if len(found) > 1:
        raise FxtuiError(f"{text!r} names {len(found)} jobs: " + ", ".join(j.id for j in found))
    return found[0]


def _owned(path: Path) -> None:
    if path.stat().st_uid != os.getuid():
        raise FxtuiError(f"{path} belongs to another user: only its owner may watch or steer that job")


def read_key(job: JobInfo) -> bytes:
    """The key a viewer proves itself with; one sentence when it cannot be read (another user's job)."""
    try:
        return bytes.fromhex((job_dir(job.id) / KEY).read_text().strip())
    except PermissionError:
        raise FxtuiError(f"job {job.id} belongs to another user: only its owner may watch or steer it") from None
    except (OSError, ValueError):
        raise FxtuiError(f"job {job.id} has no readable key: its directory is damaged") from None


def start_detached(settings: ProgramSettings, listen: str = "") -> tuple[JobInfo, Path]:
    """Start a job's collector in a session of its own (a closed terminal does not end it); its info and dir.

    The collector starts the program itself (:mod:`fxtui.jobs.daemon`) and writes ``job.json`` once
    it has; this returns as soon as that file says so (a few seconds at most).
    """
    directory = Path(tempfile.mkdtemp(prefix="job-", dir=private_dir()))
    fd = os.open(directory / KEY, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32))
    settings_path = directory / "settings.json"
    settings_path.write_text(json.dumps({**asdict(settings), "listen": listen, "cwd": os.getcwd()}))
    info = start_collector(directory, DAEMON, "the job's collector", lambda info, pid: True)
    return info, directory


def start_collector(
    directory: Path,
    module: str,
    who: str,
    ready: Callable[[JobInfo, int], bool],
    *,
    given_up: Callable[[JobInfo], bool] = lambda info: False,
) -> JobInfo:
    """Start a collector (``python -m MODULE DIRECTORY``) in a session of its own, its own messages to the job's
    ``collector.log``, and return the job as its ``job.json`` says once ``ready(info, collector's pid)``.

    When the collector ends first: the job as it is if ``given_up(info)`` (another collector is there), else one
    sentence naming ``who``."""
    log = open(directory / "collector.log", "ab")  # noqa: SIM115 (the collector's own messages, if any)
    daemon = subprocess.Popen(
        [sys.executable, "-m", module, str(directory)],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        start_new_session=True,
        close_fds=True,
    )
    log.close()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        info = read_info(directory)
        if info is not None and ready(info, daemon.pid):
            return info
        if daemon.poll() is not None:
            if info is not None and given_up(info):
                return info
            raise FxtuiError(f"{who} did not start (see {directory / 'collector.log'})")
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        daemon.kill()
    raise FxtuiError(f"{who} did not start within a minute (see {directory / 'collector.log'})")
