"""Do no harm: a program under fxtui run cannot tell fxtui is there by its own objects.

Its model pickles, deep-copies, saves, loads and exports as under python, mid-run and at the end, and every
module's hook dictionaries, its repr and its weights read the same: the script prints all of it and its
output is compared line for line with python's.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

#: Trains a small model (sampled steps included), checking its objects mid-run and at the end.
SCRIPT = """
import copy, hashlib, io, pickle, sys
import torch, torch.nn as nn, torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(8 * 8 * 8, 10))
    def forward(self, x):
        return self.head(F.relu(self.bn(self.conv(x))))

def report(model, when):
    hooks = sorted(
        (name, len(m._forward_pre_hooks), len(m._forward_hooks), len(m._forward_hooks_always_called),
         len(m._backward_hooks), len(m._backward_pre_hooks), len(m._state_dict_hooks))
        for name, m in model.named_modules()
    )
    print(when, "hooks", hooks)
    print(when, "attributes", sorted(vars(model)))
    print(when, "repr", repr(model).replace("\\n", " "))
    digest = hashlib.sha256(b"".join(t.detach().numpy().tobytes() for t in model.state_dict().values()))
    print(when, "weights", digest.hexdigest()[:16])
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    print(when, "saved and loaded", type(loaded).__name__, torch.equal(loaded.conv.weight, model.conv.weight))
    print(when, "pickled", type(pickle.loads(pickle.dumps(model))).__name__)
    twin = copy.deepcopy(model)
    print(when, "deep-copied", type(twin).__name__, len(twin._forward_hooks), len(twin._forward_pre_hooks))
    exported = torch.export.export(copy.deepcopy(model).eval(), (torch.randn(2, 3, 8, 8),))
    print(when, "exported", type(exported).__name__)
    print(when, "optimizer state", sorted(opt.state_dict()["param_groups"][0]))

model = Net()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(int(sys.argv[1])):
    x, y = torch.randn(4, 3, 8, 8), torch.randint(0, 10, (4,))
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()
    if step == int(sys.argv[1]) // 2:
        report(model, "mid-run")
report(model, "end")
"""


def test_the_programs_objects_read_as_under_python(tmp_path: Path) -> None:
    path = tmp_path / "objects.py"
    path.write_text(textwrap.dedent(SCRIPT))
    plain = subprocess.run([sys.executable, str(path), "16"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    watched = subprocess.run(
        [sys.executable, "-m", "fxtui", "run", "--once", "--warmup-steps", "1", "--sample-every", "2", str(path), "16"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert watched.returncode == 0, watched.stderr
    own = watched.stdout.split("\nprogram    ", 1)[0].strip().splitlines()  # the program's output, then fxtui's
    assert own == plain.stdout.strip().splitlines()
    assert "sampled" in watched.stdout  # the steps around the checks were watched (and some timed per op)


def test_the_agent_restores_what_it_replaced_of_torchs() -> None:
    """fxtui.watch() ends inside the caller's process: torch's functions are its own again."""
    import torch
    from torch.utils.data import dataloader

    import fxtui

    before = (
        torch.nn.Module.__call__,
        torch.autograd.backward,
        torch.optim.Optimizer.zero_grad,
        torch.nn.Module.zero_grad,
        dataloader._BaseDataLoaderIter.__next__,
        torch.nn.utils.clip_grad_norm_,
    )
    model = torch.nn.Linear(4, 2)
    with fxtui.watch(warmup=0, every=1):
        assert torch.nn.Module.__call__ is not before[0]
        model(torch.randn(3, 4)).sum().backward()
    after = (
        torch.nn.Module.__call__,
        torch.autograd.backward,
        torch.optim.Optimizer.zero_grad,
        torch.nn.Module.zero_grad,
        dataloader._BaseDataLoaderIter.__next__,
        torch.nn.utils.clip_grad_norm_,
    )
    assert after == before
    assert not model._forward_hooks and not model._forward_pre_hooks
