"""``torch.autograd.graph.saved_tensors_hooks``: every tensor autograd saves packed and unpacked by the program.

Follows the offloading and compression hooks of memory-saving loops (``save_on_cpu``, a pack hook that stores a
half-precision copy) and a counting pair of hooks around part of the forward.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from feature_kit import Tiny, batch, grad_sum, say, seeded, weight_sum
from torch.autograd.graph import save_on_cpu, saved_tensors_hooks

seeded()
model = Tiny()
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
packed = unpacked = 0


def pack(t: torch.Tensor) -> tuple[torch.dtype, torch.Tensor]:
    global packed
    packed += 1
    return t.dtype, t.to(torch.bfloat16)  # a lossy copy: the gradients show whether it was used


def unpack(saved: tuple[torch.dtype, torch.Tensor]) -> torch.Tensor:
    global unpacked
    unpacked += 1
    return saved[1].to(saved[0])


for step in range(12):
    x, y = batch()
    if step % 2:
        with saved_tensors_hooks(pack, unpack):
            loss = F.cross_entropy(model(x), y)
    else:
        with save_on_cpu(pin_memory=False):
            loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    say("train", step, float(loss.detach()), grad_sum(model), packed, unpacked)
say("final", weight_sum(model))
