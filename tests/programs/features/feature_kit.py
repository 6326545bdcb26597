"""What every feature script shares: a seeded tiny model, its data, and a digest line printer.

Each script trains a tiny model a few steps with one torch feature and prints a digest (losses, gradient sums,
outputs, counts) rounded, one line per fact. ``tests/test_torch_features.py`` runs it under ``python`` and under
``fxtui run --once --sample-every 1`` and compares every line: under fxtui the program must compute exactly the same.
"""

from __future__ import annotations

import torch
import torch.nn as nn


def seeded() -> None:
    """Seed torch and keep one intra-op thread (sums in one order, run to run)."""
    torch.manual_seed(0)
    torch.set_num_threads(1)


class Tiny(nn.Module):
    """Two linear layers around a ReLU: a model small enough to train a step in a millisecond."""

    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, width)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(width, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


def batch(n: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of inputs and class targets (drawn from torch's seeded generator)."""
    return torch.randn(n, 8), torch.randint(0, 4, (n,))


def grad_sum(model: nn.Module) -> float:
    """Σ of every gradient (0 where none)."""
    return sum(float(p.grad.sum()) for p in model.parameters() if p.grad is not None)


def weight_sum(model: nn.Module) -> float:
    return sum(float(p.detach().sum()) for p in model.parameters())


def say(label: str, *values: object) -> None:
    """One digest line: floats rounded to 6 places."""
    parts = [f"{v:.6f}" if isinstance(v, float) else str(v) for v in values]
    print(label, *parts, flush=True)
