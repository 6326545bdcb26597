"""A part of a model called at the top by one of the model's own methods (``model.decode(z)``), not by its forward.

A VAE that samples with ``model.decode(torch.randn(64, 20))`` calls its ``fc3`` and ``fc4`` from
``decode``, outside any module call: each is a module called at the top. They are not the model's
forward over a batch, so they open no evaluation call of their own (which would count two calls per
sample), but are part of the step in progress (:meth:`fxtui.agent.steps.StepModel.root_enter`).
"""

from __future__ import annotations

import sys

import torch

from fxtui.ops.namer import OpNamer

#: Frames between the program's frame that called the module and this function (the agent's ``Module.__call__``, its
#: dispatch, its root call, this function).
_CALLER = 4


def called_by_its_model(namer: OpNamer, module: torch.nn.Module) -> bool:
    """``module`` is a part of a known root (not the root itself), called from a method whose ``self`` holds it."""
    known = namer.known_module(module)
    if known is None or not known[1]:
        return False
    try:
        caller = sys._getframe(_CALLER).f_locals.get("self")
    except (ValueError, AttributeError):  # a stack shallower than expected
        return False
    if not isinstance(caller, torch.nn.Module) or caller is module:
        return False
    # The caller holds the module when it is its root or one of the root's modules above it: known paths, no walk.
    above = namer.known_module(caller)
    return above is not None and above[0] == known[0] and (not above[1] or known[1].startswith(above[1] + "."))
