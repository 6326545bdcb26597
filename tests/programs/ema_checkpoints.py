"""Training with an exponential moving average of the weights, both validated under inference_mode, checkpoints saved.

The pattern of huggingface/pytorch-image-models ``train.py`` with ``--model-ema``: a small vision transformer
(patch embedding by convolution, a few pre-norm blocks, a class token), AdamW, label-smoothed cross-entropy, a
``DataLoader`` of images; an EMA copy of the model (a deep copy in ``eval()`` without gradients) updated after each
optimizer step under ``no_grad`` with ``lerp_``; after each epoch the model and then its EMA are validated under
``torch.inference_mode()`` over a ``DataLoader`` (whose iterator runs ops with no tensor argument), and a checkpoint
holding both state dicts, the optimizer's and the metric is saved, the best one kept. Images are made locally.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import os
import shutil
import tempfile

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyViT(nn.Module):
    def __init__(self, size: int, patch: int, dim: int, depth: int, classes: int) -> None:
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, patch, stride=patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, (size // patch) ** 2 + 1, dim) * 0.02)
        self.blocks = nn.Sequential(*(Block(dim, 2) for _ in range(depth)))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        return self.head(self.norm(self.blocks(x))[:, 0])


class WeightEma:
    """A copy of the model whose weights follow the trained ones: ema = decay·ema + (1 − decay)·weights."""

    def __init__(self, model: nn.Module, decay: float) -> None:
        self.module = copy.deepcopy(model).eval()
        self.decay = decay
        for p in self.module.parameters():
            p.requires_grad_(False)

    @torch.no_grad()
    def update(self, model: nn.Module) -> None:
        for ema, new in zip(self.module.state_dict().values(), model.state_dict().values(), strict=True):
            if ema.is_floating_point():
                ema.lerp_(new, 1.0 - self.decay)
            else:
                ema.copy_(new)


def images(n: int, size: int, classes: int, seed: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    return TensorDataset(torch.randn(n, 3, size, size, generator=g), torch.randint(0, classes, (n,), generator=g))


def validate(model: nn.Module, loader: DataLoader) -> tuple[float, float, int]:
    model.eval()
    total = correct = seen = calls = 0
    with torch.inference_mode():
        for x, y in loader:
            out = model(x)
            total += F.cross_entropy(out, y, reduction="sum").item()
            correct += int((out.argmax(1) == y).sum())
            seen += len(y)
            calls += 1
    return total / seen, correct / seen, calls


def digest(model: nn.Module) -> str:
    h = hashlib.sha256()
    for t in model.state_dict().values():
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batches", type=int, default=10)
    p.add_argument("--val-batches", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--size", type=int, default=32)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--depth", type=int, default=2)
    a = p.parse_args()

    torch.manual_seed(42)
    classes = 10
    train = DataLoader(images(a.batches * a.batch_size, a.size, classes, 1), batch_size=a.batch_size, shuffle=True)
    val = DataLoader(images(a.val_batches * a.batch_size, a.size, classes, 2), batch_size=a.batch_size)
    model = TinyViT(a.size, 8, a.dim, a.depth, classes)
    ema = WeightEma(model, decay=0.9)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    steps = evals = 0
    best = float("inf")
    folder = tempfile.mkdtemp()
    try:
        for epoch in range(a.epochs):
            model.train()
            for x, y in train:
                loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                ema.update(model)
                steps += 1
            val_loss, top1, calls = validate(model, val)
            ema_loss, ema_top1, ema_calls = validate(ema.module, val)
            evals += calls + ema_calls
            print(f"epoch {epoch} val {val_loss:.5f} top1 {top1:.3f} ema val {ema_loss:.5f} top1 {ema_top1:.3f}")
            state = {
                "epoch": epoch,
                "state_dict": model.state_dict(),
                "state_dict_ema": ema.module.state_dict(),
                "optimizer": optimizer.state_dict(),
                "metric": ema_loss,
            }
            last = os.path.join(folder, "last.pth.tar")
            torch.save(state, last)
            if ema_loss < best:
                best = ema_loss
                shutil.copyfile(last, os.path.join(folder, "model_best.pth.tar"))
        restored = torch.load(os.path.join(folder, "model_best.pth.tar"), weights_only=True)
        check = copy.deepcopy(ema.module)
        check.load_state_dict(restored["state_dict_ema"])
        print(f"best epoch {restored['epoch']} ema digest {digest(check)}")
    finally:
        shutil.rmtree(folder)
    print(f"done steps={steps} evals={evals}")


if __name__ == "__main__":
    main()
