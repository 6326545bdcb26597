"""The fxtui app: a live view of a :class:`~fxtui.wire.snapshot_source.SnapshotSource`.

The source runs in a worker thread and publishes snapshots; the worker never
touches a widget. Each snapshot travels as a :class:`SnapshotReady` message to the
main screen, which applies it in one batch.
"""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import threading
from collections.abc import Awaitable, Callable, Iterable
from typing import ClassVar

from textual import events
from textual.app import App, SystemCommand
from textual.binding import BindingType
from textual.screen import Screen
from textual.worker import Worker

from fxtui.core.errors import FxtuiError
from fxtui.core.snapshot import Snapshot, State
from fxtui.ui.actions import APP, PROFILER_GROUPS, actions, bindings, help_rows, palette_actions, palette_help
from fxtui.ui.messages import SnapshotReady
from fxtui.ui.screens.confirm import ConfirmScreen
from fxtui.ui.screens.help import HelpScreen
from fxtui.ui.screens.main import MainScreen
from fxtui.wire.snapshot_source import SnapshotSource
from fxtui.wire.viewer_commands import ShowKind, ShowRank, Stop, StopProgram

#: When each of the app's keys that does not always apply does (the action registry says).
_APPLIES = {a.name: a.applies for a in actions(APP) if a.applies is not None}

#: Signals that end the app as q does, the terminal restored and the engine stopped: ``kill`` (SIGTERM) and a
#: terminal that went away (SIGHUP: an SSH connection that dropped). Textual restores the terminal only on its
#: own way out; left to their default action, these signals left the pane raw (alternate screen, mouse
#: reporting on, the cursor hidden) and the engine's child running.
QUIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP)

#: Writes a snapshot's figures to a file and returns its path (:class:`FxtuiError` when it cannot).
Save = Callable[[Snapshot], str]

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

    def __init__(self, source: SnapshotSource, *, title: str = "fxtui", save: Save | None = None) -> None:
        super().__init__()
        self.source = source
        self.title = title
        self.detached = False
        """The user left with D: the program goes on (``fxtui run`` does not stop it)."""
        self.fatal_error: str | None = None
        """Why the session could not start, when it could not (then the app exits with status 2)."""
        self.main = MainScreen(source, on_fatal=self._fatal)
        self.save = save
        """Writes the figures shown to a file (E); None: the app cannot save (a demo, a test)."""
        self.saved: tuple[int, str] | None = None
        """The snapshot (its ``seq``) last saved, and where."""
        self.ended_by: int | None = None
        """The signal that ended the app (SIGTERM, SIGHUP), when one did; the exit status is then 128 + it."""
        self._source_worker: Worker[None] | None = None
        self._signals: dict[int, object] = {}
        """The signals the app handles while it runs, each with the handler it replaced."""

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
        if threading.current_thread() is threading.main_thread():  # only there can signals be handled
            loop = asyncio.get_running_loop()
            for sig in QUIT_SIGNALS:
                self._signals[sig] = signal.getsignal(sig)
                loop.add_signal_handler(sig, self._signalled, sig)

    def _signalled(self, signum: int) -> None:
        """SIGTERM or SIGHUP: leave as q does (the terminal restored, the engine stopped), status 128 + signum."""
        self.ended_by = signum
        self.source.send(Stop())
        self.exit(return_code=128 + signum)

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

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide the app's keys that do not apply now (a program's detach and stop; save without figures)."""
        applies = _APPLIES.get(action)
        return applies is None or applies(self)

    def action_detach(self) -> None:
        """Leave the app; the program goes on (``fxtui attach`` comes back to it)."""
        self.detached = True
        self.source.send(Stop())
        self.exit()

    def action_cycle_rank(self) -> None:
        """Show the next rank's figures of a distributed job."""
        snapshot = self.main.snapshot
        graph = snapshot.graph if snapshot is not None else None
        if snapshot is None or graph is None or not graph.ranks:
            return
        shown = snapshot.rank_summary.shown if snapshot.rank_summary is not None else graph.ranks[0]
        ranks = list(graph.ranks)
        following = ranks[(ranks.index(shown) + 1) % len(ranks)] if shown in ranks else ranks[0]
        self.source.send(ShowRank(following))
        self.notify(f"showing rank {following}", timeout=2)

    def action_cycle_kind(self) -> None:
        """Show the figures of the program's next kind of step (training steps, evaluation calls, generate() calls)."""
        snapshot = self.main.snapshot
        steps = snapshot.steps if snapshot is not None else None
        if snapshot is None or steps is None or len(steps.kinds) < 2:
            return
        kinds = [k.kind for k in steps.kinds]
        following = kinds[(kinds.index(steps.kind) + 1) % len(kinds)] if steps.kind in kinds else kinds[0]
        shown = next(k for k in steps.kinds if k.kind == following)
        ended = getattr(self.source, "ended", None)
        program = snapshot.program
        if program is not None and not program.running and ended is not None and ended.is_set():
            # The job's collector left with the program: its last profile holds every kind's figures.
            if following in snapshot.other_kinds:
                self.main.post_message(SnapshotReady(_kind_of(snapshot, following)))
                self.notify(f"showing {shown.name}", timeout=2)
                return
            self.notify(
                f"the program has ended and its collector with it: this profile holds its {steps.kind} figures "
                f"only (fxtui run --kind {following} shows the {shown.name})",
                timeout=6,
            )
            return
        self.source.send(ShowKind(following))
        self.notify(f"showing {shown.name}", timeout=2)

    def action_stop_program(self) -> None:
        """Stop the profiled program as Ctrl+C would, once the user says yes; its last figures stay."""
        snapshot = self.main.snapshot
        program = snapshot.program if snapshot is not None else None
        what = " ".join(program.command) if program is not None else "the program"

        def answered(yes: bool | None) -> None:
            if yes:
                self.source.send(StopProgram())

        self.push_screen(ConfirmScreen(f"Stop {what}? It ends as Ctrl+C would end it; its profile stays."), answered)

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
        """The module tree's siblings in graph order, or slowest first (a compiled model's: the smallest saving
        first): kept until the app ends."""
        tree = self.main.module_tree
        tree.by_time = not tree.by_time
        first = "smallest saving first" if tree.eager is not None else "slowest first"
        self.notify(f"tree: {first}" if tree.by_time else "tree: graph order", timeout=2)

    def on_unmount(self) -> None:
        # However the app ends (an exception included), the session must not keep running.
        self.source.send(Stop())
        loop = asyncio.get_running_loop()
        for sig, previous in self._signals.items():
            loop.remove_signal_handler(sig)
            signal.signal(sig, previous)  # type: ignore[arg-type]
        self._signals.clear()

    def savable(self) -> Snapshot | None:
        """The snapshot E would save: one with figures, when the app can save."""
        snapshot = self.main.snapshot
        if self.save is None or snapshot is None or snapshot.graph is None or not snapshot.nodes:
            return None
        return snapshot

    def unsaved(self) -> bool:
        """True when the figures shown have not been saved as they are now."""
        snapshot = self.savable()
        return snapshot is not None and (self.saved is None or self.saved[0] != snapshot.seq)

    def save_figures(self) -> str | None:
        """Save the figures shown (:attr:`save`); returns the path, or None when there is nothing to save."""
        snapshot = self.savable()
        if snapshot is None or self.save is None:
            return None
        path = self.save(snapshot)
        self.saved = (snapshot.seq, path)
        return path

    def action_save(self) -> None:
        """Write the figures shown as JSON (as --json does) and say where."""
        try:
            path = self.save_figures()
        except FxtuiError as e:
            self.notify(str(e), title="not saved", severity="error", timeout=8)
            return
        if path is not None:
            self.notify(f"saved to {path}", title="figures saved", timeout=6)

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


def _kind_of(snapshot: Snapshot, kind: str) -> Snapshot:
    """The last profile's figures of ``kind``, holding the others' (the one shown among them) as ``snapshot`` did."""
    assert snapshot.steps is not None
    held = {snapshot.steps.kind: dataclasses.replace(snapshot, other_kinds={}), **snapshot.other_kinds}
    chosen = held.pop(kind)
    return dataclasses.replace(chosen, other_kinds=held)
