"""The program's own modes: ``FlopCounterMode`` over a few steps, its own ``TorchDispatchMode`` and
``TorchFunctionMode`` counting ops, entered mid-step and left in a later step.

Follows scripts that count a model's FLOPs during training (``torch.utils.flop_counter.FlopCounterMode``, as
nanoGPT-style MFU estimates and torchtitan do) and users' debugging modes (an op counter, a logging mode).
"""

from __future__ import annotations

from collections import Counter

import torch
import torch.nn.functional as F
from feature_kit import Tiny, batch, grad_sum, say, seeded, weight_sum
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode


class OpCounter(TorchDispatchMode):
    """Counts the ATen ops it sees."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.seen[str(func.overloadpacket.__name__)] += 1
        return func(*args, **(kwargs or {}))


class CallCounter(TorchFunctionMode):
    """Counts the torch functions called."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.calls += 1
        return func(*args, **(kwargs or {}))


seeded()
model = Tiny()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
counter, functions = OpCounter(), CallCounter()
for step in range(16):
    x, y = batch()
    if step == 6:
        counter.__enter__()  # the program's mode entered before a forward ...
    if step == 8:
        functions.__enter__()
    if step in (10, 11):
        with FlopCounterMode(display=False) as flops:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
        say("flops", step, flops.get_total_flops())
    else:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
    if step == 7:
        counter.__exit__(None, None, None)  # ... and left after the next step's backward, before its update
        say("ops", sorted(counter.seen.items()))
    opt.step()
    if step == 9:
        functions.__exit__(None, None, None)  # after the update, across two steps
        say("functions", functions.calls)
    say("train", step, float(loss.detach()), grad_sum(model))
    if step == 12:
        with torch.inference_mode(), OpCounter() as inner:
            say("validate", float(model(batch(4)[0]).sum()))
        say("inner", sorted(inner.seen.items()))
say("final", weight_sum(model), tuple(torch.empty(()).shape))
