"""The ``dynamo`` capture: TorchDynamo hands fxtui's own backend every graph it captures.

``torch.compile(model, backend=…)`` runs the model's Python under TorchDynamo, which
records runs of torch operations into FX graphs and hands each one to the backend. This
backend keeps the graph and returns its :class:`~fxtui.measure.capture.captured.GraphPart`,
so that every later call of the compiled model runs the graph through whatever the part's
executor is at that moment. Where TorchDynamo cannot follow the code (a ``.item()``
feeding a branch, an operator whose output shape depends on the data) it breaks the model
into several graphs with ordinary Python between them; that Python, and TorchDynamo's
guard checks, stay outside every node and are part of the unattributed remainder.

Nodes are named after their module and operation (``encoder.layer.0.attention.self.query
· linear``) instead of TorchDynamo's local variable names, so the same model gives the
same names in every session and ``fxtui diff`` can match them.
"""

from __future__ import annotations

import contextlib
import logging
import time
import traceback
import warnings
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import torch
import torch.fx

from fxtui.core.errors import FxtuiError, NodeError, first_line
from fxtui.core.nodes import GraphBreak
from fxtui.measure.capture.captured import CapturedModel, GraphPart
from fxtui.measure.capture.names import Namer
from fxtui.measure.inputs import Inputs

#: Runs of the model during capture: the first compiles; the second compiles what the first
#: could not know yet (a resume function guarded on a value the first run produced).
CAPTURE_RUNS = 2
#: TorchDynamo stops compiling a function after this many variants (its default is 8): each
#: fxtui session compiles the model anew with a backend of its own, and a process that profiles
#: the same model class several times (the Python API, tests) must not run out.
RECOMPILE_LIMIT = 256


def capture_dynamo(module: torch.nn.Module, inputs: Inputs, *, name: str = "model", reason: str = "") -> CapturedModel:
    """Capture ``module`` with TorchDynamo into a captured model of one graph per captured region.

    Runs the model :data:`CAPTURE_RUNS` times under ``torch.inference_mode()`` (the mode
    the session runs it in, so TorchDynamo's guards hold). Raises :class:`FxtuiError` when
    the model fails, naming the user's line.
    """
    import torch._dynamo

    started = time.perf_counter()
    captured = CapturedModel(capture="dynamo", root=module, call=lambda given: None, reason=reason)
    captured.reference = lambda given: given.call(module)
    # TorchDynamo keeps every backend it was given for as long as the process lives (its guards check
    # which backend compiled a graph). The backend therefore holds the captured model weakly and lets go of
    # the namer (and with it the module) once the capture is sealed: a what-if's captured copy is
    # freed when the what-if ends, not kept for the rest of the session.
    held = weakref.ref(captured)
    namer: Namer | None = Namer(module)
    breaks: list[GraphBreak] = []
    sealed = False

    def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Any:
        owner = held()
        if sealed or owner is None or namer is None:
            if owner is not None:
                owner.late_graphs += 1
            return gm.forward
        found = graph_break_of(gm)
        if found is not None:
            breaks.append(found)
        part = GraphPart(gm, namer.name_graph(gm, outside=namer.caller()), owner.node_count, len(owner.parts))
        owner.parts.append(part)
        return part

    raise_recompile_limit(torch._dynamo.config)
    # The analysis passes run the compiled model under torch's FLOP counter, whose module
    # tracker registers global hooks for the moment; torch.compile warns about them on each call.
    warnings.filterwarnings("ignore", message=r"Using `torch.compile\(module\)` when there are global hooks")
    with quiet_dynamo():
        compiled = torch.compile(module, backend=backend, dynamic=False)

    def call(given: Inputs) -> Any:
        return given.call(compiled)

    captured.call = call
    run_captures(
        captured,
        inputs,
        cannot=f"{name} cannot be captured with TorchDynamo",
        fails="the model does not run on these inputs",
    )
    sealed = True
    captured.warm_runs = CAPTURE_RUNS
    if not captured.parts:
        raise FxtuiError(
            f"TorchDynamo captured no graph of {name}: its forward runs no torch operation TorchDynamo can record"
        )
    assert namer is not None
    captured.module_paths = namer.paths
    captured.module_classes = namer.classes
    namer = None
    captured.breaks = tuple(breaks)
    captured.seconds = time.perf_counter() - started
    return captured


def run_captures(captured: CapturedModel, inputs: Inputs, *, cannot: str, fails: str) -> None:
    """Run ``captured`` :data:`CAPTURE_RUNS` times so TorchDynamo compiles it; one sentence when that fails.

    ``cannot`` starts the sentence for a failure of TorchDynamo itself, ``fails`` for the model's own
    error (TorchDynamo re-raises it from the user's frame). A :class:`NodeError` passes through.
    """
    with quiet_dynamo(), captured.running():
        for _ in range(CAPTURE_RUNS):
            try:
                captured.run(inputs.fresh())
            except NodeError:
                raise
            except Exception as e:
                if type(e).__module__.startswith("torch._dynamo"):
                    raise FxtuiError(f"{cannot}: {failure_text(e)}") from e
                raise FxtuiError(f"{fails}: {failure_text(e)}") from e


def graph_break_of(gm: torch.fx.GraphModule) -> GraphBreak | None:
    """Why TorchDynamo ended the graph before ``gm`` when a graph break did, with the user's line."""
    why = getattr(gm, "compile_subgraph_reason", None)
    if why is None or not getattr(why, "graph_break", False):
        return None
    return GraphBreak(first_line(str(why.reason)), user_line(getattr(why, "user_stack", None) or []))


def raise_recompile_limit(config: Any) -> None:
    for attr in ("recompile_limit", "cache_size_limit"):
        if hasattr(config, attr) and getattr(config, attr) < RECOMPILE_LIMIT:
            setattr(config, attr, RECOMPILE_LIMIT)


@contextlib.contextmanager
def quiet_dynamo() -> Iterator[None]:
    """Keep TorchDynamo's graph-break warnings off the terminal: fxtui reports the breaks itself."""
    logger = logging.getLogger("torch._dynamo")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            # torch.compile warns about global module hooks (torch's own FLOP counter leaves one
            # registered); fxtui calls the compiled model once per run, so nothing fires twice.
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("ignore", FutureWarning)  # deprecations inside torch and torchvision
            yield
    finally:
        logger.setLevel(level)


# -- failures ------------------------------------------------------------------------------


def user_line(stack: Sequence[traceback.FrameSummary]) -> str:
    """The innermost frame of a TorchDynamo user stack, as ``file.py:12  code``."""
    from fxtui.measure.analysis.source import short_path

    if not stack:
        return ""
    frame = stack[-1]
    return f"{short_path(frame.filename)}:{frame.lineno}  {(frame.line or '').strip()}".rstrip()


def failure_text(e: BaseException) -> str:
    """One line: the exception and the user's line it came from (TorchDynamo re-raises with the user frame)."""
    from fxtui.measure.capture.fx import _model_frame, _short_path

    message = first_line(str(e)) or type(e).__name__
    if len(message) > 200:
        message = message[:199] + "…"
    frame = _model_frame(e)
    where = f" at {_short_path(frame.filename)}:{frame.lineno} (`{(frame.line or '').strip()}`)" if frame else ""
    return f"{type(e).__name__}: {message}{where}"
