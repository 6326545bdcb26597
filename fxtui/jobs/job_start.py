"""Starting a job's collector in a session of its own, and pruning the directories of jobs that ended long ago."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from fxtui.core.errors import FxtuiError
from fxtui.core.settings import ProgramSettings
from fxtui.wire.job_directory import INFO, KEY, JobInfo, read_info, running
from fxtui.wire.private_dir import private_dir

#: An ended job's directory (its output and last profile) is kept this long, then removed when a job starts.
KEEP_ENDED_S = 7 * 24 * 3600

#: The job's collector, detached (``python -m``).
DAEMON = "fxtui.jobs.daemon"
#: A new collector for a job whose collector died (``python -m``).
ADOPTER = "fxtui.jobs.adopt"


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


def start_detached(settings: ProgramSettings, listen: str = "") -> tuple[JobInfo, Path]:
    """Start a job's collector in a session of its own (a closed terminal does not end it); its info and dir.

    The collector starts the program itself (:mod:`fxtui.jobs.daemon`) and writes ``job.json`` once
    it has; this returns as soon as that file says so (a few seconds at most).
    """
    directory = Path(tempfile.mkdtemp(prefix="job-", dir=private_dir()))
    fd = os.open(directory / KEY, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(os.urandom(32).hex())  # secrets.token_hex(32), without importing hmac and OpenSSL
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
