"""A program that looks at its own objects: under a profiler they must read exactly as under ``python``.

It trains a little, and then — in the middle of the run and at its end — saves its model whole with ``torch.save``
and loads it back, pickles it, deep-copies it (as an EMA copy or a "best model so far" snapshot does), exports it
with ``torch.export.export``, takes its ``state_dict()``, and prints what a profiler could have left on it: every
module's hook dictionaries and instance attributes, the optimizer's hooks and attributes, ``repr(model)`` and a
digest of the weights. Every line it prints must be the same under ``python`` and under ``fxtui run``.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import io
import pickle

import torch
import torch.nn as nn
import torch.nn.functional as F

HOOK_DICTS = (
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_backward_pre_hooks",
    "_backward_hooks",
    "_state_dict_pre_hooks",
    "_state_dict_hooks",
    "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks",
)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.body = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(F.relu(self.bn(self.conv(x))).mean((2, 3)))


def digest(model: nn.Module) -> str:
    h = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        h.update(name.encode())
        h.update(tensor.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def look(label: str, model: nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor) -> None:
    print(f"== {label}")
    for name, module in model.named_modules():
        sizes = " ".join(str(len(getattr(module, d))) for d in HOOK_DICTS)
        print(f"hooks {name or '(model)'}: {sizes}; attributes {sorted(vars(module))}")
    print(f"optimizer hooks: {len(optimizer._optimizer_step_pre_hooks)} {len(optimizer._optimizer_step_post_hooks)}")
    print(f"optimizer attributes: {sorted(vars(optimizer))}")
    print(f"digest {digest(model)}")
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    print(f"torch.save/load: {type(loaded).__name__} digest {digest(loaded)}")
    print(f"pickle: {len(pickle.dumps(model))} bytes, unpickled digest {digest(pickle.loads(pickle.dumps(model)))}")
    clone = copy.deepcopy(model)
    print(f"deepcopy: digest {digest(clone)} same output {bool(torch.equal(clone.eval()(x), model.eval()(x)))}")
    model.train()
    state = model.state_dict()
    print(f"state_dict: {len(state)} entries {list(state)}")
    print(f"optimizer state_dict: {sorted(optimizer.state_dict())} {len(optimizer.state_dict()['state'])} states")
    model.eval()
    exported = torch.export.export(model, (x,))
    ops = sorted({str(n.target) for n in exported.graph.nodes if n.op == "call_function"})
    print(f"export: {len(exported.graph.nodes)} nodes, ops {ops}")
    model.train()
    print("repr:")
    print(repr(model))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=12)
    a = p.parse_args()

    torch.manual_seed(0)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = torch.randn(8, 3, 12, 12), torch.randint(0, 10, (8,))
    for step in range(a.steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        if step == a.steps // 2:
            print(f"step {step}: loss {loss.item():.4f}")
            look("mid-run", model, optimizer, x)
    print(f"step {a.steps}: loss {loss.item():.4f}")
    look("at the end", model, optimizer, x)
    print(f"done steps={a.steps}")


if __name__ == "__main__":
    main()
