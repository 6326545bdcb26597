"""Training from a DataLoader whose batches are made by two worker processes.

The pattern of image-classification scripts: a map-style Dataset that builds each sample in ``__getitem__`` (here a
seeded random image standing in for decoding a file, and a light augmentation), a ``DataLoader`` with
``num_workers=2`` and ``persistent_workers`` off, so worker processes start each epoch; a small CNN, SGD, per-epoch
evaluation under ``torch.no_grad()``.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class MadeImages(Dataset):
    """Images made from their index: the same on every run, in any worker."""

    def __init__(self, n: int, size: int, seed: int) -> None:
        self.n, self.size, self.seed = n, size, seed

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        g = torch.Generator().manual_seed(self.seed * 100_003 + i)
        image = torch.rand(3, self.size, self.size, generator=g)
        if i % 2:
            image = image.flip(2)  # a horizontal flip, as augmentations do
        return (image - 0.5) / 0.25, int(torch.randint(0, 10, (1,), generator=g))


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.relu(self.conv2(x))
        return self.fc(x.mean((2, 3)))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batches", type=int, default=10, help="training batches per epoch")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--size", type=int, default=32)
    p.add_argument("--workers", type=int, default=2)
    a = p.parse_args()

    torch.manual_seed(0)
    train = DataLoader(
        MadeImages(a.batches * a.batch_size, a.size, 1), batch_size=a.batch_size, shuffle=False, num_workers=a.workers
    )
    val = DataLoader(MadeImages(4 * a.batch_size, a.size, 2), batch_size=a.batch_size, num_workers=a.workers)
    model = SmallCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    steps = 0
    for epoch in range(a.epochs):
        model.train()
        for x, y in train:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            steps += 1
        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in val:
                correct += int((model(x).argmax(1) == y).sum())
        print(f"epoch {epoch}: last loss {loss.item():.4f}, val correct {correct}/{len(val.dataset)}")
    print(f"done steps={steps}")


if __name__ == "__main__":
    main()
