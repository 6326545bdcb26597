"""Stopping a headless profile cleanly: the first Ctrl+C, SIGTERM or SIGHUP ends it after the current run."""

from __future__ import annotations

import signal
import threading

#: The signals that ask a command to stop: Ctrl+C, ``kill``, and a terminal (an SSH connection) that went away.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class StopOnSignal:
    """Turn the first Ctrl+C, SIGTERM or SIGHUP into a request to stop after the current run.

    A second signal interrupts at once. Only the main thread may install handlers;
    elsewhere (tests calling main() from a thread) this does nothing.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._previous: dict[int, object] = {}
        self.signum: int | None = None
        """The first signal that arrived, once one has."""

    def is_set(self) -> bool:
        return self._event.is_set()

    def _handle(self, signum: int, frame: object) -> None:
        if self._event.is_set():
            raise KeyboardInterrupt
        self.signum = signum
        self._event.set()

    def __enter__(self) -> StopOnSignal:
        if threading.current_thread() is threading.main_thread():
            for sig in STOP_SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
