"""Everything known about the selected node: its FX text, module, shapes, statistics, recent samples."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.reactive import var
from textual.widgets import Static

from fxtui.core.compilation import even_split
from fxtui.core.findings import AtenOp, MachinePeaks, MemorySummary, place_on_roofline
from fxtui.core.nodes import NodeInfo, NodeStats
from fxtui.core.nonfinite import values_fact
from fxtui.core.snapshot import RunError, Snapshot
from fxtui.core.units import format_bytes, format_pct, format_seconds
from fxtui.ui.widgets.field_list import FieldList
from fxtui.ui.widgets.sparkline import Sparkline


def _unsteady(stats: NodeStats) -> str:
    """Why an unsteady median is not the operator's own cost."""
    return (
        f"the median is {stats.median_s / stats.min_s:.1f}× the fastest run: most of it is not "
        "this operator's work (memory, page faults, the machine)"
    )


def _fields(
    info: NodeInfo,
    stats: NodeStats | None,
    peaks: MachinePeaks | None = None,
    others: Mapping[str, NodeStats] | None = None,
    memory: MemorySummary | None = None,
    shapes: tuple[tuple[str, int, float], ...] = (),
    value_warnings: Sequence[str] = (),
) -> list[tuple[str, str]]:
    """Label/value pairs in reading order; fields the engine fills only sometimes appear when present.

    ``others`` (every node's statistics) gives the time of a forward node's gradients; ``memory``
    (the run's memory summary) puts the node's live bytes beside the peak; ``value_warnings`` (the
    graph's) tells an inf masked before any output from one that reaches an output.
    """
    rows: list[tuple[str, str]] = [
        ("target", info.target),
        ("op", f"{info.op}  ({info.type_name})"),
        ("module", info.module_path or "(root)"),
        *_phase_fields(info, others or {}),
        ("inputs", ", ".join(info.input_shapes) or "–"),
        ("output", f"{info.shape or '–'} {info.dtype}".strip()),
    ]
    if shapes:  # a program's node that ran at several output shapes: its row is the most frequent one's
        rows.append(("shapes", " · ".join(f"{s} ×{n} {format_seconds(m)}" for s, n, m in shapes)))
    if fact := values_fact(info, value_warnings):
        rows.append(("values", fact))
    if stats is not None and stats.count:
        rows += [
            ("median", f"{format_seconds(stats.median_s)}   {format_pct(stats.pct)} of {_share_of(info.phase)}"),
            ("p90", format_seconds(stats.p90_s)),
            ("mean", format_seconds(stats.mean_s)),
            ("min / max", f"{format_seconds(stats.min_s)} / {format_seconds(stats.max_s)}"),
            ("IQR", format_seconds(stats.iqr_s) + ("   noisy" if stats.noisy else "")),
            ("samples", str(stats.count)),
        ]
        if stats.unsteady:
            rows.append(("unsteady", _unsteady(stats)))
        if stats.slowest_rank >= 0:  # a distributed job: every rank's median of this node
            rows.append(("ranks", f"rank {stats.rank} shown · fastest {format_seconds(stats.rank_min_s)} · slowest "
                                  f"{format_seconds(stats.rank_max_s)} (rank {stats.slowest_rank})"))  # fmt: skip
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
    if peaks is not None and info.flops is not None and info.bytes_moved and stats is not None and stats.median_s > 0:
        roof = place_on_roofline(info.flops, info.bytes_moved, stats.median_s, peaks)
        if roof is not None:
            rows.append(("roofline", f"{roof.bound}, {roof.intensity:.1f} FLOP/B, {roof.fraction:.0%} of attainable"))
    rows += _memory_fields(info, memory)
    rows += _kernel_fields(info, stats)
    if info.source:
        rows.append(("source", info.source))
    if info.forward_source:
        rows.append(("forward", info.forward_source))
    return rows


def _memory_fields(info: NodeInfo, memory: MemorySummary | None) -> list[tuple[str, str]]:
    """The node's bytes from the memory pass: output, allocated (temporaries), live after against the peak."""
    if info.output_bytes is None:
        return []
    out = info.output_bytes
    rows = [("output bytes", format_bytes(out) + ("   (a view or in place: no new memory)" if out == 0 else ""))]
    if info.alloc_bytes is not None:
        temps = max(info.alloc_bytes - out, 0)
        rows.append(("allocated", f"{format_bytes(info.alloc_bytes)}   {format_bytes(temps)} temporaries"))
    if info.live_bytes is not None:
        live = format_bytes(info.live_bytes)
        if memory is not None and memory.peak_live_bytes > 0:
            share = info.live_bytes / memory.peak_live_bytes
            live += f"   {share:.0%} of the peak ({format_bytes(memory.peak_live_bytes)} after {memory.peak_node})"
        rows.append(("live after", live))
    if info.saved_bytes:
        rows.append(("saved", f"{format_bytes(info.saved_bytes)} kept for backward"))
    return rows


def _kernel_fields(info: NodeInfo, stats: NodeStats | None) -> list[tuple[str, str]]:
    """A compiled model's kernel: the source nodes it fuses, and its time split evenly over them by module."""
    if not info.kernel:
        return []
    rows = [("fuses", ", ".join(info.fused_nodes) or "no source node Inductor named")]
    if stats is not None and stats.count and len(set(info.fused_modules)) > 1:
        split = even_split(info.fused_modules, stats.median_s)
        rows.append(("split", " · ".join(f"{p or '(root)'} {format_seconds(s)}" for p, s in split.items())
                     + "  (evenly per fused node; charged to " + (info.module_path or "the root") + ")"))  # fmt: skip
    return rows


def _phase_fields(info: NodeInfo, others: Mapping[str, NodeStats]) -> list[tuple[str, str]]:
    """In a training step: the node's phase, and a forward node's gradients with their time."""
    if not info.phase:
        return []
    phase = info.phase
    if info.phase == "backward":
        phase += " (charged to " + (info.module_path or "the root: backward (no module)") + ")"
    rows = [("phase", phase)]
    if info.gradients:
        timed = [(name, others[name].median_s if name in others else None) for name in info.gradients]
        known = [t for _, t in timed if t is not None]
        total = f"{format_seconds(sum(known))} in {len(timed)} backward node{'s' if len(timed) != 1 else ''}"
        rows.append(("gradients", total))
        for name, seconds in timed[:6]:
            rows.append(("", f"{format_seconds(seconds) if seconds is not None else '–':>9}  {name}"))
        if len(timed) > 6:
            rows.append(("", f"… {len(timed) - 6} more"))
    return rows


def aten_table(ops: tuple[AtenOp, ...], limit: int = 12) -> Table:
    """The aten operators inside a node: nesting, calls per run, total and self time, share of the node."""
    table = Table(box=None, padding=(0, 1), show_edge=False, pad_edge=False, header_style="bold")
    table.add_column("aten operator", no_wrap=True)
    table.add_column("calls", justify="right")
    table.add_column("total", justify="right")
    table.add_column("self", justify="right")
    table.add_column("of node", justify="right")
    for op in ops[:limit]:
        table.add_row(
            "  " * op.depth + op.name,
            f"{op.calls:g}",
            format_seconds(op.total_s),
            format_seconds(op.self_s),
            f"{op.share:.0%}",
        )
    if len(ops) > limit:
        table.add_row(f"… {len(ops) - limit} more", "", "", "", "")
    return table


def _put(widget: Static, content: Table | Text) -> None:
    """Show ``content`` in ``widget``, laying the screen out again only when the widget's height changes.

    A layout is of the whole screen: at 160×48 it cost ~50 ms, which every cursor key paid
    when the pane changed nodes; numbers refreshing a few times a second paid it too.
    """
    widget.update(content, layout=False)
    size = widget.size
    if not size.width or widget.get_content_height(size, size, size.width) != size.height:
        widget.refresh(layout=True)


class DetailPane(VerticalScroll):
    """The selected node in full; the sparkline shows its recent samples, oldest left."""

    DEFAULT_CSS = """
    DetailPane { height: auto; }
    DetailPane > #detail-title { text-style: bold; color: $accent; }
    DetailPane > #detail-error { color: $error; }
    DetailPane > Sparkline { height: 2; margin: 0 1; }
    DetailPane > #detail-repr { color: $text-muted; }
    DetailPane > #detail-aten { margin: 1 0 1 0; }
    """

    fields: list[tuple[str, str]]
    """The label/value pairs shown now."""

    snapshot: var[Snapshot | None] = var(None, always_update=True)
    """The latest snapshot (the main screen binds it to its own)."""
    selected: var[str | None] = var(None)
    """The node described (bound to the main screen's selection)."""
    explaining: var[frozenset[str]] = var(frozenset())
    """Nodes whose aten breakdown was asked for (bound to the main screen's)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.fields = []
        self._shown_name: str | None = None
        self._aten_shown: tuple[str, bool, bool] | None = None
        self.aten: tuple[AtenOp, ...] | None = None
        """The aten operators shown (None until the node is explained)."""
        self.aten_note = ""
        """What the aten part says when it has no table to show."""

    def _measure_again(self) -> None:
        for child in self.children:
            child.clear_cached_dimensions()
            child.refresh(layout=True)

    def compose(self) -> ComposeResult:
        yield Static(id="detail-title")
        yield Static(id="detail-error")
        yield Sparkline(id="detail-sparkline")
        yield FieldList(id="detail-fields")
        yield Static(id="detail-aten")
        yield Static(id="detail-node-text")
        yield Static(id="detail-repr")

    def watch_snapshot(self) -> None:
        self._show_selected()

    def watch_selected(self) -> None:
        self._show_selected()

    def watch_explaining(self) -> None:
        self._show_selected()

    def _show_selected(self) -> None:
        snapshot, name = self.snapshot, self.selected
        graph = snapshot.graph if snapshot is not None else None
        if snapshot is None or graph is None or name is None or name not in graph.by_name:
            self.show(None, None)
            return
        aten, explaining = snapshot.aten.get(name), name in self.explaining
        self.show(
            graph.node(name),
            snapshot.nodes.get(name),
            snapshot.error,
            peaks=graph.peaks,
            aten=aten,
            explaining=explaining,
            others=snapshot.nodes,
            memory=graph.memory,
            shapes=snapshot.shapes.get(name, ()),
            value_warnings=graph.value_warnings,
        )

    def show(
        self,
        info: NodeInfo | None,
        stats: NodeStats | None,
        error: RunError | None = None,
        *,
        peaks: MachinePeaks | None = None,
        aten: tuple[AtenOp, ...] | None = None,
        explaining: bool = False,
        others: Mapping[str, NodeStats] | None = None,
        memory: MemorySummary | None = None,
        shapes: tuple[tuple[str, int, float], ...] = (),
        value_warnings: Sequence[str] = (),
    ) -> None:
        """Describe ``info`` (or say that nothing is selected).

        ``aten`` is the node's aten breakdown once explained; ``explaining`` says one was asked for;
        ``others`` (every node's statistics) times a forward node's gradients in a training step.
        """
        aten_widget = self.query_one("#detail-aten", Static)
        title = self.query_one("#detail-title", Static)
        error_line = self.query_one("#detail-error", Static)
        sparkline = self.query_one(Sparkline)
        fields_widget = self.query_one("#detail-fields", FieldList)
        node_text = self.query_one("#detail-node-text", Static)
        module_repr = self.query_one("#detail-repr", Static)
        if info is None:
            title.update("no node selected")
            self._aten_shown = None
            for widget in (error_line, aten_widget, node_text, module_repr):
                widget.update("")
            fields_widget.show(())
            sparkline.show(())
            self.fields = []
            self._shown_name = None
            return
        if self._shown_name != info.name:
            title.update(Text(info.name), layout=False)
        show_error = error is not None and error.node == info.name
        if error is not None and show_error:
            error_line.update(Text(f"✖ raised: {error.message}"))
        error_line.display = show_error
        self.fields = _fields(info, stats, peaks, others, memory, shapes, value_warnings)
        fields_widget.show(self.fields)
        samples = stats.recent if stats is not None else ()
        sparkline.show(samples)
        sparkline.display = bool(samples)
        aten_state = (info.name, aten is not None, explaining)
        if aten is not None and (aten_state != self._aten_shown or aten is not self.aten):
            self.aten_note = "" if aten else "aten: no operator (pure Python or a view)"
            _put(aten_widget, aten_table(aten) if aten else Text(self.aten_note))
        elif aten is None and aten_state != self._aten_shown:
            self.aten_note = "aten: working it out…" if explaining else "x: break this node down into aten operators"
            _put(aten_widget, Text(self.aten_note))
        self._aten_shown, self.aten = aten_state, aten
        if self._shown_name is None:
            # The first node can arrive while the pane is still being mounted, and its parts then
            # keep the height of their empty start; measure them again once they are on screen.
            self.call_after_refresh(self._measure_again)
        if self._shown_name != info.name:
            _put(node_text, Text(info.node_text))
            _put(module_repr, Text(info.module_repr))
            module_repr.display = bool(info.module_repr)
        self._shown_name = info.name


def _share_of(phase: str) -> str:
    """What a node's share is of: the run, or a generation's prefill (per call) or decode step (per token)."""
    return {"prefill": "the prefill (per call)", "decode": "a decode step (per token)"}.get(phase, "the run")
