"""The engine child of ``fxtui MODEL``: build the session, rerun the model, send snapshots, obey commands.

Started by the app's process (:mod:`fxtui.commands.model_engine`) with ``spawn``; this module
imports torch and the engine only inside :func:`child_main`, so the app can name it without
loading them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import threading
from multiprocessing.connection import Connection

from fxtui.core.settings import ModelSettings
from fxtui.core.snapshot import Snapshot, State
from fxtui.wire.snapshot_packing import Publisher
from fxtui.wire.viewer_commands import Stop


@dataclasses.dataclass(frozen=True)
class ChildOptions:
    """What the child needs to build and run the session (all picklable)."""

    settings: ModelSettings
    """What the user asked (the target, threads, warm-up, the allocator's policy, disturbed steps)."""
    interval: float = 0.3
    """Seconds between snapshots, at least."""
    nice: int = 10
    """Scheduling niceness of the child. The model's threads would otherwise share the
    cores evenly with the app, and a key press could wait for a time slice: measured
    with resnet18 5×3×224×224 rerunning on 2 cores (another load present), keys took
    115 ms median / 300-340 ms p95 at 0 and 45 ms / 100-112 ms at 10. The price: other
    busy processes on the machine now win over the model more often, which shows as
    noisy nodes.

    It applies from the reruns on: loading (importing torch, building, tracing, compiling) runs at
    the app's own priority, while the app has little to draw. Loaded at nice 10 beside other work,
    a model took ten times as long to start: an unknown name was refused after 247 s instead of
    23 s at a load of 9.5 on 2 cores (three busy loops and other tests)."""


def _no_semaphores() -> None:
    """Keep the child from making named semaphores, which a child that is killed cannot give back.

    ``torch.fx.Interpreter.run`` makes a (disabled) tqdm progress bar, and tqdm's first bar makes a
    ``multiprocessing`` lock: a named semaphore the resource tracker, shared with the app, takes back when the app
    ends. After the OOM killer's ``kill -9`` it did so with a "leaked semaphore" warning on the user's terminal.
    A thread lock does as well here: the child writes no progress bar from other processes.
    """
    with contextlib.suppress(ImportError):
        import tqdm

        tqdm.tqdm.set_lock(threading.RLock())


def child_main(options: ChildOptions, send: Connection, commands: Connection) -> None:
    """The child: build the session, rerun it, send snapshots (graph once), obey commands."""
    # The parent owns the terminal and decides when to stop; Ctrl+C reaching the
    # whole process group must not kill the child mid-write.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The terminal belongs to the app: a stray warning from torch or a library
    # would scribble over the screen. Errors reach the app as snapshots instead.
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    _no_semaphores()
    settings = options.settings
    if settings.malloc == "keep":
        from fxtui.measure.allocator import keep_freed_memory

        keep_freed_memory()
    import torch

    from fxtui.measure.live import LiveSource
    from fxtui.measure.pipeline import Progress, session_for_target
    from fxtui.measure.session import Session

    if settings.session_threads:
        torch.set_num_threads(settings.session_threads)

    def build(progress: Progress) -> Session:
        session = session_for_target(settings.target, progress, analyse=False, keep_disturbed=settings.keep_disturbed)
        # Loading ran at the app's own priority; the reruns from here on yield the cores to it (ChildOptions.nice).
        if options.nice:
            os.nice(options.nice)
        return session

    source = LiveSource(
        build,
        warmup=settings.warmup,
        interval=options.interval,
        analyse=True,
        display=os.getppid(),  # the app that started this process draws on the same cores
    )
    publish = Publisher(send)

    def obey() -> None:
        while True:
            try:
                command = commands.recv()
            except (EOFError, OSError):
                command = Stop()  # the parent is gone
            source.send(command)
            if isinstance(command, Stop):
                return

    threading.Thread(target=obey, daemon=True, name="fxtui-commands").start()
    try:
        source.run(publish)
    except Exception as e:  # an engine bug: tell the UI in one line rather than vanish
        failed = Snapshot(None, State.ERROR, message=f"internal error {type(e).__name__}: {e}")
        publish(failed)
    finally:
        send.close()
