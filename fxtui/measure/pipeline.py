"""From what the user names to a ready :class:`~fxtui.measure.session.Session`.

Shared by the headless command, the live app's worker and the Python API, so all
three load, capture and check a model the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from fxtui.core.errors import FxtuiError
from fxtui.core.settings import Target
from fxtui.core.snapshot import State
from fxtui.measure.capture import capture
from fxtui.measure.explain import annotate, measure_memory, with_thread_facts
from fxtui.measure.inputs import Inputs
from fxtui.measure.session import Session
from fxtui.measure.targets import LoadedModel, load_target
from fxtui.report.api import Report

Progress = Callable[[State, str], None]
#: After each recorded step of a headless profile: steps recorded, quiet ones, disturbed ones.
RunProgress = Callable[[int, int, int], None]


def _quiet(state: State, message: str) -> None:
    """A progress callback that reports nothing."""


def _no_progress(done: int, quiet: int, disturbed: int) -> None:
    """A run-progress callback that reports nothing."""


def session_for_target(
    target: Target,
    progress: Progress = _quiet,
    window: int = 256,
    analyse: bool = True,
    memory: bool = False,
    keep_disturbed: bool = False,
) -> Session:
    """Load ``target``, capture it and check it runs; :class:`FxtuiError` on the user's mistakes.

    ``memory`` adds the memory pass (:func:`fxtui.measure.explain.measure_memory`) before any timed run;
    ``keep_disturbed`` records steps other work disturbed instead of leaving them out
    (:mod:`fxtui.measure.interference`).
    """
    progress(State.LOADING, f"building {target.target}")
    loaded = load_target(
        target.target,
        input_shapes=target.input_shapes,
        dtype=target.dtype,
        submodule=target.submodule,
        hf_config=target.hf_config,
        causal_lm=target.generate > 0,
    )
    return session_for_module(
        loaded,
        progress,
        window,
        analyse,
        capture_mode=target.capture,
        train=target.train,
        optimizer=target.optimizer,
        memory=memory,
        keep_disturbed=keep_disturbed,
        generate=target.generate,
        compile=target.compile,
        compile_mode=target.compile_mode,
    )


def session_for_module(
    loaded: LoadedModel,
    progress: Progress = _quiet,
    window: int = 256,
    analyse: bool = True,
    *,
    capture_mode: str = "auto",
    train: bool = False,
    optimizer: str = "sgd",
    memory: bool = False,
    keep_disturbed: bool = False,
    generate: int = 0,
    compile: bool = False,
    compile_mode: str = "default",
) -> Session:
    """Capture an already loaded model and prepare a session for it.

    ``capture_mode`` is ``auto``, ``fx`` or ``dynamo`` (:mod:`fxtui.measure.capture`); with
    ``train`` a run is a training step with ``optimizer`` (:mod:`fxtui.measure.capture.train`),
    which only TorchDynamo and AOTAutograd can capture.
    ``analyse`` adds FLOPs, bytes, source lines, thread facts and the machine's
    peaks (about half a second) to the graph description; ``memory`` each node's memory (one more run).
    ``generate`` (new tokens) makes a run one ``generate()`` call (:mod:`fxtui.measure.capture.generate`);
    ``compile`` compiles the model with Inductor and times its kernels (:mod:`fxtui.measure.capture.compiled`).
    """
    transformers = loaded.kind == "transformers"
    if compile:
        progress(State.TRACING, f"compiling {loaded.name} with Inductor ({compile_mode}); this takes a while")
    elif generate:
        progress(State.TRACING, f"checking that {loaded.name} can generate {generate} tokens")
    elif train:
        progress(State.TRACING, f"capturing a training step of {loaded.name} (forward, backward, optimizer)")
    elif capture_mode == "dynamo" or (capture_mode == "auto" and transformers):
        progress(State.TRACING, f"capturing {loaded.name} with TorchDynamo")
    else:
        progress(State.TRACING, f"tracing {loaded.name}")
    started = time.perf_counter()
    try:
        captured = capture(
            loaded.module,
            loaded.inputs,
            mode=capture_mode,
            name=loaded.name,
            train=train,
            optimizer=optimizer,
            transformers=transformers,
            generate=generate,
            compile=compile,
            compile_mode=compile_mode,
        )
        if captured.reason.startswith("symbolic_trace"):
            progress(State.TRACING, f"captured {loaded.name} with TorchDynamo ({captured.reason})")
        session = Session(
            captured,
            loaded.inputs,
            model=loaded.name,
            input_desc=loaded.input_desc,
            dtype=loaded.dtype,
            window=window,
            keep_disturbed=keep_disturbed,
        )
    except FxtuiError as e:
        if not loaded.input_hint:
            raise
        raise FxtuiError(f"{e}; {loaded.input_hint}") from e
    if analyse:
        progress(State.TRACING, "measuring work per node and this machine's peaks")
        annotate(session, memory=memory)
    else:
        # Thread facts cost nothing, and a bad thread setup misleads every figure: warned of without --hints too.
        session.graph = with_thread_facts(session.graph)
        if memory:
            progress(State.TRACING, "measuring memory per node")
            session.graph = measure_memory(session)
    session.setup_seconds = time.perf_counter() - started
    return session


def loaded_from_module(
    model: torch.nn.Module, example_inputs: Any, name: str | None = None, kwargs: dict[str, Any] | None = None
) -> LoadedModel:
    """Wrap a module and its example input(s) given through the Python API."""
    args: tuple[Any, ...] = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    inputs = Inputs(args, dict(kwargs or {}))
    first = next(iter(inputs.tensors()), None)
    return LoadedModel(
        module=model.eval(),
        inputs=inputs,
        name=name or type(model).__name__,
        dtype=str(first.dtype).removeprefix("torch.") if first is not None else "",
    )


def run_profile(
    session: Session,
    runs: int,
    warmup: int,
    should_stop: Callable[[], bool] = lambda: False,
    on_run: RunProgress = _no_progress,
) -> int:
    """Warm up, then record ``runs`` steps; returns how many were recorded.

    A step that fails is not counted; the profile ends early when ``should_stop`` turns
    true or when as many steps have failed as were asked for. When the session leaves
    disturbed steps out of its figures and other work disturbed some, it records more
    (up to ``runs`` again) until ``runs`` quiet steps are in. After the warm-up and each recorded step,
    ``on_run(recorded, quiet, disturbed)`` says how far it is (between steps, outside every timed run).
    """
    session.warm_up(warmup)
    on_run(0, 0, 0)  # warmed up: the timed runs start
    done = failed = 0
    more = 0 if session.keep_disturbed else runs
    while not should_stop() and failed < max(runs, 3):
        if done >= runs and (done >= runs + more or session.quiet_steps >= runs):
            break
        if session.run_pair():
            done += 1
            on_run(done, session.quiet_steps, session.disturbed_steps)
        else:
            failed += 1
    return done


def make_report(session: Session, *, timeline: bool = True, warnings: tuple[str, ...] = ()) -> Report:
    """Freeze ``session`` into a :class:`Report`; ``timeline`` adds one representative run for a trace."""
    if session.nonfinite_steps:
        warnings = (
            *warnings,
            f"the loss was NaN or infinite in {session.nonfinite_steps} of {session.samples.count} profiled steps",
        )
    warnings = (*warnings, *session.graph.value_warnings)
    spans: list[tuple[str, float, float]] = []
    if timeline and session.samples.count:
        run = session.representative_run()
        spans = [(n, s, d) for n, (s, d) in zip(session.timer.names, run, strict=True)]
    return Report.from_snapshot(
        session.snapshot(State.DONE),
        clock_overhead_ns=session.timer.clock_overhead_ns,
        timeline=spans,
        warnings=warnings,
    )
