"""The ``fxtui`` command: read the command line (:mod:`fxtui.commands.parser`), run the command, and turn
what can go wrong into one sentence and an exit status.

Torch and Textual are imported only by the command that needs them, once it is known which.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from fxtui.commands.output import say
from fxtui.commands.parser import HELP, VERSION, Invocation, help_text, parse, version_text
from fxtui.core.errors import FxtuiError

EXIT_USAGE = 2
EXIT_INTERNAL = 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        try:
            invocation = parse(argv)
        except SystemExit as e:  # --help printed the help
            return e.code if isinstance(e.code, int) else EXIT_USAGE
        return _run(invocation)
    except FxtuiError as e:
        if debug:
            _print_traceback()
        say(f"fxtui: {e}", sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        say("fxtui: interrupted", sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (fxtui … | head): not an error. Point stdout at
        # /dev/null so the interpreter's final flush does not complain either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:  # a bug in fxtui rather than in the user's input
        if debug:
            _print_traceback()
        say(f"fxtui: internal error {type(e).__name__}: {e} (run with --debug for details)", sys.stderr)
        return EXIT_INTERNAL


def _run(invocation: Invocation) -> int:
    if invocation.command == VERSION:
        say(version_text())
        return 0
    if invocation.command == HELP:
        sys.stdout.write(help_text(invocation.args.topic))
        return 0
    return invocation.runner()(invocation.args)


def _print_traceback() -> None:
    """``--debug``: the traceback of the error being handled (its module imported only then: ``fxtui run`` imports
    this one before its program starts)."""
    import traceback

    traceback.print_exc()
