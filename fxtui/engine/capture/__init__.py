"""Capture modes: a model and its inputs become a :class:`~fxtui.engine.capture.program.Program`.

* ``fx``: ``torch.fx.symbolic_trace`` with leaf fallback (:mod:`.fx`). ``call_module``
  nodes read best for classic models, so it is the first choice.
* ``dynamo``: TorchDynamo (:mod:`.dynamo`), for models whose Python symbolic tracing
  cannot follow: Hugging Face transformers, whole detection models, data-dependent code.
* ``auto`` (the default): ``fx``, and ``dynamo`` when the model's top level cannot be traced.
"""

from __future__ import annotations

import torch

from fxtui.core.errors import FxtuiError
from fxtui.engine.capture.program import GraphPart, Program, ProgramNode, graph_program
from fxtui.engine.inputs import Inputs

__all__ = ["CAPTURES", "GraphPart", "Program", "ProgramNode", "capture", "graph_program"]

#: The capture modes a user can ask for.
CAPTURES = ("auto", "fx", "dynamo")


def capture(module: torch.nn.Module, inputs: Inputs, *, mode: str = "auto", name: str = "model") -> Program:
    """Capture ``module`` run on ``inputs`` with ``mode`` (see :data:`CAPTURES`)."""
    if mode not in CAPTURES:
        raise FxtuiError(f"unknown capture {mode!r}; choose one of {', '.join(CAPTURES)}")
    from fxtui.engine.capture.dynamo import capture_dynamo
    from fxtui.engine.capture.fx import capture_fx

    if mode == "dynamo":
        return capture_dynamo(module, inputs, name=name)
    try:
        return capture_fx(module, inputs, name=name)
    except FxtuiError as e:
        if mode == "fx":
            raise
        why = str(e).removeprefix(f"{name} ").split("; profile a part")[0].split("; give fxtui a module")[0]
        return capture_dynamo(module, inputs, name=name, reason=f"symbolic_trace: {why}")
