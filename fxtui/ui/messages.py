"""App-level messages."""

from __future__ import annotations

from textual.message import Message

from fxtui.core.snapshot import Snapshot


class SnapshotReady(Message):
    """The source published ``snapshot``; posted from the worker thread, applied on the UI thread.

    A newer snapshot supersedes an older one still queued, so a UI that falls behind
    skips to the latest numbers instead of replaying a backlog.
    """

    def __init__(self, snapshot: Snapshot) -> None:
        super().__init__()
        self.snapshot = snapshot

    def can_replace(self, message: Message) -> bool:
        """A newer snapshot queued behind this one makes this one worthless."""
        return isinstance(message, SnapshotReady)
