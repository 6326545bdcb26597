"""The first code of a program run under ``fxtui run``: it starts the agent, then runs the program as Python would.

``python -m fxtui.agent.boot SCRIPT [ARGS…]`` (or ``-m MODULE [ARGS…]``) behaves as
``python SCRIPT [ARGS…]``: ``sys.argv``, ``__name__ == "__main__"``, the script's directory
first on ``sys.path`` (the current one for ``-m``), its stdout, stderr and exit status. An
exception it does not catch prints the program's own traceback (fxtui's frames left out) and
exits with status 1; ``sys.exit(n)`` exits with ``n``; Ctrl+C ends it as it would end Python.

The agent (:mod:`fxtui.agent.agent`) is installed the moment the program first imports
torch, not before: a script that sets ``OMP_NUM_THREADS`` or calls ``torch.set_num_threads``
before importing torch gets exactly what it asked for. Where ``FXTUI_AGENT`` is not set (no
collector is listening) nothing is installed and the program runs untouched. As it ends, the
program's process says its exit status to the collector (:mod:`fxtui.agent.program_exit`).
"""

from __future__ import annotations

import atexit
import os
import runpy
import signal
import sys
import types
from collections.abc import Sequence

from fxtui.agent.on_torch_import import watch_this_process
from fxtui.agent.program_exit import say_exit

_OWN_FILES = (os.path.abspath(__file__), runpy.__file__, "<frozen runpy>")
#: fxtui's own code that can stand between the program's frames (the agent's wrappers of torch's functions).
_AGENT_DIRS = (os.path.dirname(os.path.abspath(__file__)) + os.sep,)


def _strip(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The traceback from the program's first frame: boot's and runpy's frames left out."""
    while tb is not None and (tb.tb_frame.f_code.co_filename in _OWN_FILES or
                              os.path.abspath(tb.tb_frame.f_code.co_filename) in _OWN_FILES):  # fmt: skip
        tb = tb.tb_next
    return tb


def _without_agent(tb: types.TracebackType | None) -> types.TracebackType | None:
    """``tb`` without the frames of the agent's wrappers (around ``backward``, ``zero_grad`` …)."""
    first: types.TracebackType | None = None
    last: types.TracebackType | None = None
    while tb is not None:
        if not os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_AGENT_DIRS):
            if last is None:
                first = tb
            else:
                last.tb_next = tb
            last = tb
        tb = tb.tb_next
    if last is not None:
        last.tb_next = None
    return first


def _report(error: BaseException) -> None:
    """Print ``error`` as Python would for the program: its own frames only (the hook reads ``__traceback__``)."""
    seen: set[int] = set()
    chained: BaseException | None = error
    while chained is not None and id(chained) not in seen:  # the causes and contexts it carries too
        seen.add(id(chained))
        chained.__traceback__ = _without_agent(chained.__traceback__)
        chained = chained.__cause__ or chained.__context__
    error.__traceback__ = _strip(error.__traceback__)
    sys.excepthook(type(error), error, error.__traceback__)


def run(command: Sequence[str]) -> int:
    """Run ``command`` (``[SCRIPT, ARGS…]`` or ``["-m", MODULE, ARGS…]``) as ``python`` would; its exit status."""
    watch_this_process()
    try:
        if command[0] == "-m":
            sys.argv = [command[1], *command[2:]]  # runpy sets argv[0] to the module's file
            sys.path.insert(0, os.getcwd())
            runpy.run_module(command[1], run_name="__main__", alter_sys=True)
        else:
            script = command[0]
            sys.argv = list(command)
            sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
            runpy.run_path(os.path.abspath(script), run_name="__main__")  # __file__ absolute, as python makes it
    except SystemExit as e:
        return _exit_code(e.code)
    except KeyboardInterrupt as e:
        _report(e)
        _finish()
        say_exit(-signal.SIGINT)
        # As Python itself does: end by the signal, so the parent sees a program Ctrl+C stopped.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        return 130
    except BaseException as e:
        _report(e)
        return 1
    return 0


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message"): Python prints it and exits with 1
    return 1


def _finish() -> None:
    agent = sys.modules.get("fxtui.agent.agent")
    if agent is not None:
        agent.finish()


_status = 0
_pid = os.getpid()


def _say_exit() -> None:
    if os.getpid() == _pid:  # a process the program forked runs the handlers it inherited: it is not the program
        say_exit(_status)


def main() -> None:
    global _status
    if len(sys.argv) < 2:
        print("usage: python -m fxtui.agent.boot SCRIPT [ARGS…] | -m MODULE [ARGS…]", file=sys.stderr)
        raise SystemExit(2)
    # Registered before the program runs, so it runs after every exit handler of the program's own: the status
    # is said (and under fxtui run --once the profile printed) after everything the program printed.
    atexit.register(_say_exit)
    code = run(sys.argv[1:])
    _finish()
    _status = code
    sys.exit(code)


if __name__ == "__main__":
    main()
