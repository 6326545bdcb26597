"""Run a live profiling session in a child process and relay its snapshots.

Why a process and not a thread: a torch operator releases the GIL while it
computes, but must take it back to return to Python. In one process, whenever the
UI thread is rendering at that moment the node's timed region grows by the wait —
the UI would distort what it measures. In a child process the model has an
interpreter of its own; the UI only unpickles a snapshot a few times a second.
It also keeps torch out of the UI process, which starts faster for it.

The graph description (:class:`GraphInfo`) crosses the pipe when it is new (at the
start, and once more when the analysis has filled it in); snapshots travel without it
and are re-attached here. A snapshot's node and module statistics travel as columns
(:class:`~fxtui.core.column_table.ColumnTable`): as one object per node, a 50,000-node
snapshot took about a second to unpickle, holding the GIL, so the app could not
answer a key meanwhile.

This module imports neither torch nor the engine's torch-using modules at import
time: the child imports them itself.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing as mp
import os
import signal
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from fxtui.core.column_table import ColumnTable, Stored
from fxtui.core.commands import Command, Stop
from fxtui.core.nodes import ModuleStats, NodeStats
from fxtui.core.settings import RunSettings
from fxtui.core.snapshot import GraphInfo, Snapshot, State


@dataclasses.dataclass(frozen=True)
class ChildOptions:
    """What the child needs to build and run the session (all picklable)."""

    settings: RunSettings
    """What the user asked (the target, threads, warm-up, the allocator's policy, disturbed steps)."""
    interval: float = 0.3
    """Seconds between snapshots, at least."""
    nice: int = 10
    """Scheduling niceness of the child. The model's threads would otherwise share the
    cores evenly with the app, and a key press could wait for a time slice: measured
    with resnet18 5×3×224×224 rerunning on 2 cores (another load present), keys took
    115 ms median / 300-340 ms p95 at 0 and 45 ms / 100-112 ms at 10. The price: other
    busy processes on the machine now win over the model more often, which shows as
    noisy nodes."""


class ProcessSource:
    """A :class:`~fxtui.core.snapshot.SnapshotSource` backed by a child process."""

    def __init__(self, options: Any, child: Callable[..., None] | None = None, name: str = "fxtui-engine") -> None:
        """``child(options, send, commands)`` runs in the child process (a model's session by default)."""
        self.options = options
        self._child = child or _child_main
        self._name = name
        self._ctx = mp.get_context("spawn")
        self._commands, self._child_commands = self._ctx.Pipe()
        self._process: Any = None
        self._lock = threading.Lock()
        self._stopped = False

    def send(self, command: Command) -> None:
        """Pass ``command`` to the child (it acts between runs); a ``Stop`` also ends :meth:`run`."""
        with self._lock:
            if isinstance(command, Stop):
                self._stopped = True
            elif self._stopped:
                return
            if self._process is None:
                return
            with contextlib.suppress(OSError):  # the child is gone; run() reports it
                self._commands.send(command)

    def start(self) -> None:
        """Start the child process (idempotent).

        Call it before a full-screen app takes over stdio: multiprocessing hands
        ``sys.stderr``'s file descriptor to its helper process, and an app that
        has replaced ``sys.stderr`` has none. Starting early also overlaps loading
        the model with the app's own start-up.
        """
        with self._lock:
            if self._process is not None or self._stopped:
                return
            self._receive, send = self._ctx.Pipe(duplex=False)
            self._process = self._ctx.Process(
                target=self._child, args=(self.options, send, self._child_commands), daemon=True, name=self._name
            )
            self._process.start()
        send.close()

    def received(self, kind: str, payload: Any) -> None:
        """A message from the child that is neither a graph nor a snapshot (a subclass's own)."""

    def run(self, publish: Callable[[Snapshot], None]) -> None:
        """Start the child if needed and publish what it sends until it ends."""
        self.start()
        if self._process is None:
            return
        receive = self._receive
        graph: GraphInfo | None = None
        last: Snapshot | None = None
        unpacker = Unpacker()
        try:
            while True:
                try:
                    kind, payload = receive.recv()
                except EOFError:
                    break
                if kind == "graph":
                    graph = payload
                    continue
                if kind != "snapshot":
                    self.received(kind, payload)
                    continue
                snapshot = unpacker.unpack(payload)
                if graph is not None and snapshot.graph is None:
                    snapshot = dataclasses.replace(snapshot, graph=graph)
                last = snapshot
                publish(snapshot)
        finally:
            self._process.join(timeout=5)
            if self._process.is_alive():
                self._process.terminate()
                self._process.join(timeout=5)
        if not self._stopped and (last is None or last.state not in (State.DONE, State.ERROR)):
            code = self._process.exitcode
            why = " (killed: perhaps out of memory)" if code == -signal.SIGKILL else ""
            message = f"the profiling process ended unexpectedly with exit code {code}{why}"
            if last is None or not last.nodes:
                publish(Snapshot(graph, State.ERROR, seq=(last.seq + 1) if last else 1, message=message))
                return
            # What it measured stays: the last snapshot's figures, said to be final (the app can save them).
            publish(
                dataclasses.replace(
                    last,
                    state=State.ERROR,
                    seq=last.seq + 1,
                    error=None,
                    what_if_progress="",
                    message=f"{message}; the figures shown are its last and final",
                )
            )


#: The statistics that travel as columns: the snapshot's field and the record type.
_TABLES: tuple[tuple[str, type], ...] = (("nodes", NodeStats), ("modules", ModuleStats))
#: A snapshot on the pipe: itself without its tables, and each table's names (None: as last time) and columns.
Packed = tuple[Snapshot, dict[str, tuple[tuple[str, ...] | None, dict[str, Stored]]]]


class Packer:
    """The child's side of the pipe: a snapshot's statistics as columns, their names only when they changed.

    The names (every node's, every module's) are the same in every snapshot of a session;
    pickled each time, 50,000 node names and as many module paths took the app ~40 ms a
    snapshot to unpickle and index.
    """

    def __init__(self) -> None:
        self._names: dict[str, tuple[str, ...]] = {}

    def pack(self, snapshot: Snapshot) -> Packed:
        """``snapshot`` as it crosses the pipe."""
        tables = {}
        for field, kind in _TABLES:
            table = ColumnTable.of(kind, getattr(snapshot, field))
            same = self._names.get(field) == table.names
            self._names[field] = table.names
            tables[field] = (None if same else table.names, table.columns)
        return dataclasses.replace(snapshot, nodes={}, modules={}), tables


class Unpacker:
    """The app's side of the pipe: the snapshot :meth:`Packer.pack` sent.

    Successive tables share one names tuple and its index while the names stay the same:
    the app keeps what it derives from a table's order (which column entry is which row)
    as long as ``names`` is the same object.
    """

    def __init__(self) -> None:
        self._tables: dict[str, ColumnTable[Any]] = {}

    def unpack(self, packed: Packed) -> Snapshot:
        """The snapshot, its statistics as :class:`ColumnTable` s."""
        snapshot, tables = packed
        changes: dict[str, Any] = {}
        for field, kind in _TABLES:
            names, columns = tables[field]
            before = self._tables.get(field)
            table: ColumnTable[Any]
            if names is None and before is not None:
                table = ColumnTable(kind, before.names, columns, before.index)
            else:
                table = ColumnTable(kind, names or (), columns)
            changes[field] = self._tables[field] = table
        return dataclasses.replace(snapshot, **changes)


class Publisher:
    """The child's side of the pipe: each snapshot packed, its graph sent only when it is a new one."""

    def __init__(self, send: Connection) -> None:
        self._send = send
        self._graph: GraphInfo | None = None
        self._packer = Packer()

    def __call__(self, snapshot: Snapshot) -> None:
        if snapshot.graph is not None:
            # Sent again only when it changes (once more, when the analysis has filled it in).
            if snapshot.graph is not self._graph:
                self._send.send(("graph", snapshot.graph))
                self._graph = snapshot.graph
            snapshot = dataclasses.replace(snapshot, graph=None)
        self._send.send(("snapshot", self._packer.pack(snapshot)))


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


def _child_main(options: ChildOptions, send: Connection, commands: Connection) -> None:
    """The child: build the session, rerun it, send snapshots (graph once), obey commands."""
    # The parent owns the terminal and decides when to stop; Ctrl+C reaching the
    # whole process group must not kill the child mid-write.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if options.nice:
        os.nice(options.nice)
    # The terminal belongs to the app: a stray warning from torch or a library
    # would scribble over the screen. Errors reach the app as snapshots instead.
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    _no_semaphores()
    settings = options.settings
    if settings.malloc == "keep":
        from fxtui.engine.allocator import keep_freed_memory

        keep_freed_memory()
    import torch

    from fxtui.engine.live import LiveSource
    from fxtui.engine.pipeline import session_for_target

    if settings.session_threads:
        torch.set_num_threads(settings.session_threads)
    source = LiveSource(
        lambda progress: session_for_target(
            settings.target, progress, analyse=False, keep_disturbed=settings.keep_disturbed
        ),
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
