"""Gradient accumulation over a DataLoader: ``--accum`` micro-batches per optimizer step.

The common pattern of training with a batch larger than memory allows: the loss of each micro-batch is divided by
the number of micro-batches and backpropagated; every ``--accum``-th micro-batch the gradients are clipped, the
optimizer steps, a scheduler steps and the gradients are zeroed.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Classifier(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, padding=1, stride=2), nn.BatchNorm2d(2 * width), nn.ReLU(),
        )  # fmt: skip
        self.head = nn.Linear(2 * width, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean((2, 3)))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=12, help="optimizer steps")
    p.add_argument("--accum", type=int, default=4, help="micro-batches per optimizer step")
    p.add_argument("--micro-batch", type=int, default=8)
    p.add_argument("--size", type=int, default=32)
    p.add_argument("--width", type=int, default=16)
    a = p.parse_args()

    torch.manual_seed(0)
    n = a.steps * a.accum * a.micro_batch
    data = TensorDataset(torch.randn(n, 3, a.size, a.size), torch.randint(0, 10, (n,)))
    loader = DataLoader(data, batch_size=a.micro_batch, shuffle=True, generator=torch.Generator().manual_seed(0))
    model = Classifier(a.width)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=5, gamma=0.5)
    steps = 0
    optimizer.zero_grad()
    for i, (x, y) in enumerate(loader):
        loss = F.cross_entropy(model(x), y) / a.accum
        loss.backward()
        if (i + 1) % a.accum == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            steps += 1
            print(f"step {steps}: loss {loss.item() * a.accum:.4f}")
    print(f"done steps={steps} micro_batches={i + 1}")


if __name__ == "__main__":
    main()
