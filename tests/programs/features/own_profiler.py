"""A program that profiles 20 of its own steps with ``torch.profiler`` and prints ``key_averages()`` counts.

Follows the profiling recipes of PyTorch's tutorials: ``torch.profiler.profile`` with a ``schedule`` and
``prof.step()`` each iteration, ``record_function`` naming a region, a window of ``torch.autograd.profiler``, and
one inference profiled under ``inference_mode`` between training steps;
the counts it prints are its own and must not change because another profiler watches.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from feature_kit import Tiny, batch, say, seeded, weight_sum
from torch.profiler import ProfilerActivity, profile, record_function, schedule

COUNTED = ("aten::addmm", "aten::mm", "aten::relu", "aten::threshold_backward", "aten::add_", "train_step")


def train_step(model: torch.nn.Module, opt: torch.optim.Optimizer) -> float:
    x, y = batch()
    with record_function("train_step"):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return float(loss.detach())


def counts(prof: object) -> list[tuple[str, int]]:
    events = {e.key: e.count for e in prof.key_averages()}  # type: ignore[attr-defined]
    return [(name, events.get(name, 0)) for name in COUNTED]


seeded()
model = Tiny()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(8):  # steps fxtui samples, before the program profiles
    say("train", step, train_step(model, opt))
with profile(activities=[ProfilerActivity.CPU]) as prof:  # 20 steps profiled whole
    for _ in range(20):
        train_step(model, opt)
say("profiled", counts(prof))
with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=2, warmup=1, active=4, repeat=1)) as sched:
    for _ in range(8):  # a schedule: two steps unprofiled, one warm-up, four recorded
        train_step(model, opt)
        sched.step()
say("scheduled", counts(sched))
with torch.autograd.profiler.profile() as legacy:
    for _ in range(3):
        train_step(model, opt)
say("autograd", counts(legacy))
say("train", 99, train_step(model, opt))
with torch.inference_mode(), profile(activities=[ProfilerActivity.CPU]) as inference:  # an inference profiled
    model(batch()[0])
say("inference", counts(inference), tuple(torch.empty(()).shape))
for step in range(6):
    say("after", step, train_step(model, opt))
say("final", weight_sum(model))
