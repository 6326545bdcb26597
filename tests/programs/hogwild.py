"""Hogwild training: worker processes update one model in shared memory, then the parent evaluates it.

The pattern of pytorch/examples ``mnist_hogwild``: ``torch.multiprocessing`` with the ``spawn`` start method, the
model's ``share_memory()``, one ``mp.Process`` per worker, each with its own seed, ``DataLoader`` and SGD (momentum)
over the shared parameters, no collective and no process group; the parent joins them and evaluates under
``torch.no_grad()``. Data is made locally (seeded). The workers' updates race by design, so the program prints
counts, not losses.
"""

from __future__ import annotations

import argparse

import torch
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, 5)
        self.conv2 = nn.Conv2d(10, 20, 5)
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = F.relu(self.fc1(x.flatten(1)))
        return F.log_softmax(self.fc2(x), dim=1)


def digits(n: int, seed: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    return TensorDataset(torch.randn(n, 1, 28, 28, generator=g), torch.randint(0, 10, (n,), generator=g))


def train(rank: int, a: argparse.Namespace, model: Net, dataset: TensorDataset, steps: mp.Value) -> None:
    torch.manual_seed(a.seed + rank)
    loader = DataLoader(dataset, batch_size=a.batch_size, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    model.train()
    for _epoch in range(a.epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.nll_loss(model(x), y)
            loss.backward()
            optimizer.step()
            with steps.get_lock():
                steps.value += 1


def test(a: argparse.Namespace, model: Net, dataset: TensorDataset) -> int:
    model.eval()
    calls = 0
    with torch.no_grad():
        for x, y in DataLoader(dataset, batch_size=a.test_batch_size):
            F.nll_loss(model(x), y, reduction="sum").item()
            calls += 1
    return calls


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batches", type=int, default=12, help="training batches per worker and epoch")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--test-batches", type=int, default=4)
    p.add_argument("--test-batch-size", type=int, default=64)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()

    torch.manual_seed(a.seed)
    mp.set_start_method("spawn", force=True)
    model = Net()
    model.share_memory()
    dataset = digits(a.batches * a.batch_size, 1)
    steps = mp.Value("i", 0)
    workers = [mp.Process(target=train, args=(rank, a, model, dataset, steps)) for rank in range(a.processes)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    codes = [worker.exitcode for worker in workers]
    print(f"workers exited {codes}")
    evals = test(a, model, digits(a.test_batches * a.test_batch_size, 2))
    print(f"done steps={steps.value} evals={evals} workers={len(workers)}")


if __name__ == "__main__":
    main()
