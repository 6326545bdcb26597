"""Everything known about the selected node: its FX text, module, shapes, statistics, recent samples."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Sparkline, Static

from fxtui.engine.snapshot import NodeInfo, NodeStats, RunError
from fxtui.engine.units import format_pct, format_seconds


def _fields(info: NodeInfo, stats: NodeStats | None) -> list[tuple[str, str]]:
    """Label/value pairs in reading order; fields the engine may fill later appear when present."""
    rows: list[tuple[str, str]] = [
        ("target", info.target),
        ("op", f"{info.op}  ({info.type_name})"),
        ("module", info.module_path or "(root)"),
        ("inputs", ", ".join(info.input_shapes) or "–"),
        ("output", f"{info.shape or '–'} {info.dtype}".strip()),
    ]
    if stats is not None and stats.count:
        rows += [
            ("median", f"{format_seconds(stats.median_s)}   {format_pct(stats.pct)} of the run"),
            ("p90", format_seconds(stats.p90_s)),
            ("mean", format_seconds(stats.mean_s)),
            ("min / max", f"{format_seconds(stats.min_s)} / {format_seconds(stats.max_s)}"),
            ("IQR", format_seconds(stats.iqr_s) + ("   noisy" if stats.noisy else "")),
            ("samples", str(stats.count)),
        ]
    else:
        rows.append(("median", "not measured yet"))
    if info.params is not None:
        rows.append(("params", f"{info.params:,}"))
    if info.flops is not None:
        rows.append(("FLOPs", f"{info.flops:,.0f}"))
        if stats is not None and stats.median_s > 0:
            rows.append(("GFLOP/s", f"{info.flops / stats.median_s / 1e9:.2f}"))
    if info.bytes_moved is not None:
        rows.append(("bytes", f"{info.bytes_moved:,.0f}"))
    if info.source:
        rows.append(("source", info.source))
    return rows


class DetailPane(VerticalScroll):
    """The selected node in full; the sparkline shows its recent samples, oldest left."""

    DEFAULT_CSS = """
    DetailPane { height: auto; }
    DetailPane > #detail-title { text-style: bold; color: $accent; }
    DetailPane > #detail-error { color: $error; }
    DetailPane > Sparkline { height: 2; margin: 0 1; }
    DetailPane > #detail-repr { color: $text-muted; }
    """

    fields: list[tuple[str, str]]
    """The label/value pairs shown now."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.fields = []
        self._shown_name: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="detail-title")
        yield Static(id="detail-error")
        yield Sparkline([], id="detail-sparkline")
        yield Static(id="detail-fields")
        yield Static(id="detail-node-text")
        yield Static(id="detail-repr")

    def show(self, info: NodeInfo | None, stats: NodeStats | None, error: RunError | None = None) -> None:
        """Describe ``info`` (or say that nothing is selected)."""
        title = self.query_one("#detail-title", Static)
        error_line = self.query_one("#detail-error", Static)
        sparkline = self.query_one(Sparkline)
        fields_widget = self.query_one("#detail-fields", Static)
        node_text = self.query_one("#detail-node-text", Static)
        module_repr = self.query_one("#detail-repr", Static)
        if info is None:
            title.update("no node selected")
            for widget in (error_line, fields_widget, node_text, module_repr):
                widget.update("")
            sparkline.data = []
            self.fields = []
            self._shown_name = None
            return
        # Re-layout only when a part can change height: numbers refreshing a few times a second
        # would otherwise lay out the whole screen each time.
        if self._shown_name != info.name:
            title.update(Text(info.name), layout=False)
        show_error = error is not None and error.node == info.name
        if error is not None and show_error:
            error_line.update(Text(f"✖ raised: {error.message}"))
        error_line.display = show_error
        table = Table.grid(padding=(0, 1))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        fields = _fields(info, stats)
        for label, value in fields:
            table.add_row(label, Text(value))
        same_shape = [f[0] for f in fields] == [f[0] for f in self.fields] and self._shown_name == info.name
        self.fields = fields
        fields_widget.update(table, layout=not same_shape)
        samples = list(stats.recent) if stats is not None else []
        sparkline.data = samples
        sparkline.display = bool(samples)
        if self._shown_name != info.name:
            node_text.update(Text(info.node_text))
            module_repr.update(Text(info.module_repr))
            module_repr.display = bool(info.module_repr)
        self._shown_name = info.name
