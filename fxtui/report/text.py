"""Reports as text for the terminal: the header, node and module tables, hints, aten.

Pure functions of a :class:`~fxtui.report.api.Report` (or of findings), shared by the
headless command and the Python API; the hint and aten sentences are the ones the app shows.
Given a ``width`` (the terminal's), the header wraps and the tables fit it
(:mod:`fxtui.report.table_fit`); without one every line is whole, as files and pipes want it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from fxtui.core import memory_policy
from fxtui.core.captures import capture_mode
from fxtui.core.columns import BY_KEY, Column, check_extra, headless_columns
from fxtui.core.compilation import fused_text
from fxtui.core.filters import FilterSpec, path_matches
from fxtui.core.generation import phase_share
from fxtui.core.nodes import NodeInfo, Spread
from fxtui.core.program_figures import lead_waiting
from fxtui.core.rows import ModuleRow
from fxtui.core.snapshot import page_fault_warning
from fxtui.core.step_waiting import StepWaiting
from fxtui.core.units import format_bytes, format_pct, format_range, format_ratio, format_seconds
from fxtui.report.data import ReportData
from fxtui.report.program_text import program_lines
from fxtui.report.table_fit import Col, fit_table, wrap_line
from fxtui.report.waiting_text import unattributed_line


def header(report: ReportData, width: int | None = None) -> str:
    """The lines above the table: model, inputs, threads, runs and the run figures; each wrapped within
    ``width`` under its label when given."""
    r = report
    run = "step" if r.training else "run"
    sp = r.spreads
    disturbed = r.disturbance.line() if r.disturbance else ""
    if r.program is not None:
        lines = program_lines(r)
    elif r.generation is not None:
        lines = [
            f"model      {r.model}   prompt {', '.join(r.inputs)}   dtype {r.dtype}   threads {r.threads}",
            f"runs       {r.runs} profiled generate() calls, each interleaved with an uninstrumented one; a prefill "
            "node's time is per call, a decode node's per token (% of phase: of the profiled prefill or mean step)",
            *r.generation.lines(r.phases),
        ]
    else:
        lines = [
            f"model      {r.model}   inputs {', '.join(r.inputs)}   dtype {r.dtype}   threads {r.threads}",
            f"runs       {r.runs} profiled {'training steps' if r.training else 'runs'}, "
            f"each interleaved with an uninstrumented {run}; ranges are the steps' p25–p75",
            f"{run:<10} {format_seconds(r.run_median_s)}{_range(sp.run, format_seconds)} profiled median   "
            f"{format_seconds(r.eager_median_s)}{_range(sp.eager, format_seconds)} uninstrumented median",
            # Each figure is a ratio of medians; its range is of another statistic, each step's own ratio, and can
            # lie beside the figure ("fidelity 0.907 (0.920–1.002)" confused): the line says which is which.
            f"fidelity   {format_ratio(r.fidelity)} = Σ node medians ÷ uninstrumented median"
            f"{_step_ratios(sp.fidelity)}",
            f"overhead   {format_ratio(r.overhead)} = profiled median ÷ uninstrumented median"
            f"{_step_ratios(sp.overhead)}",
        ]
    lines += [
        *([f"disturbed  {disturbed}"] if disturbed else []),
        *(
            []
            if r.generation is not None  # each phase's own fidelity says it
            else [
                unattributed_line(_lead_waiting(r), r.eager_median_s)
                or _unattributed_line(
                    r.unattributed_s, r.capture, disturbed=bool(r.disturbance and r.disturbance.affects_figures)
                )
            ]
        ),
        *(train_lines(r) if r.program is None else []),
        *capture_lines(r),
        *(r.compiled.lines(r.eager_median_s, r.fidelity, r.overhead) if r.compiled is not None else []),
    ]
    if r.peaks:
        lines.append(
            f"machine    {r.peaks.gflops:.0f} GFLOP/s matmul, {r.peaks.gbytes_per_s:.0f} GB/s copy "
            f"at {r.peaks.threads} threads (the roofline for compute-/memory-bound)"
        )
    if r.thread_info:
        lines.append("threads    " + r.thread_info[0].removeprefix("threads: "))
    if r.leaf_modules:
        lines.append("leaves     kept whole (untraceable code): " + ", ".join(r.leaf_modules))
    if r.failures:
        lines.append(f"failures   {r.failures} runs failed; last: {r.last_error}")
    lines.extend(memory_lines(r))
    if r.malloc:
        lines.append("memory     " + memory_policy.describe(r.malloc))
    faults = page_fault_warning(r.faults_per_run, r.malloc, (row.info for row in r.rows))
    lines.extend(f"warning    {w}" for w in (*r.warnings, *r.thread_warnings, *([faults] if faults else [])))
    return "\n".join(wrap_line(line, width) for line in lines)


#: How each column of the node table shortens on a narrow terminal, and which are left out first (highest
#: ``drop`` first): the FX op type, then a module path the node's name repeats, then the widest details.
_LAYOUT: dict[str, Col] = {
    "op": Col("", cut="end", drop=9),
    "module": Col("", cut="start", drop=8, floor=16),
    "source": Col("", cut="start", drop=7),
    "shape": Col("", cut="never", drop=6),
    "target": Col("", cut="end", drop=5),
    "marks": Col("", cut="items", drop=4),
    "node": Col("", cut="start", floor=16),
    "operation": Col("", cut="end", floor=12),
    "phase": Col("", cut="never"),
}
#: The marks column's header: why a median deserves caution (noisy, or far above the fastest run).
_NOTE = replace(BY_KEY["marks"], header="note")
#: Captures whose nodes are ATen ops named ``module · op``: the module and the op are shown once each.
_OPS_BY_MODULE = frozenset({"eager", "generate"})


def _own_name(info: NodeInfo) -> str:
    """A node's name without the module path it starts with, nor the phase the table says beside it
    (``layer1.0 · relu`` → ``relu``; ``h.0.attn · linear (decode)`` → ``linear``)."""
    prefix = f"{info.module_path} · "
    name = info.name[len(prefix) :] if info.module_path and info.name.startswith(prefix) else info.name
    return name.removesuffix(f" ({info.phase})") if info.phase else name


#: An ATen node's op, named once beside its module (``∇mm #2``, ``addmm``; a kernel by its own name).
_OPERATION = Column(
    "operation", "op", lambda i, _s, _r: _own_name(i), lambda i, _s, _r: i.name, numeric=False, fact="name"
)


def node_columns(report: ReportData, columns: Sequence[str] = ()) -> tuple[Column, ...]:
    """The node table's columns: :data:`fxtui.core.columns.HEADLESS`, then ``columns``, then the note.

    A program's rows (and an eager capture's) are ATen ops named ``module · op``: their table shows the
    module and the op once each, with no FX op type (every row is ``call_function``), no node name that
    repeats them and no target (``aten.addmm`` says the op again); a program's share is of its step.
    """
    shown = headless_columns(report.training, columns, generating=report.generation is not None)
    if not capture_mode(report.capture).graphs:  # every node is an ATen op: no FX op type to tell them apart
        shown = tuple(c for c in shown if c.key != "op")
    if report.program is not None or report.capture in _OPS_BY_MODULE:
        rest = [c for c in shown if c.key not in ("node", "target", "module", "phase")]
        phase = [c for c in shown if c.key == "phase"]
        shown = (*phase, BY_KEY["module"], _OPERATION, *rest)
        if report.program is not None:
            shown = tuple(replace(c, header="% of step") if c.key == "pct" else c for c in shown)
    return tuple(_NOTE if c.key == "marks" else c for c in shown)


def table(
    report: ReportData,
    sort: str = "median",
    top: int | None = 20,
    spec: FilterSpec | None = None,
    columns: Sequence[str] = (),
    width: int | None = None,
) -> str:
    """The node table: :data:`fxtui.core.columns.HEADLESS`, then ``columns`` (any of
    :data:`fxtui.core.columns.EXTRA`: ``flops``, ``gflops``, ``bound`` …), then the note; within ``width``
    when given."""
    check_extra(columns)
    shown = node_columns(report, columns)
    rows = report.select(spec, sort, top)
    body = [[c.text(r.info, r.stats, r.rates) for c in shown] for r in rows]
    # In a table of ATen ops the module is half of each one's name: never left out.
    named_by_module = any(c is _OPERATION for c in shown)
    cols = [replace(_col(c), drop=0, floor=12) if named_by_module and c.key == "module" else _col(c) for c in shown]
    text = fit_table(body, cols, width)
    total = len(report.select(spec))
    if len(rows) < total:
        text += f"\n… {total - len(rows)} more nodes (--top 0 shows all)"
    return text


def _col(column: Column) -> Col:
    """How ``column`` lays out in a table that must fit."""
    layout = _LAYOUT.get(column.key)
    if layout is not None:
        return replace(layout, header=column.header)
    return Col(column.header, numeric=column.numeric, cut="end" if not column.numeric else "never")


def module_table(report: ReportData, top: int | None = 20, path: str = "", width: int | None = None) -> str:
    """Module paths by inclusive time (a compiled model's by the larger of its eager and compiled time): class,
    inclusive, self, % of run, nodes, GFLOP/s; within ``width`` when given."""
    mods = [m for m in report.modules if path_matches(m.path, path)] if path else list(report.modules)
    if report.generation is not None:
        return generate_module_table(report, mods, top, width)
    if report.compiled is not None:  # by the larger time: a module fused whole into its parent's kernel has 0 compiled
        mods.sort(key=lambda m: (-max(m.inclusive_s, m.eager_s or 0.0), m.path))
    else:
        mods.sort(key=lambda m: (-m.inclusive_s, m.path))
    shown = mods[:top] if top else mods
    body = [
        [
            m.path or "(root)",
            m.class_name + (" [leaf]" if m.leaf_fallback else ""),
            format_seconds(m.inclusive_s),
            format_seconds(m.self_s),
            format_pct(m.pct),
            *([format_seconds(m.forward_s), format_seconds(m.backward_s)] if report.training else []),
            m.nodes,
            *([] if report.program is not None else ["–" if m.gflops_s is None else f"{m.gflops_s:.1f}"]),
            *([format_bytes(m.output_bytes), format_bytes(m.peak_live_bytes)] if report.memory else []),
            *([format_bytes(m.saved_bytes)] if report.memory and report.training else []),
            *(_eager_cells(m) if report.compiled is not None else []),
        ]
        for m in shown
    ]
    share = "% of step" if report.program is not None else "% of run"
    cols = [_MODULE_PATH, _CLASS, *_figures("inclusive", "self", share)]
    cols += _figures("forward", "backward") if report.training else []
    cols += _figures("nodes")
    # FLOPs are counted on FX graphs; a program's ATen ops have none.
    cols += [] if report.program is not None else _figures("GFLOP/s")
    cols += _figures("output", "peak live") if report.memory else []
    cols += _figures("saved") if report.memory and report.training else []
    cols += [*_figures("eager"), Col("compiled ÷ eager", cut="end")] if report.compiled is not None else []
    text = fit_table(body, cols, width)
    if len(shown) < len(mods):
        text += f"\n… {len(mods) - len(shown)} more modules (--top 0 shows all)"
    return text


_MODULE_PATH = Col("module path", cut="start", floor=16)
_CLASS = Col("class", cut="end", drop=1)


def _figures(*headers: str) -> list[Col]:
    return [Col(h, numeric=True) for h in headers]


def _eager_cells(m: ModuleRow) -> list[str]:
    """A compiled model's module: its eager time, and its compiled time as a multiple of it."""
    if not m.eager_s:
        return ["–", "–"]
    if not m.nodes:  # no kernel of its own: where its work went
        return [format_seconds(m.eager_s), fused_text(m.fused_into)]
    return [format_seconds(m.eager_s), f"×{m.inclusive_s / m.eager_s:.2f}"]


def generate_module_table(report: ReportData, mods: list[ModuleRow], top: int | None, width: int | None = None) -> str:
    """A generation's modules: prefill per call and decode per token, each with its share of its phase,
    by decode time (what a user waits for)."""
    g = report.generation
    mods.sort(key=lambda m: (-m.decode_s, -m.prefill_s, m.path))
    shown = mods[:top] if top else mods
    body = [
        [
            m.path or "(root)",
            m.class_name + (" [leaf]" if m.leaf_fallback else ""),
            format_seconds(m.prefill_s),
            format_pct(phase_share("prefill", m.prefill_s, g)),
            format_seconds(m.decode_s),
            format_pct(phase_share("decode", m.decode_s, g)),
            m.nodes,
        ]
        for m in shown
    ]
    cols = [_MODULE_PATH, _CLASS, *_figures("prefill", "% of prefill", "decode/token", "% of decode", "nodes")]
    text = fit_table(body, cols, width)
    if len(shown) < len(mods):
        text += f"\n… {len(mods) - len(shown)} more modules (--top 0 shows all)"
    return text


def train_lines(report: ReportData) -> list[str]:
    """The header's lines on a training step: its phases, the loss and the optimizer."""
    if not report.training:
        return []
    phases = report.phases
    total = sum(phases.values()) or 1e-12
    split = ", ".join(
        f"{p} {format_seconds(phases.get(p, 0.0))} ({100 * phases.get(p, 0.0) / total:.0f}%)"
        for p in ("forward", "backward", "optimizer")
    )
    ratio = phases.get("backward", 0.0) / phases["forward"] if phases.get("forward") else None
    return [
        f"phases     {split} of Σ node medians; backward ÷ forward {format_ratio(ratio)}",
        f"train      loss: {report.loss}; optimizer {report.optimizer}; the model in train mode, "
        "its parameters updated every step",
    ]


def _program_kernels_line(report: ReportData) -> list[str]:
    """Under ``fxtui run``, a program that compiles its model: how its compiled code is timed."""
    kernels = sum(1 for row in report.rows if row.kernel)
    if report.program is None or not kernels:
        return []
    return [
        f"compiled   the program's compiled code: {kernels} kernel calls of Inductor's, each timed as it runs on "
        "sampled steps and charged to its source operations' module; <compiled> is the rest of a compiled call "
        "(TorchDynamo's guards, the wrapper's Python, eager code between graphs)"
    ]


def capture_lines(report: ReportData) -> list[str]:
    """The header's lines on how the model became graphs: the capture, its graph breaks, what it costs."""
    mode = capture_mode(report.capture)
    if not mode.splits:
        how = mode.how
        program = report.program
        if program is not None and program.timer == "native":  # fxtui run --timer native
            how = how.replace("(a dispatch mode)", "(a C++ RecordFunction callback: --timer native)")
        elif program is not None and program.timer_why:  # asked for, but its library is being built or cannot be
            how = how.replace(
                "(a dispatch mode)", f"(a dispatch mode: the native timer is not in use, {program.timer_why})"
            )
        return [f"capture    {mode.name}: {how}", *_program_kernels_line(report)]
    breaks = len(report.breaks)
    graphs = f"{report.graphs} graph{'s' if report.graphs != 1 else ''}"
    lines = [
        f"capture    {mode.name}: {mode.title}, {graphs}, {breaks} graph break{'s' if breaks != 1 else ''}"
        + (f" (switched from {report.capture_reason})" if report.capture_reason else "")
    ]
    for i, b in enumerate(report.breaks[:5], 1):
        lines.append(f"break {i:<4} {b.reason}" + (f" at {b.source}" if b.source else ""))
    if breaks > 5:
        lines.append(f"break      … {breaks - 5} more (--json lists them all)")
    if report.reference_median_s and report.eager_median_s:
        cost = report.eager_median_s / report.reference_median_s - 1
        what = "the training step" if report.training else "the model"
        lines.append(
            f"eager      {what} run uncaptured: {format_seconds(report.reference_median_s)} median "
            f"(the captured graphs run {cost:+.0%} against it)"
        )
    if report.late_graphs:
        lines.append(
            f"warning    TorchDynamo compiled {report.late_graphs} more graph(s) after capture (recompiles); "
            "they run untimed, in the unattributed remainder"
        )
    return lines


def memory_lines(report: ReportData) -> list[str]:
    """The header's lines on memory (``--memory``): the live peak and where it is, parameters, the process."""
    m = report.memory
    if m is None:
        return []
    where = next((r for r in report.rows if r.name == m.peak_node), None)
    # The module is said only where the node's name does not say it already (fx names do: layer1_0_conv1).
    module = where.module_path if where is not None else ""
    named = module.replace(".", "_") in m.peak_node or module in m.peak_node
    at = f"after {m.peak_node}" + (f" (in {module})" if module and not named else "")
    lines = [
        f"peak       {format_bytes(m.peak_live_bytes)} of activations alive at once, {at}; "
        f"parameters and buffers {format_bytes(m.param_bytes)}, inputs {format_bytes(m.input_bytes)} apart"
    ]
    extra = []
    if m.high_water_bytes is not None:
        extra.append(
            f"allocator high-water {format_bytes(m.high_water_bytes)} (temporaries included)"
            + (f" in {m.high_water_node}" if m.high_water_node else "")
        )
    if m.rss_bytes is not None:
        extra.append(f"process RSS {format_bytes(m.rss_bytes)} (max {format_bytes(m.max_rss_bytes)})")
    if extra:
        lines.append("memory     " + "; ".join(extra))
    if m.saved_bytes is not None:
        lines.append(
            f"saved      {format_bytes(m.saved_bytes)} of forward outputs kept for backward; live peak "
            f"forward {format_bytes(m.forward_peak_bytes)}, backward {format_bytes(m.backward_peak_bytes)}"
        )
    return lines


def _step_ratios(spread: Spread | None) -> str:
    """``; each step's own ratio 0.920–1.002 (p25–p75)``, or nothing without a spread."""
    if spread is None:
        return ""
    return f"; each step's own ratio {format_range(spread.q25, spread.q75, format_ratio).strip(' ()')} (p25–p75)"


def _range(spread: Spread | None, fmt: Callable[[float], str]) -> str:
    return format_range(spread.q25, spread.q75, fmt) if spread else ""


def _lead_waiting(report: ReportData) -> StepWaiting | None:
    """A program's split of the kind of step its figures are of (None for a model)."""
    return lead_waiting(report.snapshot) if report.program is not None else None


def _unattributed_line(seconds: float | None, capture: str = "fx", disturbed: bool = False) -> str:
    """The header's line on what the node medians leave out of the uninstrumented run."""
    if seconds is not None and seconds < 0:
        # Medians of parts need not add up to the median of the whole; on a short or noisy
        # session the nodes can account for slightly more than the run.
        return (
            f"unattributed none: the node medians add up to {format_seconds(-seconds)} more than the "
            "uninstrumented median (medians of parts need not sum to the median of the whole)"
        )
    if disturbed:
        return (
            f"unattributed {format_seconds(seconds)} of the uninstrumented run is not charged to any node; "
            "other work slowed the uninstrumented runs too, so it is not all the model's own Python"
        )
    glue = capture_mode(capture).glue
    return f"unattributed {format_seconds(seconds)} of the uninstrumented run is {glue}, not charged to any node"
