"""The status line: what is profiled, how it is going, and what the view shows."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.reactive import var
from textual.widgets import Static

from fxtui.core.captures import capture_mode
from fxtui.core.column_table import column_total
from fxtui.core.program_figures import lead_waiting, program_figures
from fxtui.core.program_run import overcount_doubt
from fxtui.core.snapshot import RunSummary, Snapshot, State
from fxtui.core.units import format_ratio, format_seconds
from fxtui.wire.viewer_commands import Pause, Resume


@dataclass(frozen=True, slots=True)
class ViewState:
    """What the status line says about the view (not the session)."""

    scope: str = ""
    shown: int = 0
    total: int = 0
    sort: str = "median ↓"
    filters: str = "none"
    paused: bool = False
    measuring: str = ""
    """What the what-if being measured is doing (``what-if bf16: pair 3 of 20``); ``""`` when none is."""


def state_text(snapshot: Snapshot | None, paused: bool) -> str:
    """The session's state as the user should read it now (a key press shows at once)."""
    if snapshot is None:
        return "starting"
    if paused:
        return State.PAUSED.value
    if snapshot.state is State.PAUSED:
        return "resuming"
    return snapshot.state.value


def toggled_pause(paused: bool, snapshot: Snapshot | None) -> tuple[bool, Pause | Resume]:
    """What Space does: the new ``paused`` and the command to send. A session that stopped by itself (the model
    raised run after run) is not paused by the user: Space resumes it."""
    if not paused and snapshot is not None and snapshot.state is State.STOPPED:
        return False, Resume()
    return not paused, Pause() if not paused else Resume()


def fidelity(snapshot: Snapshot) -> float | None:
    """The snapshot's fidelity, summing the node medians from their column (no per-node record is made)."""
    attributed = column_total(snapshot.nodes, "median_s") if snapshot.nodes else None
    figures = RunSummary.of(attributed, snapshot.run_median_s, snapshot.eager_median_s)
    return program_figures(snapshot, figures).fidelity


def fidelity_doubt(snapshot: Snapshot) -> str | None:
    """The sentence that says a program's per-node figures do not add up, or None when they may be read."""
    steps = snapshot.steps
    if snapshot.program is None or steps is None or not steps.steps:
        return None
    return overcount_doubt(steps.kind, fidelity(snapshot), steps.sampled)


def session_line(snapshot: Snapshot | None, paused: bool) -> Text:
    """First line: state (first, so a narrow terminal never cuts it), model, inputs, runs, medians, fidelity."""
    text = Text()
    state = state_text(snapshot, paused)
    text.append(f"● {state}", style="bold reverse" if state in ("paused", "stopped", "error") else "bold")
    if snapshot is not None and snapshot.message and snapshot.message != state:
        text.append(f"{':' if state == 'stopped' else ''} {snapshot.message}")
    graph = snapshot.graph if snapshot is not None else None
    if graph is not None and graph.thread_warnings:
        # Early on the line, so a narrow terminal still shows it: timings under a bad thread setup mislead.
        count = len(graph.thread_warnings)
        text.append(" ")
        text.append(f"⚠ {count} thread warning{'s' if count != 1 else ''} (T)", style="bold reverse")
    for warning in graph.value_warnings if graph is not None else ():
        # The model's values: a NaN anywhere, or an inf that reaches an output (T has the sentence).
        text.append(" ")
        text.append("⚠ NaN (T)" if warning.startswith("NaN") else "⚠ inf at an output (T)", style="bold reverse")
    if snapshot is not None and snapshot.fault_warning:
        # Node times then include first-touch page faults, which vary from session to session.
        text.append(" ")
        text.append(f"⚠ {snapshot.faults_per_run:,.0f} page faults/run (T)", style="bold reverse")
    disturbance = snapshot.disturbance if snapshot is not None else None
    if disturbance is not None and disturbance.disturbed:
        # Other processes took the CPU from some steps: the figures may move for reasons outside the model.
        how = "left out" if disturbance.left_out and not disturbance.kept else "in figures"
        text.append(" ")
        text.append(f"⚠ {disturbance.disturbed}/{disturbance.steps} steps disturbed, {how} (T)", style="bold reverse")
    waiting = lead_waiting(snapshot) if snapshot is not None else None
    if waiting is not None and waiting.badge():
        # A program's sampled steps that waited for a CPU: left out of the node figures, or in them (T says which).
        text.append(" ")
        text.append(waiting.badge(), style="bold reverse")
    if snapshot is not None and snapshot.program is not None:
        _program_part(text, snapshot)
    elif snapshot is not None and graph is not None and snapshot.generation is not None:
        _generate_part(text, snapshot)
    elif snapshot is not None and graph is not None:
        text.append(" │ ")
        text.append(graph.model, style="bold")
        text.append(f" {' '.join(graph.inputs)} {graph.dtype} {graph.threads}thr")
        mode = capture_mode(graph.capture)
        if mode.splits:
            breaks = len(graph.breaks)
            text.append(f" · {mode.title} {graph.graphs} graph{'s' if graph.graphs != 1 else ''}")
            text.append(f"/{breaks} break{'s' if breaks != 1 else ''}")
        elif not mode.whole_modules:
            text.append(f" · {mode.title}")
        if snapshot.compiled is not None:
            _compiled_part(text, snapshot)
            return text
        text.append(f" │ {snapshot.runs} runs · run {format_seconds(snapshot.run_median_s)}")
        text.append(f" · eager {format_seconds(snapshot.eager_median_s)} · fidelity {format_ratio(fidelity(snapshot))}")
    return text


def _compiled_part(text: Text, snapshot: Snapshot) -> None:
    """A compiled model: the compile, its kernels, the compiled run against the eager one, the kernels' fidelity."""
    c = snapshot.compiled
    assert c is not None
    text.append(f" ({c.mode}) compiled in {format_seconds(c.compile_s)} · {c.kernels + c.externs} kernels")
    if snapshot.late_graphs:
        text.append(f" · {snapshot.late_graphs} recompiles", style="bold")
    compiled = snapshot.eager_median_s  # the session's uninstrumented runs are the compiled model's
    ratio = f" (×{compiled / c.eager_s:.2f})" if compiled and c.eager_s else ""
    text.append(f" │ {snapshot.runs} runs · eager {format_seconds(c.eager_s)} → compiled {format_seconds(compiled)}")
    text.append(ratio, style="bold")
    text.append(f" · fidelity {format_ratio(fidelity(snapshot))}")


def _program_part(text: Text, snapshot: Snapshot) -> None:
    """A running program: its script, how it is doing, its steps, the step median and fidelity."""
    program, steps = snapshot.program, snapshot.steps
    assert program is not None
    text.append(" │ ")
    text.append(program.script, style="bold")
    if not program.running:
        text.append(f" {program.status_text()}", style="bold reverse" if program.exit_code else "bold")
    if snapshot.graph is not None and snapshot.graph.threads:
        text.append(f" {snapshot.graph.threads}thr")
    if steps is None or not steps.steps:
        text.append(" │ warming up" if program.running else " │ no steps")
        return
    if snapshot.rank_summary is not None:
        summary = snapshot.rank_summary
        role = next((r.role for r in summary.ranks if r.rank == summary.shown and r.role), "")
        shown = role if not summary.collectives and role else f"rank {summary.shown} of {len(summary.ranks)}"
        text.append(f" │ {shown} (R)", style="bold")  # a hogwild job's process is named, not ranked
    name = {"train": "training steps", "eval": "eval calls", "generate": "generate() calls"}.get(steps.kind, "steps")
    text.append(f" │ {steps.steps} {name} · {steps.sampled} sampled · {format_seconds(steps.step_median_s)} · ")
    value = fidelity(snapshot)  # a sum over every node: once per refresh
    if overcount_doubt(steps.kind, value, steps.sampled):  # the sentence is in the T panel
        text.append(f"⚠ fidelity {format_ratio(value)} (T)", style="bold reverse")
    else:
        text.append(f"fidelity {format_ratio(value)}")
    others = [k for k in steps.kinds if k.kind != steps.kind]
    if (
        others
    ):  # the program ran other kinds of step too: k shows them while its collector runs, or from its last profile
        offered = program.running or bool(snapshot.other_kinds)
        text.append(" │ " + ", ".join(f"{k.steps} {k.kind}" for k in others) + (" (k)" if offered else ""))
    g = snapshot.generation
    if g is not None:  # its generate() calls
        text.append(f" · TTFT {format_seconds(g.ttft_s)} · TPOT {format_seconds(g.tpot_s)}")


def _generate_part(text: Text, snapshot: Snapshot) -> None:
    """generate() calls: the model, prompt and tokens, then time to first token, per token, tokens/s, fidelity."""
    graph, g = snapshot.graph, snapshot.generation
    assert graph is not None and g is not None
    text.append(" │ ")
    text.append(graph.model, style="bold")
    text.append(f" {g.batch}×{g.prompt_tokens} prompt +{g.new_tokens} tokens {graph.dtype} {graph.threads}thr")
    text.append(f" │ {snapshot.runs} calls · TTFT {format_seconds(g.ttft_s)} · TPOT {format_seconds(g.tpot_s)}")
    if g.tokens_per_s is not None:
        text.append(f" · {g.tokens_per_s:.1f} tok/s")
    text.append(f" · fidelity {format_ratio(fidelity(snapshot))}")


def view_line(view: ViewState) -> Text:
    """Second line: the scope, how many nodes are shown, filters, sort."""
    text = Text()
    text.append("view ")
    text.append(view.scope or "(root)", style="bold")
    text.append(f" · {view.shown}/{view.total} nodes · filter ")
    text.append(view.filters, style="bold" if view.filters != "none" else "")
    text.append(f" · sort {view.sort}")
    if view.measuring:
        text.append(f" · {view.measuring}", style="bold")
    return text


class StatusBar(Static):
    """Two lines at the top: the session, then the view; redrawn whenever either reactive changes."""

    DEFAULT_CSS = """
    /* Each line keeps its own row on a narrow terminal: cut short rather than wrapped. */
    StatusBar { height: 2; background: $panel; color: $foreground; padding: 0 1;
                text-wrap: nowrap; text-overflow: ellipsis; }
    """

    snapshot: var[Snapshot | None] = var(None, always_update=True)
    """The latest snapshot (the main screen binds it to its own)."""
    view: var[ViewState] = var(ViewState())
    """What the view shows (the main screen binds it to its computed view state)."""

    _last: Text | None = None

    def watch_snapshot(self) -> None:
        self._redraw()

    def watch_view(self) -> None:
        self._redraw()

    def _redraw(self) -> None:
        text = Text("\n").join([session_line(self.snapshot, self.view.paused), view_line(self.view)])
        if text != self._last:
            self._last = text
            self.update(text, layout=False)  # two fixed rows: the size never changes
