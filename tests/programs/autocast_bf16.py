"""Training under ``torch.autocast("cpu", dtype=torch.bfloat16)``: mixed precision on the CPU.

The pattern of mixed-precision training loops: the forward and the loss inside the autocast context (matrix products
run in bfloat16, reductions in float32), the backward and the optimizer step outside it, parameters kept in float32.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class Residual(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 2 * width)
        self.down = nn.Linear(2 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(F.gelu(self.up(self.norm(x))))


class TokenMLP(nn.Module):
    def __init__(self, width: int, depth: int) -> None:
        super().__init__()
        self.embed = nn.Linear(48, width)
        self.blocks = nn.Sequential(*(Residual(width) for _ in range(depth)))
        self.head = nn.Linear(width, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.embed(x)).mean(1))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--depth", type=int, default=2)
    a = p.parse_args()

    torch.manual_seed(0)
    model = TokenMLP(a.width, a.depth)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batches = [(torch.randn(a.batch, a.tokens, 48), torch.randint(0, 10, (a.batch,))) for _ in range(4)]
    for step in range(a.steps):
        x, y = batches[step % len(batches)]
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(x)
            loss = F.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 5 == 0:
            print(f"step {step}: loss {loss.item():.3f} logits {logits.dtype}")
    print(f"done steps={a.steps}")


if __name__ == "__main__":
    main()
