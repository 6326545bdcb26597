"""``torch.autocast`` at every point of a step and across steps.

Follows the mixed-precision training loops (``with torch.autocast("cpu", dtype=torch.bfloat16)`` around the forward
and loss, the backward outside), a validation under autocast and ``inference_mode`` together, and an autocast
region a program enters in one step and leaves in the next (an ``ExitStack`` kept across iterations).
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F
from feature_kit import Tiny, batch, grad_sum, say, seeded, weight_sum

seeded()
model = Tiny()
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
held = contextlib.ExitStack()
for step in range(14):
    x, y = batch()
    if step == 9:
        held.close()  # the autocast region entered in the last step ends here, before this step's forward
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=step % 3 != 2):
        out = model(x)
        loss = F.cross_entropy(out.float(), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    say("train", step, float(loss.detach()), grad_sum(model), str(out.dtype))
    if step == 8:
        held.enter_context(torch.autocast("cpu", dtype=torch.bfloat16))  # across the step boundary
        say("held", str(model(x).dtype))
    if step in (7, 11):
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            for _ in range(2):
                say("validate", float(model(batch(4)[0]).float().sum()))
        say("empty", tuple(torch.empty(()).shape), torch.is_autocast_enabled("cpu"))
say("final", weight_sum(model))
