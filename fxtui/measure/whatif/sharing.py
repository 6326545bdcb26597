"""A copy of a model's modules that shares its parameters and buffers: a what-if pays for what it changes.

A what-if used to deep-copy the whole model, so for a 1.5 GB model it held 3 GB while it
ran. Only a few changes rewrite tensors, and those replace them in the copy (channels-last
its 4-D weights, int8-dynamic its nn.Linear weights, fold-bn the folded convolutions); every
other tensor stays the session's own. The copy has modules of its own, so the session's
model and its graphs are never changed, and a recapture sees other modules than the session's.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch
from torch import nn


def copy_sharing_tensors(module: nn.Module) -> nn.Module:
    """A deep copy of ``module`` whose parameters and buffers are the original's own tensors."""
    memo: dict[int, object] = {id(t): t for t in (*module.parameters(), *module.buffers())}
    return copy.deepcopy(module, memo)


def replace_tensors(module: nn.Module, convert: Callable[[torch.Tensor], torch.Tensor | None]) -> int:
    """Replace, in ``module`` and its submodules, every parameter and buffer ``convert`` returns a new
    tensor for (None: keep it). A tensor two modules share is converted once. Returns how many changed."""
    done: dict[int, torch.Tensor] = {}
    for sub in module.modules():
        for name, param in list(sub.named_parameters(recurse=False)):
            new = done.get(id(param))
            if new is None and (converted := convert(param.detach())) is not None:
                new = done[id(param)] = nn.Parameter(converted, requires_grad=param.requires_grad)
            if new is not None:
                setattr(sub, name, new)
        for name, buffer in list(sub.named_buffers(recurse=False)):
            new = done.get(id(buffer))
            if new is None and (converted := convert(buffer)) is not None:
                new = done[id(buffer)] = converted
            if new is not None:
                setattr(sub, name, new)
    return len(done)
