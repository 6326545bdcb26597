"""A ``torch.compile``d submodule inside an eager model, trained and then evaluated under ``inference_mode``, and a
compiled prediction function that calls the model under ``inference_mode`` between steps.

Follows PyTorch 2 training scripts that compile their heavy block only (``self.blocks = torch.compile(blocks)``,
``module.compile()``), leaving the rest eager, and serving code that compiles its ``predict()``.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from feature_kit import batch, grad_sum, say, seeded, weight_sum


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(8, 16)
        self.body = torch.compile(nn.Sequential(nn.Linear(16, 16), nn.GELU(), nn.Linear(16, 16)))
        self.head = nn.Linear(16, 4)
        self.head.compile()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(self.inp(x)))


seeded()
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)


@torch.compile
def predict(x: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return model(x).softmax(-1)


for step in range(12):
    x, y = batch()
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    say("train", step, round(float(loss.detach()), 4), round(grad_sum(model), 4))
    if step % 3 == 2:
        say("predict", step, round(float(predict(torch.ones(2, 8)).max()), 4), tuple(torch.empty(()).shape))
with torch.inference_mode():
    say("eval", round(float(model(batch()[0]).sum()), 4))
say("final", round(weight_sum(model), 4), tuple(torch.empty(()).shape))
