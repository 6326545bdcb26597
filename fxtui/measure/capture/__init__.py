"""Capture modes behind one contract: a model becomes a :class:`~fxtui.measure.capture.captured.CapturedModel`.

The contract. A mode is a function ``capture(module, inputs, *, name, **options) -> CapturedModel``
in a file of its own, and an entry in :data:`CAPTURERS` (here) and in
:data:`fxtui.core.captures.MODES` (its torch-free facts: name, title, what it can do). It gets the
model and the inputs it runs on; it returns a captured model whose nodes each know their stable
display name, module path and phase, the module classes, what a run costs uncaptured (its
reference), and a call that runs the whole model (or step) through its graphs. It raises
:class:`~fxtui.core.errors.FxtuiError` in one sentence for what the user can fix.

* ``fx`` (:mod:`.fx`): ``torch.fx.symbolic_trace`` with leaf fallback; ``call_module`` nodes read
  best for classic models, so it is the first choice.
* ``dynamo`` (:mod:`.dynamo`): TorchDynamo, for models symbolic tracing cannot follow:
  Hugging Face transformers, whole detection models, data-dependent code.
* ``train`` (:mod:`.train`): a training step, TorchDynamo and AOTAutograd (``--train``).
* ``eager`` (:mod:`.eager`): nothing traced, every ATen op of a run timed and charged to its
  module by a dispatch mode (:mod:`fxtui.ops.recorder`), the timer ``fxtui run`` uses inside a user's program.
* ``generate`` (:mod:`.generate`): the eager timer on ``generate()`` calls, each op charged to the
  prefill or a decode step (``--generate N``).
* ``compiled`` (:mod:`.compiled`): the model compiled by Inductor, every kernel call timed and
  charged to the modules of the nodes it fuses, the eager model measured beside it (``--compile``).

:func:`capture` is the one place that chooses: ``auto`` (the default) tries ``fx`` and switches
to ``dynamo`` when the model's top level cannot be traced, or goes straight to it for a
transformers model; ``train`` asks for a training step.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import torch

from fxtui.core.captures import CHOICES, MODES, capture_mode
from fxtui.core.errors import FxtuiError
from fxtui.measure.capture.captured import CapturedModel, CapturedNode, GraphPart, one_graph_model
from fxtui.measure.inputs import Inputs

__all__ = ["CAPTURERS", "CapturedModel", "CapturedNode", "GraphPart", "capture", "capture_with", "one_graph_model"]

#: Each mode's capture function, as ``module:function`` (imported when first used).
CAPTURERS: dict[str, str] = {
    "fx": "fxtui.measure.capture.fx:capture_fx",
    "dynamo": "fxtui.measure.capture.dynamo:capture_dynamo",
    "train": "fxtui.measure.capture.train:capture_train",
    "eager": "fxtui.measure.capture.eager:capture_eager",
    "generate": "fxtui.measure.capture.generate:capture_generate",
    "compiled": "fxtui.measure.capture.compiled:capture_compiled",
}


def capture_with(
    mode: str, module: torch.nn.Module, inputs: Inputs, *, name: str = "model", **options: Any
) -> CapturedModel:
    """Capture ``module`` on ``inputs`` with the mode called ``mode`` exactly (no fallback)."""
    capture_mode(mode)
    where, _, attr = CAPTURERS[mode].partition(":")
    function: Callable[..., CapturedModel] = getattr(importlib.import_module(where), attr)
    return function(module, inputs, name=name, **options)


def capture(
    module: torch.nn.Module,
    inputs: Inputs,
    *,
    mode: str = "auto",
    name: str = "model",
    train: bool = False,
    optimizer: str = "sgd",
    transformers: bool = False,
    generate: int = 0,
    compile: bool = False,
    compile_mode: str = "default",
) -> CapturedModel:
    """Capture ``module`` run on ``inputs`` as the user asked (``mode``: one of :data:`fxtui.core.captures.CHOICES`).

    ``train`` captures a training step with ``optimizer``; ``generate`` (tokens) makes a run one ``generate()`` call
    (:mod:`.generate`); ``transformers`` (a model of that library)
    makes ``auto`` go straight to TorchDynamo. ``captured.reason`` says why ``auto`` switched.
    ``compile`` compiles the model with Inductor (``compile_mode``) and times its kernels (:mod:`.compiled`).
    """
    if mode not in CHOICES:
        raise FxtuiError(f"unknown capture {mode!r}; choose one of {', '.join(CHOICES)}")
    if compile:
        if train or generate:
            raise FxtuiError(
                "--compile times the kernels of a compiled forward; it cannot be combined with "
                + (
                    "--train: compile the model in a training script and run it under `fxtui run`, which times a "
                    "compiled training step kernel by kernel, forward and backward"
                    if train
                    else "--generate"
                )
            )
        if mode not in ("auto", "dynamo"):
            raise FxtuiError(f"--compile captures the model with TorchDynamo and Inductor; --capture {mode} cannot")
        return capture_with("compiled", module, inputs, name=name, compile_mode=compile_mode)
    if generate:
        if train:
            raise FxtuiError("--generate profiles generate() calls (inference); it cannot be combined with --train")
        if mode not in ("auto", "eager"):
            raise FxtuiError(
                f"--generate times each op as the cache grows, as --capture eager does; --capture {mode} cannot"
            )
        return capture_with("generate", module, inputs, name=name, new_tokens=generate)
    if train:
        if mode not in ("auto", "dynamo"):
            raise FxtuiError(f"--train captures the step with {MODES['train'].title}; --capture {mode} cannot")
        return capture_with("train", module, inputs, name=name, optimizer=optimizer)
    if mode == "auto" and transformers:
        # transformers 5 writes its models for TorchDynamo and has no torch.fx tracer:
        # symbolic tracing would only fail, after seconds of retrying submodules as leaves.
        return capture_with("dynamo", module, inputs, name=name, reason="a transformers model (no torch.fx tracer)")
    if mode != "auto":
        return capture_with(mode, module, inputs, name=name)
    try:
        return capture_with("fx", module, inputs, name=name)
    except FxtuiError as e:
        why = str(e).removeprefix(f"{name} ").split("; profile a part")[0].split("; give fxtui a module")[0]
        return capture_with("dynamo", module, inputs, name=name, reason=f"symbolic_trace: {why}")
