"""Every command fxtui's apps answer to, written once.

An :class:`Action` names the Textual action a key runs, its keys, the short description
the footer and the help screen show, the longer one the README's key table gives, and the
title the command palette offers it under. Everything that lists keys is generated from
:data:`ACTIONS`:

* ``BINDINGS`` of the main screen, the hints and what-if screens and both apps (:func:`bindings`);
* the help screen's rows (:func:`help_rows`);
* the command palette (:func:`palette_actions`, used by ``FxtuiApp.get_system_commands``);
* the key table under "## The app" in README.md (:func:`readme_table`;
  ``python -m fxtui.ui.actions`` prints it, and a test fails when README.md differs).

Keys that only move inside a widget (the table's and tree's cursor keys) stay with that
widget and are described by :data:`NAVIGATION`; keys that answer a dialog (the op-type
chooser's Enter, a panel's Esc) stay with the dialog, which says them on screen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from textual.actions import parse
from textual.binding import Binding, BindingType

from fxtui.ui.view_filter import DEFAULT_FILTER, phases_of

#: Groups: the heading the help screen lists an action under, and which class binds it.
MAIN = "session and view"
HINTS = "hints (H)"
WHAT_IFS = "what-ifs (w)"
APP = "app"
DIFF = "diff"


@dataclass(frozen=True, slots=True)
class Action:
    """One command: what runs, on which keys, and how each list describes it."""

    id: str
    """The Textual action string it runs: ``hotspot(1)``, ``toggle_pause``."""
    keys: str
    """Textual key names, comma separated; the first is the one the footer and the palette show."""
    description: str
    """A few words for the footer and the help screen."""
    group: str
    """:data:`MAIN`, :data:`HINTS`, :data:`WHAT_IFS`, :data:`APP` or :data:`DIFF`."""
    readme: str = ""
    """What the key does, as the README's key table says it (every action of the profiler has one)."""
    show: bool = True
    """Shown in the footer (when it applies)."""
    palette: str = ""
    """The command palette's title; empty: not offered there."""
    palette_help: str = ""
    """The palette's second line (the key is added in brackets)."""
    priority_keys: str = ""
    """More keys, bound with priority so that a focused input cannot take them; never in the footer."""
    needs_graph: bool = False
    """Means nothing until a graph has been traced: hidden until then."""
    applies: Callable[[Any], bool] | None = None
    """When it applies, asked of the screen that answers it (its keys are hidden otherwise); None: always."""

    @property
    def name(self) -> str:
        """The action's name without its parameters: ``hotspot(1)`` → ``hotspot``."""
        return parse(self.id)[1]

    @property
    def all_keys(self) -> list[str]:
        """Every key that runs it, the shown one first."""
        return [k.strip() for k in f"{self.keys},{self.priority_keys}".split(",") if k.strip()]


def _program(screen: Any) -> bool:
    """The screen (or the app's main screen) shows a program profiled as it runs (``fxtui run``)."""
    main = getattr(screen, "main", screen)
    return main.snapshot is not None and main.snapshot.program is not None


def _running_program(screen: Any) -> bool:
    """A program profiled as it runs, still running."""
    return _program(screen) and getattr(screen, "main", screen).snapshot.program.running


def _ranks(screen: Any) -> bool:
    """A distributed job's ranks are shown."""
    graph = getattr(screen, "main", screen).graph
    return graph is not None and len(graph.ranks) > 1


def _kinds(screen: Any) -> bool:
    """A program ran more than one kind of step (training steps, evaluation calls, generate() calls)."""
    snapshot = getattr(screen, "main", screen).snapshot
    steps = snapshot.steps if snapshot is not None else None
    return steps is not None and len(steps.kinds) > 1


def _model(screen: Any) -> bool:
    """The screen shows a model fxtui reruns itself (what-ifs, hints and pausing apply)."""
    return not _program(screen)


# fmt: off
ACTIONS: tuple[Action, ...] = (
    # The main screen, in the footer's order.
    Action(
        "toggle_pause", "space", "Pause/Resume", MAIN, "pause / resume the reruns",
        palette="Pause / resume", palette_help="Stop or restart the reruns", needs_graph=True,
        applies=_model,
    ),
    Action(
        "reset", "r", "Reset stats", MAIN, "reset the statistics",
        palette="Reset statistics", palette_help="Forget every sample so far", needs_graph=True,
    ),
    Action(
        "scope_up", "backspace", "Up a module", MAIN, "up one module",
        palette="Up a module", palette_help="Show the parent module's subtree", applies=lambda s: s.scope != "",
    ),
    Action(
        "hottest", "h", "Hottest child", MAIN,
        "jump to the hottest child; press again to walk the hottest path down to one node",
        palette="Hottest child", palette_help="Go to the slowest child of the current module", needs_graph=True,
    ),
    Action(
        "hotspot(1)", "n", "Next hotspot", MAIN, "next hotspot (by median) in the current view",
        palette="Next hotspot", palette_help="Select the next node by median", needs_graph=True,
    ),
    Action(
        "hotspot(-1)", "N", "Prev hotspot", MAIN, "previous hotspot in the current view", show=False,
        palette="Previous hotspot", palette_help="Select the previous node by median", needs_graph=True,
    ),
    Action(
        "filter('path')", "slash", "Filter path", MAIN,
        "filter by module path: a glob (`layer[12]*`) or a substring; Esc clears",
        palette="Filter by module path", palette_help="A glob like layer[12]* or a substring", needs_graph=True,
    ),
    Action(
        "filter('type')", "t", "Filter type", MAIN, "filter by target type (`Conv2d`, `add` …)", show=False,
        palette="Filter by target type", palette_help="Conv2d, add …", needs_graph=True,
    ),
    Action(
        "filter_ops", "o", "Op types", MAIN,
        "toggle op types (placeholder, get_attr, call_function, call_method, call_module, output)", show=False,
        palette="Choose op types", palette_help="placeholder, call_module …", needs_graph=True,
    ),
    Action(
        "clear_filters", "escape", "Clear filters", MAIN,
        "clear the path and type filters; again: back to the default op types",
        palette="Clear filters", palette_help="Back to the default filter",
        applies=lambda s: s.filter_input.is_open or s.spec != DEFAULT_FILTER,
    ),
    Action(
        "sort_next", "s", "Sort", MAIN, "sort by the next column (or click a header)", show=False,
        palette="Sort by next column", palette_help="Cycle the sort key", needs_graph=True,
    ),
    Action(
        "sort_reverse", "S", "Reverse sort", MAIN, "reverse the sort (or click the header again)", show=False,
        palette="Reverse sort", palette_help="Flip the sort order", needs_graph=True,
    ),
    Action(
        "cycle_phase", "p", "Phase filter", MAIN,
        "with `--train`, `--generate` or `fxtui run`: every phase, then each phase's nodes only (forward, backward, "
        "optimizer, data, prefill, decode …; the tree shades backward time, and gives a generation's prefill and "
        "decode shares side by side)",
        palette="Filter by phase", palette_help="A training step's or a generation's phases, one at a time",
        needs_graph=True, applies=lambda s: bool(phases_of(s.graph)),
    ),
    Action(
        "toggle_memory", "m", "Memory", MAIN,
        "memory columns (output, allocated, live after; saved with `--train`) and the live-memory plot "
        "across graph order, the cursor's node marked; again: back to the timings",
        palette="Memory columns", palette_help="Bytes per node and where the peak is", needs_graph=True,
        applies=lambda s: s.graph is not None and s.graph.memory is not None,
    ),
    Action(
        "goto_error", "e", "Go to error", MAIN, "go to the node that raised, after an error inside the model",
        palette="Go to the error", palette_help="Select the node that raised",
        applies=lambda s: s.error_node is not None,
    ),
    Action(
        "toggle_detail", "d", "Detail pane", MAIN, "show or hide the detail pane", show=False,
        palette="Toggle detail pane", palette_help="Show or hide the detail pane", needs_graph=True,
    ),
    Action(
        # The app's: a preference kept for the session, whatever screen is shown.
        "app.tree_order", "g", "Tree order: graph, slowest first (compiled: least saved)", MAIN,
        "tree: siblings in graph order, or slowest first — with `--compile`, the smallest saving (eager − compiled) "
        "first, where compiling helped least, and modules fused whole into an ancestor's kernel last; kept for the "
        "session (a module's direct ops that take little time are folded into one line, `34 small ops`, which → or "
        "Enter opens)", show=False,
        palette="Tree order",
        palette_help="Siblings in graph order or slowest first (compiled: the smallest saving first)",
        needs_graph=True,
    ),
    Action(
        "explain", "x", "Explain node", MAIN, "which aten operators the selected node runs, and their share of it",
        palette="Explain node", palette_help="Break the selected node down into aten operators", needs_graph=True,
        applies=_model,
    ),
    Action(
        "hints", "H", "Hints", MAIN,
        "hints: rule-based suggestions with evidence and estimated saving; Enter jumps to the node",
        palette="Hints", palette_help="Suggestions from the statistics so far; w measures one",
        needs_graph=True, applies=_model,
    ),
    Action(
        "what_ifs", "w", "What-ifs", MAIN,
        "what-ifs: apply a change (channels-last, bf16, fold-bn, threads=N, compile, int8-dynamic) to a copy of "
        "the model and measure it against the original, runs interleaved: before → after per run, node and module, "
        "and how far the outputs moved",
        palette="What-ifs", palette_help="Measure channels-last, bf16, compile … against the model",
        needs_graph=True, applies=_model,
    ),
    Action(
        "program_log", "l", "Output", MAIN,
        "with `fxtui run`: the program's own output, following it as it prints",
        palette="Program output", palette_help="What the profiled program printed", applies=_program,
    ),
    Action(
        "threads", "T", "Threads", MAIN,
        "threads: intra/inter-op threads, cores, affinity, `OMP_NUM_THREADS`, the oneDNN/MKL/OpenMP build; "
        "the status line warns when threads exceed the cores",
        show=False, palette="Threads and build",
        palette_help="Threads, cores, build flags, library versions, warnings", needs_graph=True,
    ),
    # Inside the hints.
    Action("dismiss", "escape,H", "Close hints", HINTS, "in the hints: close them"),
    Action(
        "measure_hint", "w", "Measure it", HINTS,
        "in the hints: measure the highlighted hint's change as a what-if (the what-ifs open and show it)",
    ),
    # Inside the what-ifs.
    Action("measure", "enter", "Measure", WHAT_IFS, "in the what-ifs: measure the highlighted one (again: anew)"),
    Action("measure_all", "a", "Measure all", WHAT_IFS, "in the what-ifs: measure every one that applies, in turn"),
    Action("toggle_tables", "m", "Nodes/modules", WHAT_IFS, "in the what-ifs: the changes per node or per module"),
    Action("dismiss", "escape,w", "Close", WHAT_IFS, "in the what-ifs: close them"),
    # The app, on every screen, on a program (fxtui run, fxtui attach).
    Action(
        "detach", "D", "Detach", APP,
        "with `fxtui run` or `fxtui attach`: leave the app, the program goes on (`fxtui attach` comes back)",
        palette="Detach", palette_help="Leave the app; the program goes on", applies=_running_program,
    ),
    Action(
        "cycle_rank", "R", "Next rank", APP,
        "with `fxtui run` of a distributed job: show the next rank's figures (every rank stays compared beside them)",
        palette="Next rank", palette_help="Show the next rank's figures", applies=_ranks,
    ),
    Action(
        "cycle_kind", "k", "Next kind", APP,
        "with `fxtui run`: show the next kind of step's figures (training steps, evaluation calls, generate() calls)",
        palette="Next kind of step", palette_help="Show the next kind of step's figures", applies=_kinds,
    ),
    Action(
        "stop_program", "K", "Stop program", APP,
        "with `fxtui run` or `fxtui attach`: stop the program as Ctrl+C would (asks first); its profile stays",
        show=False, palette="Stop the program", palette_help="Ends the profiled program (asks first)",
        applies=_running_program,
    ),
    # The app, on every screen. Textual's own Ctrl+C only explains how to quit; in a profiler it should quit.
    Action(
        "save", "E", "Save", APP,
        "save the figures shown as JSON (what `--json` writes; `fxtui diff` compares two) in the current "
        "directory, and say where; after the engine ended unexpectedly, or on SIGTERM or SIGHUP, leaving saves "
        "them too and prints the path",
        palette="Save the figures", palette_help="Write them as JSON, as --json does",
        applies=lambda app: app.savable() is not None,
    ),
    Action(
        "quit", "q", "Quit", APP,
        "quit (the engine stops, the terminal is left as it was; SIGTERM and SIGHUP leave the same way)",
        priority_keys="ctrl+c",
    ),
    Action(
        "help", "question_mark", "Help", APP, "every key; Ctrl+P: the command palette offers the same actions",
        palette="Keys", palette_help="List every key",
    ),
    # fxtui diff.
    Action("quit", "q", "Quit", DIFF, priority_keys="ctrl+c"),
    Action("help", "question_mark", "Help", DIFF),
    Action("show_tab('nodes')", "1", "Nodes", DIFF),
    Action("show_tab('modules')", "2", "Modules", DIFF),
    Action("show_tab('only')", "3", "One run only", DIFF),
    Action("sort_next", "s", "Sort", DIFF),
    Action("sort_reverse", "S", "Reverse sort", DIFF),
)
# fmt: on

#: Keys handled inside the tree and the table rather than by an action of their own.
NAVIGATION: tuple[tuple[str, str], ...] = (
    ("↑ ↓ PgUp PgDn Home End", "move in the tree or the table"),
    ("→ ←", "tree: expand / collapse (or go to the parent)"),
    ("Enter", "tree: show that module's subtree in the table"),
    ("Tab / Shift+Tab", "switch between the tree and the table"),
    ("click a header", "sort the table by that column (again: reverse)"),
)

#: The groups the profiler's help screen and the README list, in that order.
PROFILER_GROUPS: tuple[str, ...] = (MAIN, HINTS, WHAT_IFS, APP)

_KEY_NAMES = {
    "slash": "/",
    "space": "Space",
    "backspace": "Backspace",
    "escape": "Esc",
    "question_mark": "?",
    "ctrl+c": "Ctrl+C",
    "ctrl+p": "Ctrl+P",
    "enter": "Enter",
}


def key_label(key: str) -> str:
    """``"slash"`` → ``"/"``; ``"ctrl+c"`` → ``"Ctrl+C"``."""
    return _KEY_NAMES.get(key, key)


def actions(group: str) -> tuple[Action, ...]:
    """The actions of ``group``, in registry order."""
    return tuple(a for a in ACTIONS if a.group == group)


def bindings(group: str) -> list[BindingType]:
    """``BINDINGS`` for the class that answers ``group``: one binding per key, the first key shown."""
    out: list[BindingType] = []
    for action in actions(group):
        keys = [k.strip() for k in action.keys.split(",")]
        out += [Binding(key, action.id, action.description, show=action.show and i == 0) for i, key in enumerate(keys)]
        out += [
            Binding(key.strip(), action.id, action.description, show=False, priority=True)
            for key in action.priority_keys.split(",")
            if key.strip()
        ]
    return out


def keys_text(action: Action) -> str:
    """Every key of ``action`` as a user reads it: ``q, Ctrl+C``."""
    return ", ".join(key_label(k) for k in action.all_keys)


def help_rows(groups: Iterable[str]) -> list[tuple[str, str, str]]:
    """(group, keys, description) for the help screen, group by group."""
    return [(a.group, keys_text(a), a.description) for group in groups for a in actions(group)]


def palette_actions(groups: Iterable[str] = (MAIN, APP)) -> list[Action]:
    """The actions the command palette offers, in registry order."""
    return [a for group in groups for a in actions(group) if a.palette]


def palette_help(action: Action) -> str:
    """The palette's second line: what it does, then its key: ``Forget every sample so far (r)``."""
    return f"{action.palette_help} ({key_label(action.all_keys[0])})"


def readme_table() -> str:
    """The key table under "## The app" in README.md, as Markdown."""
    lines = ["| key | what it does |", "|---|---|"]
    lines += [f"| {keys} | {what} |" for keys, what in NAVIGATION]
    lines += [f"| {keys_text(a)} | {a.readme} |" for group in PROFILER_GROUPS for a in actions(group)]
    return "\n".join(lines)


if __name__ == "__main__":
    print(readme_table())
