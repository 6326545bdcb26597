"""Grad modes at every point of a step, between steps and across them.

Follows timm's ``train.py`` (a validation under ``torch.inference_mode()`` after each epoch, its DataLoader then
creating a tensor without arguments), nanoGPT's ``estimate_loss`` (``@torch.no_grad()`` mid-run), and loops that
toggle ``torch.set_grad_enabled`` and ``enable_grad`` inside a step.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from feature_kit import Tiny, batch, grad_sum, say, seeded, weight_sum

seeded()
model = Tiny()
opt = torch.optim.SGD(model.parameters(), lr=0.1)


@torch.no_grad()
def estimate() -> float:
    model.eval()
    x, y = batch()
    loss = F.cross_entropy(model(x), y)
    model.train()
    return float(loss)


@torch.inference_mode()
def validate_per_call(x: torch.Tensor) -> torch.Tensor:
    return model(x)


inference = torch.inference_mode()
for step in range(16):
    if step == 5:
        say("across", float(model(torch.ones(1, 8)).sum()))
        inference.__exit__(None, None, None)  # ... and left in the next, before its forward
    x, y = batch()
    if step % 2:
        with torch.set_grad_enabled(False):  # a frozen embedding, then gradients again mid-step
            feats = x * 2.0
            with torch.enable_grad():
                pass
        x = feats / 2.0
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    if step % 3 == 0:
        with torch.inference_mode():  # a metric inside the step, between backward and the update
            say("metric", step, float(model(x).argmax(1).eq(y).float().mean()))
    opt.step()
    say("train", step, float(loss.detach()), grad_sum(model))
    if step == 4:
        inference.__enter__()  # inference mode entered at the end of one step ...
        say("across", float(model(torch.ones(1, 8)).sum()))
    if step % 4 == 3 and step > 9:
        say("estimate", step, estimate())
    if step % 5 == 4 and step > 4:  # first after the training steps are sampled, while evaluation warms up
        with torch.inference_mode():  # timm's validate(): the whole loop in one block
            for _ in range(3):
                xv, _yv = batch(4)
                say("validate", float(model(xv).sum()))
        say("empty", tuple(torch.empty(()).shape), float(torch.zeros(()).add(1)))
    if step in (11, 13):
        for _ in range(2):  # one block per call
            say("per_call", float(validate_per_call(batch(4)[0]).sum()))
        say("after", float(torch.ones(2).sum()))
torch.set_grad_enabled(False)  # left off across the last steps, as a script ending in inference does
say("final", float(model(batch(4)[0]).sum()), weight_sum(model))
torch.set_grad_enabled(True)
say("empty", tuple(torch.empty(()).shape), torch.is_inference_mode_enabled(), torch.is_grad_enabled())
