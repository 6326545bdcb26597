"""The line under the status bar that says what went wrong, when something did."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import var
from textual.widgets import Static

from fxtui.core.snapshot import Snapshot, State


def error_text(snapshot: Snapshot | None) -> Text | None:
    """What the banner says about ``snapshot``: the node that raised and how often, or the session's error."""
    if snapshot is None:
        return None
    error = snapshot.error
    if error is not None:
        node = error.node
        where = f"in node {node}" if node else "in the model"
        graph = snapshot.graph
        if node and graph is not None and node in graph.by_name:
            where += f" ({graph.node(node).target})"
        runs = f" · {error.runs_failed} failed run{'s' if error.runs_failed != 1 else ''}"
        hint = " · e: go to it" if node else ""
        return Text(f"✖ error {where}: {error.message}{runs}{hint}")
    if snapshot.state is State.ERROR:
        # Figures that outlived their session (the engine died) can still be saved.
        save = " · E: save them" if snapshot.nodes else ""
        return Text(f"✖ {snapshot.message or 'the session stopped with an error'}{save}")
    return None


class ErrorBanner(Static):
    """Shows :func:`error_text` of the current ``snapshot``; hidden when there is nothing wrong."""

    DEFAULT_CSS = """
    ErrorBanner { display: none; }
    """

    snapshot: var[Snapshot | None] = var(None, always_update=True)
    """The snapshot shown (the main screen binds it to its own)."""

    def watch_snapshot(self, snapshot: Snapshot | None) -> None:
        text = error_text(snapshot)
        if text is not None:
            self.update(text)
        self.display = text is not None
