"""A snapshot on its way between processes: its statistics as columns, names and graph sent only when new.

The graph description (:class:`GraphInfo`) crosses when it is new (at the start, and once more
when the analysis has filled it in); snapshots travel without it and are re-attached on arrival. A
snapshot's node and module statistics travel as columns
(:class:`~fxtui.core.column_table.ColumnTable`): as one object per node, a 50,000-node snapshot took
about a second to unpickle, holding the GIL, so the app could not answer a key meanwhile. The engine
child of ``fxtui MODEL`` and a job's collector both publish this way; the app and ``fxtui attach``
unpack.
"""

from __future__ import annotations

import dataclasses
from multiprocessing.connection import Connection
from typing import Any

from fxtui.core.column_table import ColumnTable, Stored
from fxtui.core.nodes import ModuleStats, NodeStats
from fxtui.core.snapshot import GraphInfo, Snapshot
from fxtui.wire.viewer_messages import NewGraph, PackedSnapshot

#: The statistics that travel as columns: the snapshot's field and the record type.
_TABLES: tuple[tuple[str, type], ...] = (("nodes", NodeStats), ("modules", ModuleStats))
#: A snapshot on the pipe: itself without its tables, and each table's names (None: as last time) and columns.
Packed = tuple[Snapshot, dict[str, tuple[tuple[str, ...] | None, dict[str, Stored]]]]


class Packer:
    """The child's side of the pipe: a snapshot's statistics as columns, their names only when they changed.

    The names (every node's, every module's) are the same in every snapshot of a session;
    pickled each time, 50,000 node names and as many module paths took the app ~40 ms a
    snapshot to unpickle and index.
    """

    def __init__(self) -> None:
        self._names: dict[str, tuple[str, ...]] = {}

    def pack(self, snapshot: Snapshot) -> Packed:
        """``snapshot`` as it crosses the pipe."""
        tables = {}
        for field, kind in _TABLES:
            table = ColumnTable.of(kind, getattr(snapshot, field))
            same = self._names.get(field) == table.names
            self._names[field] = table.names
            tables[field] = (None if same else table.names, table.columns)
        return dataclasses.replace(snapshot, nodes={}, modules={}), tables


class Unpacker:
    """The app's side of the pipe: the snapshot :meth:`Packer.pack` sent.

    Successive tables share one names tuple and its index while the names stay the same:
    the app keeps what it derives from a table's order (which column entry is which row)
    as long as ``names`` is the same object.
    """

    def __init__(self) -> None:
        self._tables: dict[str, ColumnTable[Any]] = {}

    def unpack(self, packed: Packed) -> Snapshot:
        """The snapshot, its statistics as :class:`ColumnTable` s."""
        snapshot, tables = packed
        changes: dict[str, Any] = {}
        for field, kind in _TABLES:
            names, columns = tables[field]
            before = self._tables.get(field)
            table: ColumnTable[Any]
            if names is None and before is not None:
                table = ColumnTable(kind, before.names, columns, before.index)
            else:
                table = ColumnTable(kind, names or (), columns)
            changes[field] = self._tables[field] = table
        return dataclasses.replace(snapshot, **changes)


class Publisher:
    """The child's side of the pipe: each snapshot packed, its graph sent only when it is a new one."""

    def __init__(self, send: Connection) -> None:
        self._send = send
        self._graph: GraphInfo | None = None
        self._packer = Packer()

    def __call__(self, snapshot: Snapshot) -> None:
        if snapshot.graph is not None:
            # Sent again only when it changes (once more, when the analysis has filled it in).
            if snapshot.graph is not self._graph:
                self._send.send(NewGraph(snapshot.graph))
                self._graph = snapshot.graph
            snapshot = dataclasses.replace(snapshot, graph=None)
        self._send.send(PackedSnapshot(self._packer.pack(snapshot)))


class SnapshotReader:
    """The viewer's side of what :class:`Publisher` sends: each snapshot unpacked, with the newest graph."""

    def __init__(self) -> None:
        self.graph: GraphInfo | None = None
        self._unpacker = Unpacker()

    def read(self, message: object) -> Snapshot | None:
        """The snapshot ``message`` carries; None for a graph (kept for the snapshots that follow) and for any
        other message, which the caller reads itself."""
        if isinstance(message, NewGraph):
            self.graph = message.graph
            return None
        if not isinstance(message, PackedSnapshot):
            return None
        snapshot = self._unpacker.unpack(message.packed)
        if self.graph is not None and snapshot.graph is None:
            snapshot = dataclasses.replace(snapshot, graph=self.graph)
        return snapshot
