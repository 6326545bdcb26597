"""Training a model compiled with ``torch.compile(model)``.

The pattern of PyTorch 2 training scripts: the model wrapped once by ``torch.compile`` (the first calls compile its
forward and backward graphs; that takes seconds), then an ordinary loop through the compiled wrapper with AdamW.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, width)
        self.norm = nn.LayerNorm(width)
        self.fc2 = nn.Linear(width, width)
        self.out = nn.Linear(width, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.gelu(self.norm(self.fc1(x)))
        return self.out(x + F.gelu(self.fc2(x)))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--width", type=int, default=256)
    a = p.parse_args()

    torch.manual_seed(0)
    model = Net(a.width)
    compiled = torch.compile(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(a.batch, 64), torch.randint(0, 10, (a.batch,))
    for step in range(a.steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(compiled(x), y)
        loss.backward()
        optimizer.step()
        if step % 5 == 0:
            print(f"step {step}: loss {loss.item():.4f}")
    print(f"done steps={a.steps}")


if __name__ == "__main__":
    main()
