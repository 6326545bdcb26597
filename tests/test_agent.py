"""The agent inside a process (fxtui.watch): the steps of the thread that trains, not the others'."""

from __future__ import annotations

import threading

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import fxtui

pytestmark = pytest.mark.unit


def test_another_threads_loader_and_model_calls_are_not_the_steps() -> None:
    """A prefetching thread iterating a DataLoader and calling a model of its own changes no training step."""
    torch.manual_seed(0)
    model, helper = nn.Linear(8, 2), nn.Linear(8, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(400, 8)), batch_size=4)
    stop = threading.Event()

    def prefetch() -> None:
        while not stop.is_set():
            for (batch,) in loader:
                with torch.no_grad():
                    helper(batch)
                if stop.is_set():
                    return

    with fxtui.watch(warmup=1, every=2, timer="mode") as w:  # the native timer's first use would start a compiler
        thread = threading.Thread(target=prefetch, daemon=True)
        thread.start()
        for _ in range(30):
            opt.zero_grad()
            F.mse_loss(model(torch.randn(4, 8)), torch.zeros(4, 2)).backward()
            opt.step()
        stop.set()
        thread.join(10)
    report = w.report()
    steps = report.steps
    assert steps is not None and steps.kind == "train" and steps.steps == 29  # 30 iterations, 1 warm-up
    assert dict(steps.holds) == {"forward": 1, "backward": 1, "optimizer:SGD": 1}  # no batch, no other model
    assert [k.kind for k in steps.kinds] == ["train"]  # the helper's calls were not evaluation calls
