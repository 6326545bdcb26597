"""What a long command is doing, on one line of stderr rewritten in place: on a terminal, and only for long work.

py-spy and pip say what they are doing while a user waits; a headless profile can take a minute
(a model that loads slowly, a compile, 60 runs on a busy machine) and said nothing. A
:class:`ProgressLine` shows the current stage once the work has taken :data:`DELAY_S` (a profile done
sooner never flickers a line), rewrites it in place (``\\r`` and erase-to-end), never wider than the
terminal (a wrapped line could not be rewritten), and erases it before the results print. When stderr
is not a terminal it writes nothing at all: logs and pipes get the results only.

Two kinds of update. A *stage* (:meth:`ProgressLine.stage`: loading, capturing) may take long with
nothing to report between its start and end: a thread redraws it each :data:`TICK_S` with the seconds
it has taken so far. A *step* (:meth:`ProgressLine.step`: run 12 of 30) is drawn by the caller's
thread between timed runs, and the redrawing thread sleeps meanwhile, so nothing of fxtui's own runs
beside a timed run.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TextIO

#: Work that ends sooner than this shows no line at all.
DELAY_S = 1.0
#: How often a stage's line is redrawn with its seconds so far.
TICK_S = 0.5
#: Steps redraw at most this often (runs of a small model take milliseconds each).
STEP_EVERY_S = 0.1


class ProgressLine:
    """One line of stderr that says what the command is doing (nothing unless stderr is a terminal)."""

    def __init__(self, stream: TextIO | None = None, *, enabled: bool | None = None, delay_s: float = DELAY_S):
        self.stream = stream or sys.stderr
        self.enabled = _is_terminal(self.stream) if enabled is None else enabled
        self._delay_s = delay_s
        self._started = time.monotonic()
        self._message = ""
        self._stage_started = self._started
        self._ticking = False
        self._drawn = False
        self._last_step = 0.0
        self._closed = False
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None

    # -- updates ---------------------------------------------------------------------------------------------

    def stage(self, message: str) -> None:
        """A stage of work with nothing to report until it ends: redrawn with its seconds so far."""
        if not self.enabled:
            return
        with self._lock:
            self._message, self._stage_started, self._ticking = message, time.monotonic(), True
            self._start_thread()
            self._lock.notify()
        self._draw()

    def step(self, message: str) -> None:
        """Progress within a stage (``run 12 of 30``), drawn now from the caller's thread; the redrawing thread
        sleeps until the next :meth:`stage`."""
        if not self.enabled:
            return
        now = time.monotonic()
        with self._lock:
            self._message, self._ticking = message, False
            if now - self._last_step < STEP_EVERY_S:
                return
            self._last_step = now
        self._draw()

    def clear(self) -> None:
        """Erase the line (before results print); the next update draws it again."""
        with self._lock:
            if self._drawn:
                self._write("\r\x1b[K")
                self._drawn = False

    def close(self) -> None:
        """Erase the line and stop redrawing."""
        with self._lock:
            self._closed = True
            self._ticking = False
            self._lock.notify()
        if self._thread is not None:
            self._thread.join()
        self.clear()

    def __enter__(self) -> ProgressLine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- drawing ---------------------------------------------------------------------------------------------

    def _draw(self) -> None:
        with self._lock:
            if self._closed or time.monotonic() - self._started < self._delay_s:
                return
            text = self._message
            if self._ticking:
                elapsed = time.monotonic() - self._stage_started
                if elapsed >= 1:
                    text += f" ({elapsed:.0f} s)"
            width = _width(self.stream)
            if len(text) > width - 1:
                text = text[: width - 2] + "…"
            self._write(f"\r\x1b[K{text}")
            self._drawn = True

    def _write(self, text: str) -> None:
        try:
            try:
                self.stream.write(text)
            except UnicodeEncodeError:  # a terminal in a non-UTF-8 locale
                self.stream.write(text.encode("ascii", "replace").decode("ascii"))
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False  # the terminal went away: the work goes on without the line

    def _start_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._tick, name="fxtui-progress", daemon=True)
            self._thread.start()

    def _tick(self) -> None:
        while True:
            with self._lock:
                while not self._ticking and not self._closed:
                    self._lock.wait()  # a step is drawn by its own thread: sleep until the next stage
                if self._closed:
                    return
                self._lock.wait(TICK_S)
                if self._closed:
                    return
                ticking = self._ticking
            if ticking:
                self._draw()


def eta_text(elapsed_s: float, done: int, total: int) -> str:
    """``about 12 s left`` from the pace so far; empty before the first step."""
    if done <= 0 or total <= done:
        return ""
    left = elapsed_s / done * (total - done)
    if left < 1:
        return ""
    return f"about {left:.0f} s left" if left < 120 else f"about {left / 60:.0f} min left"


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _width(stream: TextIO) -> int:
    """The terminal's width; 80 where it cannot say (a new pseudo-terminal reports 0)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (AttributeError, OSError, ValueError):
        return 80
