"""The table's sort orders: every column, both ways, as its own sort function says."""

from __future__ import annotations

import pytest
from fakes import resnet_snapshot

from fxtui.ui.columns import COLUMNS, MEMORY_COLUMNS, sort_names


@pytest.mark.parametrize("column", [*COLUMNS, *MEMORY_COLUMNS], ids=lambda c: c.key)
@pytest.mark.parametrize("descending", [False, True])
def test_each_column_sorts_by_its_values_with_ties_in_graph_order(column, descending: bool) -> None:  # type: ignore[no-untyped-def]
    snapshot = resnet_snapshot()
    assert snapshot.graph is not None
    nodes, stats = snapshot.graph.nodes, snapshot.nodes
    # The reference order: the column's sort value of each node, ties by graph index.
    keyed = [(column.sort(n, stats.get(n.name)), n.index, n.name) for n in nodes]
    expected = [name for _, _, name in sorted(keyed, key=lambda k: (k[0], k[1] if not descending else -k[1]))]
    if descending:
        expected.reverse()
    assert list(sort_names(nodes, stats, column.key, descending)) == expected
