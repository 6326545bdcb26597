"""``--compile``: the model compiled by Inductor on CPU, every kernel of each run timed and charged to its modules.

TorchDynamo hands each graph to fxtui's backend, which names its nodes as the ``dynamo`` capture
does (``layer1.0.bn1 · batch_norm``) and compiles it with Inductor (``compile_fx``, the mode's
options) while a :class:`~fxtui.ops.kernel_code.ProvenanceRecorder` notes which FX
nodes each generated kernel and extern call computes. A row is one kernel call: named by its
module and what it computes (``layer1.0 · bn+relu+add (fused)``, ``layer1.0.conv1 · convolution``),
carrying the source nodes it fuses (``fused_nodes``) and their modules (``fused_modules``), and
charged to their common ancestor. Inductor's FX graph cache is off while fxtui compiles: a graph
loaded from it would come without its kernels' origins (the C++ builds stay cached).

Each step runs the compiled model twice (kernels timed, and untimed: the overhead and fidelity of
the kernel timings) and the eager model twice (uninstrumented: the eager median; and every ATen op
timed by the eager capture's timer: each module's eager time), in alternating order, so a
module's eager and compiled times come from the same minutes of the same process.
"""

from __future__ import annotations

import collections
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.fx

from fxtui.core.compilation import COMPILE_MODES, CompiledSummary
from fxtui.core.errors import FxtuiError, NodeError, exception_text
from fxtui.core.nodes import GraphBreak, module_ancestors
from fxtui.core.op_graph import eager_graph
from fxtui.measure.capture.captured import CapturedModel
from fxtui.measure.capture.compiled_kernels import (
    Kernel,
    describe_kernels,
    kernel_names,
    kernel_source_line,
    kernel_sources,
)
from fxtui.measure.capture.dynamo import failure_text, graph_break_of, quiet_dynamo, raise_recompile_limit
from fxtui.measure.capture.eager import EagerTimer, capture_eager, clock_overhead
from fxtui.measure.capture.names import Namer
from fxtui.measure.inputs import Inputs
from fxtui.measure.values import ValueMeta
from fxtui.ops.kernel_code import (
    ProvenanceRecorder,
    TimedWrapper,
    handles_in,
    loaded_modules,
    timed,
)

_clock = time.perf_counter_ns
#: Calls of the compiled model while capturing: the first compiles, the second checks nothing recompiles.
CAPTURE_RUNS = 2
#: Eager runs whose per-op times are kept for the modules' eager medians.
EAGER_WINDOW = 64


class CompiledRuns:
    """The eager model beside the compiled one (the captured model's notes): its runs and its modules' times."""

    def __init__(self, module: torch.nn.Module, inputs: Inputs, mode: str, beside: bool = True) -> None:
        self.module = module
        self.inputs = inputs
        self.mode = mode
        self.beside = beside
        """Run the eager model beside the compiled one (``--compile``); a what-if's compiled copy does not."""
        self.eager = capture_eager(module, inputs)
        self.eager_timer = EagerTimer(self.eager)
        self.eager_paths: list[str] = []
        self.compile_s = 0.0
        self.graphs = 0
        self.kernels = 0
        self.externs = 0
        self.root_reason = ""
        self.recompiles: tuple[str, ...] = ()
        """Why TorchDynamo compiled again after the capture, one line each."""
        self._flip = False
        self.reset()

    def reset(self) -> None:
        """Forget the runs so far."""
        self.eager_plain: collections.deque[int] = collections.deque(maxlen=256)
        self.eager_ops: collections.deque[np.ndarray] = collections.deque(maxlen=EAGER_WINDOW)
        self.profiled: collections.deque[int] = collections.deque(maxlen=256)

    def eager_step(self) -> None:
        """One uninstrumented eager run and one with every op timed, in alternating order."""
        if not self.beside:
            return
        self._flip = not self._flip
        for run in (self._plain, self._timed) if self._flip else (self._timed, self._plain):
            run()

    def _plain(self) -> None:
        inputs = self.inputs.fresh()
        t0 = _clock()
        inputs.call(self.module)
        self.eager_plain.append(_clock() - t0)

    def _timed(self) -> None:
        timer = self.eager_timer
        first = timer.meta is None
        timer.run(self.inputs.fresh())
        if first:
            graph = eager_graph(timer.nodes, timer.roots, model="model")
            self.eager_paths = [n.module_path for n in graph.nodes]
        self.eager_ops.append(np.asarray(timer.last_ns, dtype=np.float64))

    def eager_modules(self) -> dict[str, float]:
        """Module path → Σ of its subtree's eager op medians (seconds)."""
        if not self.eager_ops:
            return {}
        medians = np.median(np.stack(list(self.eager_ops)), axis=0) / 1e9
        out: dict[str, float] = {}
        for path, median in zip(self.eager_paths, medians.tolist(), strict=False):
            for ancestor in module_ancestors(path):
                out[ancestor] = out.get(ancestor, 0.0) + median
        return out

    # -- the notes' interface (fxtui.measure.capture.captured.RunNotes) ---------------------------

    def summary(self) -> CompiledSummary:
        """The figures so far."""
        return CompiledSummary(
            mode=self.mode,
            compile_s=self.compile_s,
            graphs=self.graphs,
            kernels=self.kernels,
            externs=self.externs,
            eager_s=statistics.median(self.eager_plain) / 1e9 if self.eager_plain else None,
            eager_modules=self.eager_modules(),
            root_reason=self.root_reason,
            recompiles=self.recompiles[-5:],
        )

    def fields(self) -> dict[str, Any]:
        """What every snapshot carries besides the statistics."""
        return {"compiled": self.summary()}

    def shares(self, phases: Sequence[str], medians: Sequence[float]) -> list[float]:
        """Each kernel's median as a share of the timed compiled run's median (percent)."""
        run = statistics.median(self.profiled) / 1e9 if self.profiled else sum(medians)
        return [100.0 * m / run if run else 0.0 for m in medians]

    def run_ns(self, wall_ns: int) -> int:
        """An untimed compiled run counts as itself."""
        return wall_ns

    def whole_run(self) -> tuple[float, float, float] | None:
        """None: a what-if compares the session's own untimed compiled runs."""
        return None


class CompiledTimer:
    """Times one run of the compiled model per kernel call (the :class:`~fxtui.measure.timing.ModelTimer` interface).

    A run is the compiled model with its wrappers' timed code and, before or after it, the eager model's two
    runs (:meth:`CompiledRuns.eager_step`); ``last_run_ns`` is the compiled run's wall time alone.
    """

    def __init__(
        self, captured: CapturedModel, kernels: list[Kernel], wrappers: list[TimedWrapper], **kwargs: Any
    ) -> None:
        self.captured = captured
        self.runs: CompiledRuns = captured.notes  # type: ignore[assignment]
        self.kernels = kernels
        self.wrappers = wrappers
        self.clock: Callable[[], int] = kwargs.get("clock") or _clock
        overhead = kwargs.get("clock_overhead_ns")
        self.clock_overhead_ns = overhead if overhead is not None else clock_overhead()
        self.names = kernel_names(kernels)
        self.meta: list[ValueMeta] | None = None
        self.calls = [1] * len(kernels)
        self.last_ns: list[int] = [0] * len(kernels)
        self.last_start_ns: list[int] = [0] * len(kernels)
        self.last_run_ns = 0
        self.last_run_start_ns = 0
        self._eager_first = False

    def run(self, inputs: Inputs) -> Any:
        """The eager model's two runs and one compiled run with every kernel call timed; the compiled output.

        The eager runs go before the compiled one in one step and after it in the next, so that the timed
        compiled run follows an eager run no more often than the untimed one does (the session alternates the
        order of the timed and the untimed run too): what the eager runs leave in the caches weighs on both alike.
        """
        self._eager_first = not self._eager_first
        if self._eager_first:
            self._eager()
        out = self._compiled(inputs)
        if not self._eager_first:
            self._eager()
        return out

    def _eager(self) -> None:
        try:
            self.runs.eager_step()
        except Exception as e:
            raise NodeError("", f"the eager model raised {exception_text(e)}") from e

    def _compiled(self, inputs: Inputs) -> Any:
        for w in self.wrappers:
            w.reset()
        with timed(self.wrappers):
            t0 = self.clock()
            try:
                out = self.captured.call(inputs)
            except Exception as e:
                raise NodeError("", f"the compiled model raised {exception_text(e)}") from e
            finally:
                t1 = self.clock()
        self.last_run_ns, self.last_run_start_ns = t1 - t0, t0
        self.runs.profiled.append(t1 - t0)
        overhead = self.clock_overhead_ns
        ns = [max(v - overhead, 0) for w in self.wrappers for v in w.ns]
        starts = [s or t0 for w in self.wrappers for s in w.start]
        self.last_ns, self.last_start_ns = ns, starts
        if self.meta is None:
            self.meta = [ValueMeta("", "") for _ in self.kernels]
        return out


def recompile_reasons(seen: dict[Any, int]) -> tuple[str, ...]:
    """TorchDynamo's guard failures since the last call (why it recompiles): their first lines, and the user's line.

    ``seen`` holds how many failures of each code object were read before.
    """
    from torch._dynamo.utils import guard_failures

    found = []
    for code, reasons in list(guard_failures.items()):
        for text in reasons[seen.get(code, 0) :]:
            lines = str(text).strip().splitlines()
            reason = lines[0].split(": ", 1)[-1] if lines else "unknown reason"
            where = next((line.strip() for line in reversed(lines) if line.strip().startswith("File ")), "")
            found.append(f"{reason} ({where})" if where else reason)
        seen[code] = len(reasons)
    return tuple(found)


def check_compiler() -> None:
    """One sentence when Inductor has no C++ compiler to build CPU kernels with."""
    try:
        from torch._inductor.cpp_builder import get_cpp_compiler

        get_cpp_compiler()
    except ImportError:
        return  # an older torch: the compile itself says what is missing
    except Exception as e:
        raise FxtuiError(
            "--compile needs a C++ compiler for Inductor's CPU kernels and found none: "
            "install g++ (or set CXX), or profile the model eagerly without --compile"
        ) from e


def capture_compiled(
    module: torch.nn.Module,
    inputs: Inputs,
    *,
    name: str = "model",
    compile_mode: str = "default",
    reason: str = "",
    eager_beside: bool = True,
) -> CapturedModel:
    """The model compiled by Inductor as a captured model whose nodes are its kernel calls (see the module's docstring).

    ``eager_beside`` runs the eager model beside it in every step (its median and each module's eager time).

    Raises :class:`FxtuiError` in one sentence when compiling fails (no C++ compiler, an operator
    Inductor cannot lower, a model TorchDynamo cannot follow).
    """
    import torch._dynamo
    import torch._inductor.config as inductor_config
    from torch._inductor.compile_fx import compile_fx

    mode = compile_mode
    if mode not in COMPILE_MODES:
        raise FxtuiError(f"unknown --compile-mode {mode!r}; choose one of {', '.join(COMPILE_MODES)}")
    check_compiler()
    options = dict(torch._inductor.list_mode_options(mode)) if mode != "default" else {}
    options.pop("triton.cudagraphs", None)
    namer = Namer(module)
    kernels: list[Kernel] = []
    wrappers: list[TimedWrapper] = []
    breaks: list[GraphBreak] = []
    state = {"sealed": False, "graphs": 0}
    seen_failures: dict[Any, int] = {}

    def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Any:
        if state["sealed"]:  # a recompile: it runs, untimed, and is counted with TorchDynamo's reason
            captured.late_graphs += 1
            runs.recompiles += recompile_reasons(seen_failures)
            return compile_fx(gm, example_inputs, config_patches=options)
        index = state["graphs"]
        state["graphs"] += 1
        found = graph_break_of(gm)
        if found is not None:
            breaks.append(found)
        names = namer.name_graph(gm, outside=namer.caller())
        dynamo = {n.name: (d, namer.paths[d], i) for i, (n, d) in enumerate(zip(gm.graph.nodes, names, strict=True))}
        recorder = ProvenanceRecorder()
        seen = len(loaded_modules())
        with recorder.active(), inductor_config.patch(fx_graph_cache=False):
            compiled = compile_fx(gm, example_inputs, config_patches=options)
        # The graph's wrapper is the last module Inductor loaded for it: with max-autotune, the code that
        # benchmarked the choices before it was generated (and loaded) with handles too, and never runs again.
        wrappers_found = [m for m in loaded_modules()[seen:] if {h for _, _, h in handles_in(m)} & set(recorder.found)]
        for loaded in wrappers_found[-1:]:
            handles = {h for _, _, h in handles_in(loaded)} & set(recorder.found)
            wrapper = TimedWrapper(loaded, handles)
            wrappers.append(wrapper)
            for handle in wrapper.kernels:
                origin = recorder.found[handle]
                kernels.append(Kernel(origin, index, kernel_sources(origin, dynamo, namer), kernel_source_line(origin)))
        return compiled

    raise_recompile_limit(torch._dynamo.config)
    runs = CompiledRuns(module, inputs, mode, beside=eager_beside)
    captured = CapturedModel(capture="compiled", root=module, call=lambda given: None, reason=reason, notes=runs)
    with quiet_dynamo():
        compiled_model = torch.compile(module, backend=backend, dynamic=False)
    captured.call = lambda given: given.call(compiled_model)
    started = time.perf_counter()
    with quiet_dynamo(), captured.running():
        for _ in range(CAPTURE_RUNS):
            try:
                captured.run(inputs.fresh())
            except Exception as e:
                raise FxtuiError(f"Inductor could not compile {name}: {failure_text(e)}") from e
            if not runs.compile_s:
                runs.compile_s = time.perf_counter() - started
    state["sealed"] = True
    recompile_reasons(seen_failures)  # what failed while capturing is no recompile of the session's
    if not kernels:
        raise FxtuiError(
            f"fxtui found no kernel calls in Inductor's code for {name} (torch {torch.__version__}): "
            "its generated wrapper has a form fxtui does not know"
        )
    runs.graphs = state["graphs"]
    runs.kernels = sum(1 for k in kernels if not k.origin.extern)
    runs.externs = len(kernels) - runs.kernels
    captured.warm_runs = CAPTURE_RUNS
    captured.breaks = tuple(breaks)
    captured.module_classes = dict(namer.classes)
    captured.seconds = runs.compile_s
    captured.timer = lambda **kwargs: CompiledTimer(captured, kernels, wrappers, **kwargs)
    captured.describe = lambda timer, **described: describe_kernels(timer, captured, namer.classes, **described)
    return captured
