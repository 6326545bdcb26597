"""Mistakes on the command line: one sentence that ends by pointing at the help of the command it came from."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from fxtui.core.errors import FxtuiError


class UsageError(FxtuiError):
    """A mistake in how a command was called (an option, its value, a missing argument), already pointing at
    the help that says how to call it. Exit status 2, as every mistake a user can fix."""


def help_hint(command: str) -> str:
    """``see fxtui run --help``: where the help of ``command`` is (``""``: the overview)."""
    return f"see fxtui {command} --help" if command else "see fxtui --help"


@contextlib.contextmanager
def pointing_at(command: str) -> Iterator[None]:
    """Turn any :class:`FxtuiError` raised inside into a :class:`UsageError` that points at ``command``'s help.

    Wraps the reading of options into settings (``--sort speed``, ``--compile-mode`` without
    ``--compile``): a mistake there is in how the command was called. Errors that already point somewhere
    (:class:`UsageError`) pass unchanged.
    """
    try:
        yield
    except UsageError:
        raise
    except FxtuiError as e:
        raise UsageError(f"{e} ({help_hint(command)})") from e
