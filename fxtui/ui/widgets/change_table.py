"""A what-if's changes as a table: per node or per module, before → after, largest absolute change first."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import var
from textual.widgets import DataTable

from fxtui.core.findings import WhatIf
from fxtui.core.what_if_text import module_rows, node_rows

#: Column headers per kind. The node table leaves the module path out: node names say it (``layer1_0_conv1``,
#: ``encoder.layer.0.attention.self.query · linear``), and the module table has the modules.
HEADERS = {
    "nodes": ("node", "before", "after", "change", "after ÷ before"),
    "modules": ("module path", "before", "after", "change", "after ÷ before"),
}


class ChangeTable(DataTable[str | Text]):
    """The highlighted what-if's per-node (``kind == "nodes"``) or per-module changes.

    Driven by two reactives: ``result`` (the what-if shown) and ``kind``. Rows are keyed by
    node name or module path, so the cursor stays on its row when a remeasured result comes in.
    """

    DEFAULT_CSS = """
    ChangeTable { height: 1fr; }
    """

    result: var[WhatIf | None] = var(None, always_update=True, init=False)
    kind: var[str] = var("nodes", init=False)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)

    def watch_result(self) -> None:
        self._fill()

    def watch_kind(self) -> None:
        self._fill()

    def on_mount(self) -> None:
        self._fill()

    def _fill(self) -> None:
        keep = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value if self.row_count else None
        self.clear(columns=True)
        self.add_columns(*HEADERS[self.kind])
        result = self.result
        if result is None or not result.measured:
            return
        if self.kind == "nodes":
            keys = [c.name for c in result.nodes]
            rows = [row[:1] + row[2:] for row in node_rows(result.nodes)]
        else:
            keys = [c.path or "(root)" for c in result.modules]
            rows = module_rows(result.modules)
        for key, row in zip(keys, rows, strict=True):
            change = row[-2]
            styled = Text(change, style="bold" if change.startswith("−") else "italic")
            self.add_row(*row[:-2], styled, row[-1], key=key)
        if keep in keys:
            self.move_cursor(row=keys.index(keep), animate=False)
