"""From what the user names to a ready :class:`~fxtui.engine.session.Session`.

Shared by the headless command, the live app's worker and the Python API, so all
three load, trace and check a model the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from fxtui.engine.explain import annotate
from fxtui.engine.loading import LoadedModel, describe_value, load_target
from fxtui.engine.report import Report
from fxtui.engine.session import Session
from fxtui.engine.snapshot import State
from fxtui.engine.target import Target
from fxtui.engine.tracing import trace_model

Progress = Callable[[State, str], None]


def _quiet(state: State, message: str) -> None:
    """A progress callback that reports nothing."""


def session_for_target(target: Target, progress: Progress = _quiet, window: int = 256, analyse: bool = True) -> Session:
    """Load ``target``, trace it and check it runs; :class:`FxtuiError` on the user's mistakes."""
    progress(State.LOADING, f"loading {target.target}")
    loaded = load_target(
        target.target, input_shapes=target.input_shapes, dtype=target.dtype, submodule=target.submodule
    )
    return session_for_module(loaded, progress, window, analyse)


def session_for_module(
    loaded: LoadedModel, progress: Progress = _quiet, window: int = 256, analyse: bool = True
) -> Session:
    """Trace an already loaded model and prepare a session for it.

    ``analyse`` adds FLOPs, bytes, source lines, thread facts and the machine's
    peaks (about half a second) to the graph description.
    """
    progress(State.TRACING, f"tracing {loaded.name}")
    started = time.perf_counter()
    traced = trace_model(loaded.module, name=loaded.name)
    session = Session(
        traced.gm,
        loaded.inputs,
        model=loaded.name,
        input_desc=loaded.input_desc,
        dtype=loaded.dtype,
        module_paths=traced.module_paths,
        module_classes=traced.module_classes,
        leaf_modules=traced.leaf_modules,
        window=window,
    )
    if analyse:
        progress(State.TRACING, "measuring work per node and this machine's peaks")
        annotate(session)
    session.setup_seconds = time.perf_counter() - started
    return session


def loaded_from_module(model: torch.nn.Module, example_inputs: Any, name: str | None = None) -> LoadedModel:
    """Wrap a module and its example input(s) given through the Python API."""
    inputs: tuple[Any, ...] = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    first = next((x for x in inputs if isinstance(x, torch.Tensor)), None)
    return LoadedModel(
        module=model.eval(),
        inputs=inputs,
        name=name or type(model).__name__,
        input_desc=tuple(describe_value(x) for x in inputs),
        dtype=str(first.dtype).removeprefix("torch.") if first is not None else "",
    )


def run_profile(session: Session, runs: int, warmup: int, should_stop: Callable[[], bool] = lambda: False) -> int:
    """Warm up, then record ``runs`` steps; returns how many were recorded.

    A step that fails is not counted; the profile ends early when ``should_stop``
    turns true or when as many steps have failed as were asked for.
    """
    session.warm_up(warmup)
    done = failed = 0
    while done < runs and failed < max(runs, 3) and not should_stop():
        if session.step():
            done += 1
        else:
            failed += 1
    return done


def make_report(session: Session, *, timeline: bool = True, warnings: tuple[str, ...] = ()) -> Report:
    """Freeze ``session`` into a :class:`Report`; ``timeline`` adds one representative run for a trace."""
    if session.nonfinite:
        shown = ", ".join(session.nonfinite[:3]) + (" …" if len(session.nonfinite) > 3 else "")
        warnings = (*warnings, f"NaN or inf in the output of {len(session.nonfinite)} node(s): {shown}")
    spans: list[tuple[str, float, float]] = []
    if timeline and session.samples.count:
        run = session.representative_run()
        spans = [(n, s, d) for n, (s, d) in zip(session.interp.names, run, strict=True)]
    return Report.from_snapshot(
        session.snapshot(State.DONE),
        clock_overhead_ns=session.interp.clock_overhead_ns,
        timeline=spans,
        warnings=warnings,
    )
