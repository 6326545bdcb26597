"""Errors a user can cause and fix. Their text is one sentence, shown as is."""

from __future__ import annotations


class FxtuiError(Exception):
    """A problem with the user's input (model, options, files), worded for the user.

    The command line prints ``str(error)`` and exits with :attr:`exit_status`; ``--debug``
    shows the traceback as well.
    """

    exit_status = 2
    """The command's exit status: 2, the status of a user's mistake."""


class Interrupted(FxtuiError):
    """A signal (Ctrl+C, SIGTERM, SIGHUP) ended the command before it had anything to show.

    Not a mistake, so not status 2: the shell's convention for a command a signal ended, 128 + its number
    (130 for Ctrl+C, 143 for SIGTERM), which scripts and supervisors read as "stopped", not "failed".
    """

    def __init__(self, message: str, signum: int) -> None:
        super().__init__(message)
        self.signum = signum
        self.exit_status = 128 + signum


class NodeError(FxtuiError):
    """The model raised while running one FX node."""

    def __init__(self, node: str, message: str) -> None:
        super().__init__(message)
        self.node = node


def first_line(text: str, limit: int = 200) -> str:
    """The first non-blank line of ``text``, stripped, cut to ``limit`` characters with an ellipsis."""
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def exception_text(e: BaseException) -> str:
    """``ValueError: message`` on one line."""
    message = " ".join(str(e).split())
    if len(message) > 200:
        message = message[:199] + "…"
    return f"{type(e).__name__}: {message}" if message else type(e).__name__
