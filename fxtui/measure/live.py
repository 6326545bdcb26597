"""The live rerun loop: load, warm up, rerun, publish snapshots, act on commands between runs.

A :class:`LiveSource` runs in one worker thread (in the app, inside the engine's child
process). Consumers talk to it only through :meth:`LiveSource.send` with the typed
commands of :mod:`fxtui.wire.viewer_commands`; the loop drains them between runs, so nothing
a command does (an aten pass, a what-if) lands inside a timed run. The analyses return
their findings and the loop keeps them on the session, which every snapshot reports.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from collections.abc import Callable

from fxtui.core.errors import FxtuiError
from fxtui.core.snapshot import Snapshot, State
from fxtui.measure import explain
from fxtui.measure.session import Session
from fxtui.wire.viewer_commands import Explain, MeasureWhatIfs, Pause, RequestHints, Reset, Resume, Stop, ViewerCommand

#: Runs in a row that may fail before the loop stops rerunning (a model that started to raise would otherwise
#: be rerun as fast as it fails: 267,882 failed runs and both cores busy, in one report).
MAX_FAILURES_IN_A_ROW = 5


class LiveSource:
    """Runs a session in the calling (worker) thread and publishes snapshots.

    ``build`` loads and captures the model and returns a :class:`Session`; it runs
    inside :meth:`run`, so the UI is up while the model loads. Snapshots are
    published at most every ``interval`` seconds, never per node.

    With ``analyse``, the work per node (FLOPs, bytes), source lines and the machine's
    peaks are measured right after the first timings are published, not before: the
    user sees numbers a pass over the model sooner (0.6 s for BERT-base), and the
    columns that need the analysis fill in a moment later. The memory pass runs with it.
    """

    def __init__(
        self,
        build: Callable[[Callable[[State, str], None]], Session],
        *,
        warmup: int = 3,
        interval: float = 0.3,
        max_runs: int | None = None,
        analyse: bool = False,
        display: int | None = None,
    ) -> None:
        self._build = build
        self.display = display
        """The process id of the app showing the snapshots: its drawing is told apart from other work, and
        the loop lets it draw a snapshot before the next step (:meth:`LoadProbe.wait_for_display`)."""
        self.warmup = warmup
        self.interval = interval
        self.max_runs = max_runs
        self.analyse = analyse
        self._commands: queue.SimpleQueue[ViewerCommand] = queue.SimpleQueue()
        self._stop_asked = threading.Event()
        """Set by :meth:`send` as soon as a Stop arrives, so a what-if being measured ends between two pairs."""
        self._paused = False
        self._stopped = False
        self._failing = 0
        """Runs in a row that failed; at :data:`MAX_FAILURES_IN_A_ROW` the loop stops until a Resume."""
        self.session: Session | None = None

    def send(self, command: ViewerCommand) -> None:
        """Queue ``command``; the loop acts on it between runs (at once when paused)."""
        if isinstance(command, Stop):
            self._stop_asked.set()
        self._commands.put(command)

    def _drain(self, session: Session, send: Callable[[Snapshot], None], *, block: bool) -> None:
        """Act on every queued command; with ``block``, wait for the first one."""
        explained: list[str] = []
        what_ifs: list[str] = []
        hints = reset = False
        while True:
            try:
                command = self._commands.get(block=block)
            except queue.Empty:
                break
            block = False
            match command:
                case Pause():
                    self._paused = True
                case Resume():
                    self._paused = False
                    self._failing = 0
                case Stop():
                    self._stopped = True
                case Reset():
                    reset = True
                case Explain(node):
                    explained.append(node)
                case RequestHints():
                    hints = True
                case MeasureWhatIfs(names):
                    what_ifs.extend(names)
        state = State.PAUSED if self._paused else State.RUNNING
        if not self._paused and self._failing >= MAX_FAILURES_IN_A_ROW:
            state = State.STOPPED
        if reset:
            session.reset()
            send(session.snapshot(state, message="statistics reset"))
        missing = [n for n in dict.fromkeys(explained) if n not in session.aten]
        if missing:  # an aten pass reruns the model: only for nodes not explained yet
            session.aten.update(explain.explain_nodes(session, missing))
        if hints:
            session.hints = explain.hints_for(session)
        if explained or hints:
            send(session.snapshot(state))
        if what_ifs and not self._stopped:
            self._measure(session, send, tuple(dict.fromkeys(what_ifs)), state)

    def _measure(
        self, session: Session, send: Callable[[Snapshot], None], names: tuple[str, ...], state: State
    ) -> None:
        """Measure what-ifs between runs, publishing progress (at most every ``interval``) and each result."""
        from fxtui.measure.whatif.runner import run_what_ifs

        last = 0.0

        def progress(message: str) -> None:
            nonlocal last
            session.what_if_progress = message
            if time.monotonic() - last >= self.interval:
                last = time.monotonic()
                send(session.snapshot(state))

        try:
            run_what_ifs(
                session,
                names,
                progress=progress,
                done=lambda result: send(session.snapshot(state)),
                cancelled=self._stop_asked.is_set,
            )
        finally:
            session.what_if_progress = ""
        send(session.snapshot(state))

    def run(self, publish: Callable[[Snapshot], None]) -> None:
        """Load, capture, warm up, then rerun until stopped, publishing snapshots."""
        seq = 0

        def send(snapshot: Snapshot) -> None:
            nonlocal seq
            seq += 1
            publish(dataclasses.replace(snapshot, seq=seq))

        try:
            session = self.session = self._build(lambda state, message: send(Snapshot(None, state, message=message)))
        except FxtuiError as e:
            send(Snapshot(None, State.ERROR, message=str(e)))
            return
        from fxtui.measure.whatif.runner import what_if_options

        session.what_if_options = what_if_options(session)
        if self.display is not None:
            session.probe.watch(self.display)
        runs = f"{self.warmup} run" if self.warmup == 1 else f"{self.warmup} runs"
        send(session.snapshot(State.WARMING_UP, message=f"warming up ({runs})"))
        session.warm_up(self.warmup)
        last = 0.0
        interval = self.interval
        analysed = not self.analyse
        waiting = False
        while True:
            self._drain(session, send, block=waiting)
            if self._stopped:
                break
            done = self.max_runs is not None and session.samples.count >= self.max_runs
            failing = self._failing >= MAX_FAILURES_IN_A_ROW
            if self._paused or done or failing:
                if not waiting:
                    send(self._idle_snapshot(session, failing))
                waiting = True  # nothing to run: sleep until a command arrives
                continue
            waiting = False
            self._failing = 0 if session.run_pair() else self._failing + 1
            if session.last_error is not None and session.samples.count == 0:
                time.sleep(0.1)  # every run fails: do not spin
            now = time.monotonic()
            if now - last >= interval:
                last = now
                send(session.snapshot(State.RUNNING))
                # A 10,000-node snapshot takes ~0.2 s; publish so that freezing statistics
                # never takes more than a quarter of the loop's time.
                interval = max(self.interval, 4 * (time.monotonic() - now))
                session.probe.wait_for_display()  # the app draws it now, not during the next step
                if not analysed and session.samples.count:
                    analysed = True
                    # The memory pass (about one more run) comes with the analysis: the app's memory
                    # columns and plot (m) appear once it has run.
                    explain.annotate(session, memory=True)
                    send(session.snapshot(State.RUNNING))
        send(session.snapshot(State.DONE, message="stopped"))

    def _idle_snapshot(self, session: Session, failing: bool) -> Snapshot:
        """What the loop says when it stops rerunning: paused, done, or stopped because the model kept raising."""
        if self._paused:
            return session.snapshot(State.PAUSED, message="paused")
        if failing:
            # Rerunning a model that raises every time only burns the cores; the figures so far stay.
            message = f"the model raised in {self._failing} runs in a row; figures kept, space reruns"
            return session.snapshot(State.STOPPED, message=message)
        return session.snapshot(State.DONE, message=f"done: {session.samples.count} runs")
