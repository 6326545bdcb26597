"""The program's own process says how it ends, last, to a collector that may not be its parent.

Under ``fxtui run --once`` the program *is* the process the user started (fxtui became it), and
its collector runs beside it: the boot says the exit status, then waits for the profile to be
printed, so it comes before the shell's prompt, after everything the program printed. A
collector that adopted a detached job (its first one died) learns the status the same way. On a
connection of its own (the agent's may be gone, or never have been: a program that never imports
torch), with deadlines: a collector that does not answer within :data:`ANSWER_S` seconds is not
waited for, and the profile's printing for at most :data:`REPORT_S`.
"""

from __future__ import annotations

import contextlib
import os
import sys

from fxtui.wire.agent_env import AGENT_ADDRESS, AGENT_KEY, PROGRAM_PID

# The boot imports this module before the program's first line: what says the exit (the message, the connection)
# is imported as the program ends.

#: Seconds the program waits for the collector to take its exit status (it answers at once, but yields the cores to
#: the program: on a busy machine it may take a moment).
ANSWER_S = 5.0
#: Seconds the program gives a collector that prints nothing as it ends (a detached job's) to take the status.
QUICK_S = 0.5
#: Seconds the program waits, at most, for its profile to be printed once the collector has the status.
REPORT_S = 10.0

_said = False


def say_exit(code: int) -> None:
    """Tell the collector the program ends with ``code`` (``-N``: by signal N); under ``fxtui run --once`` wait
    for the profile to be printed. Once per process; never raises, never waits on a collector that is gone."""
    global _said
    address = os.environ.get(AGENT_ADDRESS)
    if _said or not address:
        return
    _said = True
    waits = os.environ.get(PROGRAM_PID) == str(os.getpid())
    for stream in (sys.stdout, sys.stderr):  # the program's output first, the profile after it
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()
    try:  # a collector that waits for nothing (a detached job's) is not waited for long
        from fxtui.wire.agent_contract import ProgramExit, connect

        timeout = ANSWER_S if waits else QUICK_S
        connection = connect(address, bytes.fromhex(os.environ.get(AGENT_KEY, "")), timeout=timeout)
    except Exception:  # no collector: nothing to say
        return
    try:
        with connection:
            connection.send(ProgramExit(os.getpid(), code, waits))
            if waits and connection.poll(ANSWER_S):  # it has the status, and prints
                connection.recv_bytes(256)
                connection.poll(REPORT_S)  # "printed", or its end
    except Exception:  # a collector that went meanwhile: the program ends as it would
        return
