"""DistributedDataParallel over gloo, two ranks of one thread each, started by ``torchrun --nproc_per_node 2``.

The pattern of multi-process data-parallel scripts: ``init_process_group`` from torchrun's environment, the model
wrapped in DDP (its backward all-reduces the gradients), a ``DistributedSampler`` giving each rank its share of the
data, ``set_epoch`` every epoch, rank 0 alone printing, ``destroy_process_group`` at the end.
"""

from __future__ import annotations

import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batches", type=int, default=10, help="batches per rank per epoch")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--width", type=int, default=256)
    a = p.parse_args()

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    n = a.batches * a.batch * world
    data = TensorDataset(torch.randn(n, 128), torch.randint(0, 10, (n,)))
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=a.batch, sampler=sampler)
    net = nn.Sequential(
        nn.Linear(128, a.width), nn.ReLU(), nn.Linear(a.width, a.width), nn.ReLU(), nn.Linear(a.width, 10)
    )
    model = nn.parallel.DistributedDataParallel(net)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    steps = 0
    for epoch in range(a.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            steps += 1
        total = loss.detach().clone()
        dist.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch}: mean last loss {total.item() / world:.4f}")
    if rank == 0:
        print(f"done steps={steps} ranks={world}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
