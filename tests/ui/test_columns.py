"""The table's sort orders: every column, both ways, as its own sort function says."""

from __future__ import annotations

import random

import numpy as np
import pytest
from fakes import resnet_snapshot

from fxtui.core.column_table import ColumnTable
from fxtui.core.columns import APP_MEMORY, APP_TIME, BY_KEY, Column, no_rates
from fxtui.core.nodes import NodeStats
from fxtui.ui.selection import Selection
from fxtui.ui.table_sort import sort_names

pytestmark = pytest.mark.unit

#: The rows a table is handed: every node; a filter's (a Selection, as the app's filters give);
#: some of them out of graph order (a caller's list).
ROWS = ["all", "selection", "shuffled"]


@pytest.mark.parametrize("column", [BY_KEY[k] for k in dict.fromkeys((*APP_TIME, *APP_MEMORY))], ids=lambda c: c.key)
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("stored", ["records", "columns"])
def test_each_column_sorts_with_ties_in_graph_order(column: Column, descending: bool, rows: str, stored: str) -> None:
    snapshot = resnet_snapshot()
    graph = snapshot.graph
    assert graph is not None
    rng = random.Random(7)
    nodes = graph.nodes
    if rows == "selection":
        nodes = Selection.of_mask(graph, np.array([rng.random() < 0.5 for _ in graph.nodes]))
    elif rows == "shuffled":
        nodes = rng.sample(list(nodes), len(nodes) // 2)
    # As the app receives them (one array per field, sorted in array operations), or as records.
    stats = ColumnTable.of(NodeStats, snapshot.nodes) if stored == "columns" else dict(snapshot.nodes)
    # The reference order: the column's sort value of each node, ties by graph index.
    keyed = [(column.sort(n, stats.get(n.name), no_rates()), n.index, n.name) for n in nodes]
    expected = [name for _, _, name in sorted(keyed, key=lambda k: (k[0], k[1] if not descending else -k[1]))]
    if descending:
        expected.reverse()
    assert list(sort_names(nodes, stats, column.key, descending)) == expected


def test_a_selection_reads_as_the_graphs_nodes() -> None:
    graph = resnet_snapshot().graph
    assert graph is not None
    mask = np.array([n.op == "call_module" for n in graph.nodes])
    chosen = Selection.of_mask(graph, mask)
    expected = [n for n in graph.nodes if n.op == "call_module"]
    assert list(chosen) == expected and len(chosen) == len(expected)
    assert chosen[3] is expected[3] and chosen[-1] is expected[-1]
    assert list(chosen[2:9:3]) == expected[2:9:3] and list(chosen[::-1]) == expected[::-1]
    assert chosen.names == tuple(n.name for n in expected)
