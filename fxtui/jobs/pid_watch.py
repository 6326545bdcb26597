"""Whether a process that is not this one's child still runs, and waiting for its end."""

from __future__ import annotations

import os
import select
import time
from collections.abc import Callable

from fxtui.wire.job_directory import running


def watch_pid(pid: int) -> Callable[[float], bool]:
    """``ended(timeout)``: True once process ``pid`` has ended (waiting at most ``timeout`` seconds to know).

    A pid file descriptor where the system has them: it says the end even while the process waits, a zombie,
    for its parent to read its status (a parent that first reads the program's output to its end would
    otherwise wait for the collector, which waits for it).
    """
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = -1

    def ended(timeout: float) -> bool:
        if fd >= 0:
            return bool(select.select([fd], [], [], timeout)[0])
        time.sleep(timeout)
        return not running(pid)

    return ended
