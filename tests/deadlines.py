"""How long a test waits for another process's work before it calls that work hung, in one place.

A passing test never waits a deadline out: it goes on as soon as what it waits for arrives, so a generous deadline
costs nothing on a quiet machine. What it buys is a steady suite on a busy one: the whole suite runs on two workers
beside other work, at load averages of 10 to 15 on two cores, and then every process gets a fraction of a core.

A deadline is fixed where the work is fxtui's own and small (starting an engine on a toy model, refusing a name):
taking longer than that is a fault to see, not load to wait out. Only the program's own heavy work, a compile,
scales with the load, since its CPU time is what it is and its share of the cores is what the machine leaves it.
"""

from __future__ import annotations

import os

#: An engine child of ``fxtui MODEL`` (or the command itself on a pseudo-terminal) from its start to a toy model's
#: first figures, or to the sentence refusing a model name. Measured at a load of 9.5 to 11 on two cores (two or
#: three busy loops and other tests): the name refused in 22 to 40 s (importing torch and torchvision, at the app's
#: priority; 247 s while the child still loaded at nice 10, fxtui/measure/child.py); the first snapshot of three
#: runs in 103 s, most of it the warm-up and the analysis pass, which run at nice 10 and so get what the busy
#: machine leaves them.
START_S = 300.0

#: Once an engine runs: a command it obeys between runs (pause, reset, resume, stop) and the snapshot saying so.
#: Measured at a load of 10.9: pause, reset and resume within 0.2 s; stopped, the child gone, in 8.5 s.
COMMAND_S = 60.0

#: A toy model's compile with Inductor, with room, had it the cores to itself; scaled by :func:`cores_share`. The
#: compile test took 37 to 90 s at a load of 10 to 11, where :func:`compile_s` waits up to 300 + 120 × 6 s.
COMPILE_QUIET_S = 120.0


def cores_share() -> float:
    """How many times slower than on a quiet machine CPU-bound work runs now, at least 1: the runnable processes
    (the one-minute load average, plus the work itself) shared over the cores."""
    cores = os.cpu_count() or 1
    return max(1.0, (os.getloadavg()[0] + 1) / cores)


def compile_s() -> float:
    """How long to wait for a toy model's compile (and the runs after it) at the machine's load now."""
    return START_S + COMPILE_QUIET_S * cores_share()
