"""``torch.func``: per-sample gradients with ``grad`` + ``vmap`` over ``functional_call``, and a training step
whose update is made from them.

Follows the torch.func tutorials' per-sample-gradient pattern (Opacus-style DP-SGD loops): ``vmap(grad(loss))``
over the batch with the model's parameters passed to ``functional_call``, then the mean gradient applied.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from feature_kit import Tiny, batch, grad_sum, say, seeded, weight_sum
from torch.func import functional_call, grad, vmap

seeded()
model = Tiny()
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def sample_loss(params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = functional_call(model, params, (x.unsqueeze(0),))
    return F.cross_entropy(out, y.unsqueeze(0))


per_sample = vmap(grad(sample_loss), in_dims=(None, 0, 0))
for step in range(12):
    x, y = batch(8)
    params = {k: v.detach() for k, v in model.named_parameters()}
    grads = per_sample(params, x, y)
    clipped = {k: g.clamp(-1.0, 1.0).mean(0) for k, g in grads.items()}  # DP-SGD's clip, then the mean
    opt.zero_grad()
    for name, p in model.named_parameters():
        p.grad = clipped[name]
    loss = F.cross_entropy(model(x), y)  # the ordinary forward, for the log
    loss.backward()  # and its gradient added, so the step holds a backward too
    opt.step()
    say("train", step, float(loss.detach()), grad_sum(model), float(sum(g.abs().sum() for g in grads.values())))
    if step % 4 == 3:
        with torch.no_grad():
            say("vmap", float(vmap(model)(batch(4)[0].unsqueeze(1)).sum()))
say("final", weight_sum(model))
