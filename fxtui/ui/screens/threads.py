"""Threads, cores, backend and build flags, library versions: what the timings were measured under.

Warnings (more threads than cores, a thread count an environment variable
overrides …) come first, marked, so a user who opened this because the status line
said "⚠ threads" sees why at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from fxtui.core import memory_policy
from fxtui.core.program_figures import lead_waiting
from fxtui.core.snapshot import GraphInfo, Snapshot
from fxtui.report.waiting_text import split_text
from fxtui.ui.widgets.status_bar import fidelity_doubt


def threads_text(graph: GraphInfo, memory_warning: str = "", memory: str = "", cautions: Sequence[str] = ()) -> Text:
    """The warnings (threads, page faults when ``memory_warning`` says so, then ``cautions``: other work on the
    machine, figures that do not add up), then one line per fact.

    ``memory`` describes how the engine's process hands freed memory back, when known.
    """
    text = Text()
    text.append("Threads and build", style="bold")
    text.append(f"  ({graph.model}, {graph.threads} thread{'s' if graph.threads != 1 else ''})\n\n")
    warnings = (*graph.thread_warnings, *graph.value_warnings, *(w for w in (memory_warning, *cautions) if w))
    for warning in warnings:
        text.append("⚠ ", style="bold")
        text.append(warning, style="bold")
        text.append("\n")
    if warnings:
        text.append("\n")
    if graph.thread_info:
        text.append("\n".join(graph.thread_info))
    else:
        text.append("the session reported nothing about threads or the build", style="italic")
    if memory:
        text.append(f"\nmemory: {memory}")
    return text


class ThreadsScreen(ModalScreen[None]):
    """The session's thread and build facts; Esc, T or q closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,T,q", "dismiss", "Close")]

    def __init__(
        self, graph: GraphInfo, memory_warning: str = "", memory: str = "", cautions: Sequence[str] = ()
    ) -> None:
        super().__init__()
        self.graph = graph
        self.memory_warning = memory_warning
        self.memory = memory
        self.cautions = tuple(cautions)

    @classmethod
    def for_snapshot(cls, snapshot: Snapshot) -> ThreadsScreen:
        """The panel for ``snapshot``, whose graph must be traced: its page-fault and disturbance warnings, a
        program's figures that do not add up, how memory is kept."""
        assert snapshot.graph is not None
        memory = memory_policy.describe(snapshot.malloc) if snapshot.malloc else ""
        disturbance = snapshot.disturbance.line() if snapshot.disturbance else ""
        waiting = lead_waiting(snapshot)
        # The header's split, the same computation (it adds up): the wait alone where the ops are not known yet.
        split = split_text(waiting) or (waiting.waiting_text() if waiting is not None else "")
        waited = (split, waiting.figures_text()) if waiting is not None else ()
        cautions = (disturbance, *waited, fidelity_doubt(snapshot) or "")
        return cls(snapshot.graph, snapshot.fault_warning, memory, cautions)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="threads"):
            yield Static(threads_text(self.graph, self.memory_warning, self.memory, self.cautions), id="threads-text")
            yield Static("Esc, T or q closes this panel.", id="threads-hint")
