"""Errors a user can cause and fix. Their text is one sentence, shown as is."""

from __future__ import annotations


class FxtuiError(Exception):
    """A problem with the user's input (model, options, files), worded for the user.

    The command line prints ``str(error)`` and exits with status 2; ``--debug``
    shows the traceback as well.
    """


class NodeError(FxtuiError):
    """The model raised while running one FX node."""

    def __init__(self, node: str, message: str) -> None:
        super().__init__(message)
        self.node = node


def exception_text(e: BaseException) -> str:
    """``ValueError: message`` on one line."""
    message = " ".join(str(e).split())
    if len(message) > 200:
        message = message[:199] + "…"
    return f"{type(e).__name__}: {message}" if message else type(e).__name__
