"""``torch.export.export`` of the model in the middle of training and at its end, the exported program run.

Follows scripts that export a checkpoint for serving while they train (an export callback every N steps), then
check the exported program against the eager model.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from feature_kit import Tiny, batch, grad_sum, say, seeded, weight_sum

seeded()
model = Tiny()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
probe = torch.randn(2, 8)
for step in range(12):
    x, y = batch()
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    if step in (6, 11):  # between backward and the update: the step is in progress
        exported = torch.export.export(model, (probe,))
        say("exported", step, len(exported.graph.nodes), float(exported.module()(probe).sum()))
    opt.step()
    say("train", step, float(loss.detach()), grad_sum(model))
with torch.inference_mode():
    say("eval", float(model(probe).sum()), float(exported.module()(probe).sum()))
say("final", weight_sum(model))
