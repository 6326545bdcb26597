"""What a viewer is sent: by the engine child of ``fxtui MODEL`` over its pipe, and by a job's collector over
``viewer.sock``. Typed like the agent's messages (:mod:`fxtui.wire.agent_messages`); the viewer's own commands go
the other way (:mod:`fxtui.wire.viewer_commands`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fxtui.core.snapshot import GraphInfo


@dataclass(frozen=True)
class NewGraph:
    """The graph the snapshots that follow describe: sent when it is new (at the start, and once more when the
    analysis has filled it in); snapshots travel without it."""

    graph: GraphInfo


@dataclass(frozen=True)
class PackedSnapshot:
    """A snapshot, its statistics as columns (:class:`~fxtui.wire.snapshot_packing.Packer`)."""

    packed: Any
    """:data:`~fxtui.wire.snapshot_packing.Packed`."""


@dataclass(frozen=True)
class ProgramEnded:
    """``fxtui run``: the program ended with ``code`` (``-N``: by signal N); said after the last snapshot."""

    code: int


@dataclass(frozen=True)
class ViewerRefused:
    """The collector will not serve this viewer, for ``reason`` (one sentence for the user)."""

    reason: str


#: Every message a viewer is sent.
ViewerMessage = NewGraph | PackedSnapshot | ProgramEnded | ViewerRefused
