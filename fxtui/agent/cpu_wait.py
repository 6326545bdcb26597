"""How long the program's stepping thread was ready to run but waited for a CPU: read at step boundaries.

On a shared server another process holds the core while the program's thread is ready: that time is
neither an op's nor the program's Python. Linux counts it per thread, the second field of
``/proc/thread-self/schedstat`` (run-queue delay, ns; the first is time on a CPU). The agent reads it where a step
opens, pauses, resumes and closes (:class:`~fxtui.agent.steps.StepModel`), so every step, sampled or not, carries
the wait of the thread that ran it.

The cost is what an unsampled step can afford: the file is opened once per thread and read with ``pread`` at
offset 0 (the kernel writes it afresh each time), one system call of about 1 µs, where an open, read and
close costs 6–12 µs (``tests/benchmarks/bench_shared_server.py`` prints both). A forked child (a DataLoader worker)
drops the parent's descriptor: ``thread-self`` was resolved when it was opened, so it would read the parent's
thread. Where the file does not exist (another OS, a kernel without schedstats), :meth:`ThreadWait.read` says -1
and the steps carry no wait.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref

_PATH = "/proc/thread-self/schedstat"


class ThreadWait:
    """The calling thread's run-queue delay so far, ns (:meth:`read`), from a descriptor kept per thread."""

    def __init__(self, path: str = _PATH) -> None:
        self._path = path
        self._fds: dict[int, int] = {}
        self._broken = not hasattr(os, "pread")
        _LIVE.add(self)

    def read(self) -> int:
        """The calling thread's run-queue delay so far (ns), or -1 where the kernel does not say."""
        if self._broken:
            return -1
        tid = threading.get_native_id()
        fd = self._fds.get(tid)
        try:
            if fd is None:
                fd = self._fds[tid] = os.open(self._path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            return int(os.pread(fd, 64, 0).split()[1])
        except (OSError, ValueError, IndexError):
            self._broken = True  # said once: no step carries a wait from now on
            return -1

    def close(self) -> None:
        """Close every descriptor (the agent uninstalls)."""
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)


_LIVE: weakref.WeakSet[ThreadWait] = weakref.WeakSet()


def _forget_in_child() -> None:
    """In a forked child the descriptors read the parent's threads: they are closed, and opened anew on use."""
    for wait in list(_LIVE):
        wait.close()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
