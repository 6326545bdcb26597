"""The fxtui app: a live view of a :class:`~fxtui.core.snapshot.SnapshotSource`.

The source runs in a worker thread and publishes snapshots; the worker never
touches a widget. Each snapshot travels as a :class:`SnapshotReady` message to the
main screen, which applies it in one batch.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import ClassVar

from textual import events
from textual.app import App, SystemCommand
from textual.binding import BindingType
from textual.screen import Screen
from textual.worker import Worker

from fxtui.core.commands import Stop
from fxtui.core.snapshot import Snapshot, SnapshotSource, State
from fxtui.ui.actions import APP, PROFILER_GROUPS, bindings, help_rows, palette_actions, palette_help
from fxtui.ui.messages import SnapshotReady
from fxtui.ui.screens.help import HelpScreen
from fxtui.ui.screens.main import MainScreen

#: Events that mean the user is at the keyboard or the mouse (not mouse moves: hovering is not input).
_INPUT = (events.Key, events.MouseDown, events.MouseScrollDown, events.MouseScrollUp)


class FxtuiApp(App[None]):
    """Profile view: module tree, timing table, detail pane, driven by ``source``.

    After :meth:`run` returns, :attr:`fatal_error` holds the message when the session
    failed before anything could be shown (a model that does not load or trace), and
    :attr:`return_code` is 2; the command line prints the message and exits with it.
    """

    CSS_PATH = "app.tcss"
    TITLE = "fxtui"
    ENABLE_COMMAND_PALETTE = True
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-medium"), (120, "-wide")]  # noqa: RUF012 (Textual declares it so)
    VERTICAL_BREAKPOINTS = [(0, "-tiny"), (20, "-short"), (36, "-tall")]  # noqa: RUF012

    BINDINGS: ClassVar[list[BindingType]] = bindings(APP)

    def __init__(self, source: SnapshotSource, *, title: str = "fxtui") -> None:
        super().__init__()
        self.source = source
        self.title = title
        self.fatal_error: str | None = None
        """Why the session could not start, when it could not (then the app exits with status 2)."""
        self.main = MainScreen(source, on_fatal=self._fatal)
        self._source_worker: Worker[None] | None = None

    async def on_event(self, event: events.Event) -> None:
        """Input holds live snapshots back for a moment, so the key is drawn first (``pacing.KeysFirst``)."""
        if isinstance(event, _INPUT):
            self.main.keys_first.input()
        await super().on_event(event)

    def get_default_screen(self) -> Screen[None]:
        """The main view."""
        return self.main

    def on_mount(self) -> None:
        self._source_worker = self.run_worker(
            self._run_source, thread=True, name="snapshot-source", group="source", exit_on_error=False
        )

    def _run_source(self) -> None:
        """Runs in the worker thread: nothing here may touch a widget."""
        try:
            self.source.run(self._publish)
        except Exception as error:  # a source that breaks must show, not vanish with its thread
            self._publish(Snapshot(None, State.ERROR, message=f"{type(error).__name__}: {error}"))

    def _publish(self, snapshot: Snapshot) -> None:
        """Called by the source from the worker thread; post_message is thread-safe."""
        self.main.post_message(SnapshotReady(snapshot))

    def _fatal(self, message: str) -> None:
        self.fatal_error = message
        self.source.send(Stop())
        self.exit(return_code=2)

    async def action_quit(self) -> None:
        """Stop the source, then leave."""
        self.source.send(Stop())
        self.exit()

    def action_help(self) -> None:
        """Show every key."""
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(help_rows(PROFILER_GROUPS)))

    def action_tree_order(self) -> None:
        """The module tree's siblings in graph order, or slowest first: kept until the app ends."""
        tree = self.main.module_tree
        tree.by_time = not tree.by_time
        self.notify("tree: slowest first" if tree.by_time else "tree: graph order", timeout=2)

    def on_unmount(self) -> None:
        # However the app ends (an exception included), the session must not keep running.
        self.source.send(Stop())

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The command palette offers the app's own actions besides Textual's, those that apply now."""
        yield from super().get_system_commands(screen)
        main = self.main
        if main.graph is None:
            return
        for action in palette_actions():
            target: App[None] | Screen[None] = self if action.group == APP else main
            if target.check_action(action.name, ()) is not False:
                yield SystemCommand(action.palette, palette_help(action), self._palette_callback(target, action.id))

    @staticmethod
    def _palette_callback(target: App[None] | Screen[None], action: str) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            await target.run_action(action)

        return run
