"""Anomaly mode: ``torch.autograd.set_detect_anomaly(True)`` for part of a run, ``detect_anomaly()`` around a step,
and the error it raises on a NaN made in backward caught by the program.

Follows the debugging switch of many training scripts (a ``--detect-anomaly`` flag) and a loop that catches the
anomaly error and skips the batch.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from feature_kit import Tiny, batch, grad_sum, say, seeded, weight_sum

seeded()
model = Tiny()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(12):
    x, y = batch()
    if step == 3:
        torch.autograd.set_detect_anomaly(True)
    if step == 8:
        torch.autograd.set_detect_anomaly(False)
    try:
        with torch.autograd.detect_anomaly(check_nan=True) if step == 10 else torch.enable_grad():
            out = model(x)
            if step in (6, 10):
                out = out * torch.sqrt(torch.tensor(-1.0) + 0 * out.sum())  # NaN in forward and its backward
            loss = F.cross_entropy(out, y)
            opt.zero_grad()
            loss.backward()
    except RuntimeError as e:
        say("anomaly", step, str(e).split(" returned ")[0])
        opt.zero_grad()
        continue
    opt.step()
    say("train", step, float(loss.detach()), grad_sum(model), torch.is_anomaly_enabled())
say("final", weight_sum(model))
