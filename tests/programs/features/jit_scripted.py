"""A ``torch.jit.script``ed submodule trained inside an eager model, and a scripted function in the loss.

Follows older production models that script their custom blocks (TorchScript'ed attention or activation modules
inside an eager ``nn.Module``, as torchvision's detection models did) and keep training them.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from feature_kit import batch, grad_sum, say, seeded, weight_sum


class Gate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self.proj(x).chunk(2, dim=-1)
        return a * torch.sigmoid(b)


@torch.jit.script
def smooth_l1(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    d = (x - y).abs()
    return torch.where(d < 1.0, 0.5 * d * d, d - 0.5).mean()


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(8, 16)
        self.gate = torch.jit.script(Gate())
        self.out = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.gate(self.inp(x)))


seeded()
model = Net()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(12):
    x, y = batch()
    out = model(x)
    loss = F.cross_entropy(out, y) + smooth_l1(out, torch.zeros_like(out))
    opt.zero_grad()
    loss.backward()
    opt.step()
    say("train", step, float(loss.detach()), grad_sum(model))
with torch.inference_mode():
    say("eval", float(model(batch(4)[0]).sum()))
say("final", weight_sum(model), tuple(torch.empty(()).shape))
