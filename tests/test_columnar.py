"""Node and module statistics as columns: the same mapping as a dict of records, pickled as arrays."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from fxtui.core.column_table import ColumnTable, column_map, column_total
from fxtui.core.nodes import ModuleStats, NodeStats
from fxtui.core.snapshot import Snapshot, State
from fxtui.ui.demo.demo_source import make_snapshot, synthetic_graph
from fxtui.wire.snapshot_packing import Packer, Unpacker

pytestmark = pytest.mark.unit


def _stats(i: int) -> NodeStats:
    return NodeStats(
        count=10 + i,
        median_s=1e-6 * (i + 1),
        mean_s=1.1e-6 * (i + 1),
        p90_s=2e-6,
        min_s=0.5e-6,
        max_s=3e-6,
        iqr_s=1e-7,
        pct=0.5 * i,
        recent=tuple(1e-6 * k for k in range(i % 4)),  # lengths differ, one is empty
    )


def test_a_table_reads_back_every_record_as_it_was() -> None:
    records = {f"n{i}": _stats(i) for i in range(7)}
    table = ColumnTable.of(NodeStats, records)
    assert len(table) == 7 and list(table) == list(records)
    assert dict(table) == records
    assert table["n3"] is table["n3"]  # made once
    assert "n3" in table and "nope" not in table and table.get("nope") is None
    assert list(table.column("median_s")) == [r.median_s for r in records.values()]
    assert dict(column_map(table, "count")) == {k: r.count for k, r in records.items()}
    assert column_map(table, "count").get("n2") == 12 and column_map(table, "count").get("nope", -1) == -1
    assert column_total(table, "median_s") == sum(r.median_s for r in records.values())
    assert column_map(records, "count") == dict(column_map(table, "count"))  # a plain dict reads the same


@dataclasses.dataclass(frozen=True, slots=True)
class Odd:
    label: str
    maybe: float | None
    mixed: int


def test_fields_that_are_not_numbers_travel_as_they_are() -> None:
    records = {"a": Odd("x", 1.0, 1), "b": Odd("y", None, 2**70)}
    table = pickle.loads(pickle.dumps(ColumnTable.of(Odd, records)))
    assert dict(table) == records


def _piped(packer: Packer, unpacker: Unpacker, snapshot: Snapshot) -> Snapshot:
    return unpacker.unpack(pickle.loads(pickle.dumps(packer.pack(snapshot), protocol=pickle.HIGHEST_PROTOCOL)))


def test_a_snapshot_crosses_the_pipe_as_columns_and_reads_the_same() -> None:
    graph, medians = synthetic_graph(500)
    snapshot = dataclasses.replace(make_snapshot(graph, medians), graph=None)
    wire = _piped(Packer(), Unpacker(), snapshot)
    assert isinstance(wire.nodes, ColumnTable) and isinstance(wire.modules, ColumnTable)
    assert dict(wire.nodes) == dict(snapshot.nodes)
    assert dict(wire.modules) == dict(snapshot.modules)
    assert wire.attributed_s == snapshot.attributed_s
    assert dataclasses.replace(wire, nodes={}, modules={}) == dataclasses.replace(snapshot, nodes={}, modules={})
    empty = _piped(Packer(), Unpacker(), Snapshot(None, State.LOADING))
    assert not empty.nodes and not empty.modules


def test_the_names_cross_once_and_successive_snapshots_share_them() -> None:
    graph, medians = synthetic_graph(200)
    packer, unpacker = Packer(), Unpacker()
    first, second = (_piped(packer, unpacker, make_snapshot(graph, medians, seq=s, scale=s)) for s in (1, 2))
    assert packer.pack(make_snapshot(graph, medians))[1]["nodes"][0] is None  # unchanged names stay behind
    assert first.nodes.names is second.nodes.names and first.nodes.names == tuple(first.nodes)
    assert first.modules.names is second.modules.names
    assert second.nodes[graph.nodes[3].name].median_s == 2 * first.nodes[graph.nodes[3].name].median_s
    assert isinstance(second.modules, ColumnTable) and second.modules[""].__class__ is ModuleStats
    reset = _piped(packer, unpacker, Snapshot(None, State.PAUSED, seq=3))  # the names change: they cross again
    assert not reset.nodes
    again = _piped(packer, unpacker, make_snapshot(graph, medians, seq=4))
    assert dict(again.nodes) == dict(make_snapshot(graph, medians).nodes)
