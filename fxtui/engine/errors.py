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
