"""An upscaling network that calls one activation module at two shapes in every forward.

The pattern of pytorch/examples ``super_resolution``: one ``nn.ReLU`` attribute applied after three convolutions whose
outputs differ in channels (64, 64, then 32), a ``PixelShuffle`` at the end; an ``nn.MSELoss`` module called outside
the model (``criterion(model(x), y)``), Adam, ``loss.item()`` every batch, a PSNR evaluation under
``torch.no_grad()`` after each epoch and the whole model saved as a checkpoint. Images are made locally (seeded).
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile

import torch
import torch.nn as nn


class Upscaler(nn.Module):
    def __init__(self, factor: int, width: int) -> None:
        super().__init__()
        self.act = nn.ReLU()  # one module, three calls, two output shapes
        self.first = nn.Conv2d(1, width, 5, padding=2)
        self.middle = nn.Conv2d(width, width, 3, padding=1)
        self.narrow = nn.Conv2d(width, width // 2, 3, padding=1)
        self.to_pixels = nn.Conv2d(width // 2, factor * factor, 3, padding=1)
        self.shuffle = nn.PixelShuffle(factor)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.act(self.first(x))
        x = self.act(self.middle(x))
        x = self.act(self.narrow(x))
        return self.shuffle(self.to_pixels(x))


def batches(n: int, batch: int, size: int, factor: int, seed: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Low- and high-resolution pairs: a high-resolution image and its average-pooled copy."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        high = torch.rand(batch, 1, size * factor, size * factor, generator=g)
        out.append((nn.functional.avg_pool2d(high, factor), high))
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batches", type=int, default=10)
    p.add_argument("--test-batches", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--size", type=int, default=32)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--factor", type=int, default=3)
    a = p.parse_args()

    torch.manual_seed(123)
    train = batches(a.batches, a.batch_size, a.size, a.factor, 1)
    test = batches(a.test_batches, a.batch_size, a.size, a.factor, 2)
    model = Upscaler(a.factor, a.width)
    criterion = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    steps = evals = 0
    with tempfile.TemporaryDirectory() as folder:
        for epoch in range(1, a.epochs + 1):
            total = 0.0
            for low, high in train:
                optimizer.zero_grad()
                loss = criterion(model(low), high)
                total += loss.item()
                loss.backward()
                optimizer.step()
                steps += 1
            print(f"epoch {epoch} loss {total / len(train):.6f}")
            psnr = 0.0
            with torch.no_grad():
                for low, high in test:
                    mse = criterion(model(low), high)
                    psnr += 10 * math.log10(1 / mse.item())
                    evals += 1
            print(f"epoch {epoch} psnr {psnr / len(test):.4f} dB")
            path = os.path.join(folder, f"model_epoch_{epoch}.pth")
            torch.save(model, path)
    print(f"done steps={steps} evals={evals}")


if __name__ == "__main__":
    main()
