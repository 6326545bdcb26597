"""fxtui: a keyboard-driven terminal profiler for PyTorch models, built on torch.fx.

The Python API profiles a model without any UI::

    import fxtui
    report = fxtui.profile(model, example_input, runs=30, warmup=3)
    print(report.table(sort="median", top=20))

and reads back a profile saved with ``--json`` (by any fxtui command)::

    report = fxtui.load("run.json")
    print(report.module_table())

Attributes are imported on first use, so ``import fxtui`` stays cheap for the
parts of the program that never touch torch.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["FxtuiError", "Report", "Watch", "__version__", "keep_freed_memory", "load", "profile", "watch"]

if TYPE_CHECKING:
    import torch

    from fxtui.core.errors import FxtuiError
    from fxtui.jobs.collector import Collector
    from fxtui.measure.allocator import keep_freed_memory
    from fxtui.report.api import Report


def profile(
    model: torch.nn.Module,
    example_input: Any,
    runs: int = 30,
    warmup: int = 3,
    threads: int | None = None,
    name: str | None = None,
    *,
    kwargs: dict[str, Any] | None = None,
    capture: str = "auto",
    train: bool = False,
    optimizer: str = "sgd",
    memory: bool = False,
    keep_disturbed: bool = False,
    what_ifs: str | Sequence[str] = (),
    generate: int = 0,
    compile: bool = False,
    compile_mode: str = "default",
) -> Report:
    """Capture ``model`` as FX graphs and time every node over ``runs`` runs after ``warmup``.

    ``example_input`` is a tensor or a tuple of positional inputs; ``kwargs`` are keyword
    inputs (``input_ids=…`` for a transformers model). ``capture`` is ``"auto"`` (torch.fx
    symbolic tracing, and TorchDynamo when the model cannot be traced), ``"fx"`` or
    ``"dynamo"``; ``report.capture`` says which ran. Each profiled run
    is interleaved with an uninstrumented run of the same graph, so the report's
    ``fidelity`` and ``overhead`` say how far the per-node figures can be trusted.
    Submodules whose code cannot be traced are kept whole (``report.leaf_modules``).

    With ``train=True`` a run is a whole training step — forward, loss, backward and an
    ``optimizer`` step (``"sgd"`` or ``"adamw"``) — captured with TorchDynamo and AOTAutograd;
    rows carry their ``phase`` and backward nodes are charged to the forward module they
    differentiate. The model's parameters change with every step.

    With ``memory=True`` one more run, before the timed ones, measures each node's output,
    allocated and live-after bytes (``row.info.output_bytes`` …) and the run's peak
    (``report.memory``).

    ``what_ifs`` names changes to measure against the model after the profile, each on a copy of it,
    runs interleaved (``"channels-last,bf16"`` or a list: ``channels-last``, ``bf16``, ``fold-bn``,
    ``threads=N``, ``compile``, ``int8-dynamic``); ``report.what_ifs`` holds the results: run medians
    before → after with their p25–p75 spread, ``verdict``, the output difference and the per-node
    and per-module changes. A what-if that cannot apply to the model has ``error`` set.

    With ``generate=N`` (a causal language model, its token ids as input) a run is one greedy, fixed-length
    ``generate()`` call of N new tokens: rows carry their phase (``prefill``, per call; ``decode``, per
    token) and ``report.generation`` holds the time to first token, per output token, tokens/s, the
    per-position decode times and the KV cache's bytes.

    With ``compile=True`` the model is compiled by Inductor (``compile_mode``: ``"default"`` or
    ``"max-autotune-no-cudagraphs"``) and the rows are its kernel calls: ``row.kernel``, the source nodes it
    fuses (``row.fused_nodes``) and their modules (``row.fused_modules``), charged to their common ancestor
    (``row.module_path``). The eager model runs beside it, interleaved: each module row carries ``eager_s``,
    ``compiled_s`` and ``fused_into`` (every module with eager time has one; one Inductor fused whole into an
    ancestor's kernel has ``compiled_s`` 0), and ``report.compiled`` the compile time, graphs, kernels and the
    eager median.

    Steps in which other processes (or the hypervisor) took the CPU from a run are left
    out of the statistics, never more than about half of them; ``report.disturbance`` says
    how many there were. ``keep_disturbed=True`` keeps them.

    The caller's process keeps its memory allocator's settings. Call
    :func:`keep_freed_memory` first for the figures the command line measures:
    without it, glibc may hand large buffers back to the system between runs, and
    the nodes that refill them pay page faults (``report.faults_per_run``).
    """
    from fxtui.core.what_if_catalogue import parse_what_ifs
    from fxtui.measure.analysis.cpu_setup import thread_limit
    from fxtui.measure.pipeline import loaded_from_module, make_report, run_profile, session_for_module

    names = parse_what_ifs(what_ifs if isinstance(what_ifs, str) else ",".join(what_ifs)) if what_ifs else ()
    with thread_limit(threads):
        session = session_for_module(
            loaded_from_module(model, example_input, name, kwargs),
            capture_mode=capture,
            train=train,
            optimizer=optimizer,
            memory=memory,
            keep_disturbed=keep_disturbed,
            generate=generate,
            compile=compile,
            compile_mode=compile_mode,
        )
        run_profile(session, runs, warmup)
        if names:
            from fxtui.measure.whatif.runner import run_what_ifs

            run_what_ifs(session, names)
        return make_report(session)


def load(path: str | os.PathLike[str]) -> Report:
    """The profile a ``--json``/``--save`` file holds, as the :class:`Report` ``profile`` returns (no torch needed).

    Its tables and text are there again, and ``to_dataframe()`` gives the node rows to pandas::

        import fxtui
        report = fxtui.load("run.json")            # fxtui resnet18 --once --json run.json
        print(report.header())
        print(report.table(sort="median", top=10))
        rows = report.to_dataframe()               # needs pandas: pip install pandas
        print(rows.groupby("module_path")["median_s"].sum().nlargest(5))

    Files saved by an older fxtui load too. A path that is not a report raises :class:`FxtuiError` with one
    sentence saying why.
    """
    from fxtui.report.api import Report

    return Report.load(path)


def watch(warmup: int = 5, every: int = 0, timer: str = "native") -> Watch:
    """Profile the steps your own code runs inside a ``with`` block, as ``fxtui run`` profiles a script::

        with fxtui.watch() as w:
            train()
        report = w.report()

    A step is one ``optimizer.step()`` (or, without an optimizer, one call of the outermost
    module); each splits into data, forward, backward, optimizer and other (``report.steps``).
    After ``warmup`` steps, a sample of them (one in ``every``; 0: as often as costs the code at
    most 2% of its time) is timed per ATen op, charged to the module it runs in, forward and
    backward (``report.rows``, ``report.modules``). The hooks are removed when the block ends.
    Ops are timed by a C++ RecordFunction callback (``timer="native"``, as ``fxtui run``; its library is built
    as the first process using it ends, and the dispatch mode times them until then) or by a Python dispatch mode
    (``timer="mode"``, five to ten times heavier an op).
    """
    return Watch(warmup=warmup, every=every, timer=timer)


class Watch:
    """The agent of ``fxtui run`` inside the caller's own process (:func:`watch`); :meth:`report` gives what it
    measured.

    The steps, their phases and the sampled steps' nodes are found exactly as under ``fxtui run``
    (:mod:`fxtui.agent`). The difference is where they are aggregated: here, in the caller's
    thread at the end of each step (a few microseconds for an unsampled step, a millisecond or so
    for a sampled one at a few hundred ops), since there is no other process to hand them to.
    """

    def __init__(self, warmup: int = 5, every: int = 0, name: str = "", timer: str = "native") -> None:
        import threading

        from fxtui.agent.agent import Agent
        from fxtui.jobs.collector import Collector
        from fxtui.wire.agent_contract import AgentOptions

        self.collector: Collector = Collector((name or _caller(),), warmup=warmup)
        self._lock = threading.Lock()
        self.agent = Agent(self._receive, AgentOptions(warmup, every, timer=timer))
        self.active = False

    def _receive(self, message: object) -> None:
        with self._lock:
            self.collector.receive(message)

    def __enter__(self) -> Watch:
        import os
        import sys

        import torch

        from fxtui.wire.agent_messages import Hello

        self._receive(Hello(os.getpid(), tuple(sys.argv), torch.__version__, torch.get_num_threads()))
        self.agent.install()
        self.active = True
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.agent.finish()
        self.agent.uninstall()
        self.active = False
        with self._lock:
            self.collector.ended(1 if error is not None else 0)

    def report(self) -> Report:
        """What was measured so far (inside the block too): steps, phases, nodes and modules."""
        from fxtui.core.snapshot import State
        from fxtui.report.api import Report

        with self._lock:
            return Report.from_snapshot(self.collector.snapshot(State.RUNNING if self.active else State.DONE))


def _caller() -> str:
    """The name the report gives the watched code: the caller's file (a notebook says ``<ipython-input…>``)."""
    import sys

    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == "fxtui":
        frame = frame.f_back  # type: ignore[assignment]
    return frame.f_code.co_filename.rsplit("/", 1)[-1] if frame is not None else "watch"


def __getattr__(name: str) -> Any:
    if name == "Report":
        from fxtui.report.api import Report

        return Report
    if name == "keep_freed_memory":
        from fxtui.measure.allocator import keep_freed_memory

        return keep_freed_memory
    if name == "FxtuiError":
        from fxtui.core.errors import FxtuiError

        return FxtuiError
    raise AttributeError(f"module 'fxtui' has no attribute {name!r}")
