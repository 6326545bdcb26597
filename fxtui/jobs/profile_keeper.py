"""A job's latest profile kept on disk while it runs, so a collector's death never takes the figures with it.

The collector hands :class:`ProfileKeeper` a snapshot every few seconds (when the figures changed);
a thread of its own turns it into the report ``fxtui attach`` opens (``--json``'s format) and
writes it whole (a temporary file renamed over the last one: a reader never sees half of it). A
snapshot that comes while the last one is still being written replaces the waiting one: at
most one is held. The thread runs in the collector's process, which yields the cores to the
program (``nice``); no ``fsync``: the file has to outlive the collector, not the machine.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

from fxtui.core.snapshot import Snapshot


class ProfileKeeper:
    """Writes the latest snapshot it was given to ``path`` (as ``fxtui run --json`` does), off the caller's
    thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._waiting: Snapshot | None = None
        self._ready = threading.Condition()
        self._writing = threading.Lock()
        self.failed = ""
        """Why the last write failed (a full disk), once one has."""
        threading.Thread(target=self._run, daemon=True, name="fxtui-profile-keeper").start()

    def keep(self, snapshot: Snapshot) -> None:
        """Write ``snapshot`` soon (the one waiting, if any, is replaced)."""
        with self._ready:
            self._waiting = snapshot
            self._ready.notify()

    def save_now(self, snapshot: Snapshot) -> None:
        """Write ``snapshot`` before returning (the last one: the job ended, or the collector goes)."""
        with self._ready:
            self._waiting = None
        self._write(snapshot)

    def _run(self) -> None:
        while True:
            with self._ready:
                while self._waiting is None:
                    self._ready.wait()
                snapshot, self._waiting = self._waiting, None
            self._write(snapshot)

    def _write(self, snapshot: Snapshot) -> None:
        from fxtui.report.api import Report

        with self._writing:
            tmp = self.path.with_name(f".{self.path.name}.tmp")
            try:
                text = Report.from_snapshot(snapshot).to_json()
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
                os.replace(tmp, self.path)
                self.failed = ""
            except Exception as e:  # a profile that cannot be kept costs only itself
                self.failed = f"{type(e).__name__}: {e}"
                with contextlib.suppress(OSError):
                    tmp.unlink()
