"""A user's jobs as their directories say: what a viewer reads to find a job and prove it may watch it.

Each job has a directory of its own in this user's fxtui directory (0700, :func:`~fxtui.wire.private_dir.private_dir`):
``job.json`` (what runs, its collector's pid, how it is doing; rewritten as it goes),
``key`` (0600: what a viewer proves it may watch with), ``viewer.sock`` (where the collector
serves viewers), ``agent.sock`` (where the program's agents report), ``output.log`` (the
program's output) and, once it ends, ``profile.json`` (its last profile, as ``--json``
writes it). Everything about a job is found from the directory: no registry to keep. The collector makes
the directory and writes it (:mod:`fxtui.jobs.job_start`); viewers and ``fxtui attach`` read it.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from fxtui.core.errors import FxtuiError
from fxtui.wire.private_dir import private_dir

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
            from fxtui.core.program_run import exit_text  # the figures' module: not for every reader of a job's files

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


def running(pid: int) -> bool:
    """True while process ``pid`` runs (a zombie, ended but not yet waited for, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True
