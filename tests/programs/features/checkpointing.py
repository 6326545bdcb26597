"""Activation checkpointing: ``torch.utils.checkpoint`` with ``use_reentrant=False`` and ``=True``, the forward
recomputed in backward.

Follows the memory-saving training loops of large models (a block per checkpoint, as transformers'
``gradient_checkpointing_enable()`` and timm's ``set_grad_checkpointing()`` wrap them), both implementations.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from feature_kit import batch, grad_sum, say, seeded, weight_sum
from torch.utils.checkpoint import checkpoint


class Blocks(nn.Module):
    def __init__(self, reentrant: bool) -> None:
        super().__init__()
        self.inp = nn.Linear(8, 16)
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(16, 16), nn.GELU(), nn.Dropout(0.1)) for _ in range(3))
        self.out = nn.Linear(16, 4)
        self.reentrant = reentrant

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        for block in self.blocks:
            h = h + checkpoint(block, h, use_reentrant=self.reentrant)  # dropout's mask replayed: RNG state kept
        return self.out(h)


seeded()
for reentrant in (False, True):
    model = Blocks(reentrant)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(10):
        x, y = batch()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        say("train", reentrant, step, float(loss.detach()), grad_sum(model))
    model.eval()
    with torch.no_grad():
        say("eval", reentrant, float(model(batch(4)[0]).sum()))
    say("final", reentrant, weight_sum(model))
