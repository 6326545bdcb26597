"""What the app reads: a source of snapshots it can send commands to."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from fxtui.core.snapshot import Snapshot
from fxtui.wire.viewer_commands import ViewerCommand


class SnapshotSource(Protocol):
    """Anything that produces snapshots: a live session, the engine child of ``fxtui MODEL``
    (:class:`~fxtui.commands.model_engine.ProcessSource`), a job's collector
    (:class:`~fxtui.wire.attach_source.AttachSource`), a demo, a test fake.

    ``run`` blocks in a worker thread and calls ``publish`` with each new snapshot until a
    :class:`~fxtui.wire.viewer_commands.Stop` arrives; ``send`` is called from the UI thread and
    returns at once (the source acts on the command between runs).
    """

    def run(self, publish: Callable[[Snapshot], None]) -> None: ...

    def send(self, command: ViewerCommand) -> None: ...
