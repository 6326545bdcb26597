"""The main screen's keys that ask the session for more or open a panel: explain, hints, what-if, threads.

A mixin of :class:`~fxtui.ui.screens.main.MainScreen`. Answers come back in later
snapshots; the screen passes them on to whichever panel is open.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fxtui.engine import allocator
from fxtui.engine.commands import Explain, RequestHints, TryFusion
from fxtui.engine.findings import WhatIf
from fxtui.engine.snapshot import GraphInfo, Snapshot, SnapshotSource
from fxtui.ui.screens.hints import HintsScreen
from fxtui.ui.screens.mixin_base import ScreenMixin
from fxtui.ui.screens.threads import ThreadsScreen
from fxtui.ui.widgets.detail_pane import DetailPane


class PanelsMixin(ScreenMixin):
    """``x``, ``d``, ``H`` (and ``f`` inside it), ``T`` for the main screen."""

    if TYPE_CHECKING:  # provided by MainScreen
        source: SnapshotSource
        graph: GraphInfo | None
        snapshot: Snapshot | None
        selected: str | None
        trying_fusion: bool
        what_if_before: WhatIf | None
        _explaining: set[str]

        def _show_detail(self) -> None: ...
        def show_node(self, name: str) -> None: ...
        def _show_status(self) -> None: ...

    def action_explain(self) -> None:
        """Ask the source for the aten operators inside the selected node; the detail pane shows them."""
        if self.selected is None:
            return
        self._explaining.add(self.selected)
        self.source.send(Explain(self.selected))
        self._show_detail()

    def action_toggle_detail(self) -> None:
        """Show or hide the detail pane."""
        detail = self.query_one(DetailPane)
        detail.display = not detail.display

    def action_hints(self) -> None:
        """Ask for suggestions and list them; Enter on one selects its node."""
        self.source.send(RequestHints())

        def chosen(name: str | None) -> None:
            if name is not None:
                self.show_node(name)

        snapshot = self.snapshot
        screen = HintsScreen(
            snapshot.hints if snapshot is not None else None,
            snapshot.what_if if snapshot is not None else None,
            on_try=self.try_fusion,
            measuring=self.trying_fusion,
        )
        self.app.push_screen(screen, chosen)

    def try_fusion(self) -> None:
        """Ask the session to fold Conv-BN pairs and time the result; the hints screen shows it."""
        self.trying_fusion = True
        self.what_if_before = self.snapshot.what_if if self.snapshot is not None else None
        self.source.send(TryFusion())
        self._show_status()

    def action_threads(self) -> None:
        """Show threads, cores, build flags and library versions, warnings first."""
        if self.graph is not None and not isinstance(self.app.screen, ThreadsScreen):
            faults = self.snapshot.fault_warning if self.snapshot is not None else ""
            malloc = self.snapshot.malloc if self.snapshot is not None else ""
            self.app.push_screen(ThreadsScreen(self.graph, faults, allocator.describe(malloc) if malloc else ""))
