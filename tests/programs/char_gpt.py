"""A character-level GPT trained on a text made here: it evaluates at iteration 0, then trains.

The pattern of the well-known minimal GPT trainers: a config dataclass, pre-norm blocks of causal self-attention and an
MLP, a batch drawn at random offsets of one long token array, an estimate of the loss under ``torch.no_grad()`` after
``model.eval()`` at iteration 0 and every ``--eval-interval``, AdamW with weight decay on the matrices only, a
cosine learning rate with warm-up set by hand each iteration, gradient clipping, ``loss.item()`` every
``--log-interval`` iterations and optional gradient accumulation.
"""

from __future__ import annotations

import argparse
import math
import random
import time
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    vocab: int
    block: int
    layers: int
    heads: int
    width: int


class SelfAttention(nn.Module):
    def __init__(self, c: Config) -> None:
        super().__init__()
        self.heads = c.heads
        self.qkv = nn.Linear(c.width, 3 * c.width)
        self.out = nn.Linear(c.width, c.width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, w = x.shape
        q, k, v = self.qkv(x).split(w, dim=2)
        q, k, v = (z.view(b, t, self.heads, w // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, w))


class FeedForward(nn.Module):
    def __init__(self, c: Config) -> None:
        super().__init__()
        self.up = nn.Linear(c.width, 4 * c.width)
        self.down = nn.Linear(4 * c.width, c.width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x)))


class Block(nn.Module):
    def __init__(self, c: Config) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(c.width)
        self.attn = SelfAttention(c)
        self.norm2 = nn.LayerNorm(c.width)
        self.ff = FeedForward(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.ff(self.norm2(x))


class CharGPT(nn.Module):
    def __init__(self, c: Config) -> None:
        super().__init__()
        self.config = c
        self.tokens = nn.Embedding(c.vocab, c.width)
        self.positions = nn.Embedding(c.block, c.width)
        self.blocks = nn.ModuleList(Block(c) for _ in range(c.layers))
        self.norm = nn.LayerNorm(c.width)
        self.head = nn.Linear(c.width, c.vocab, bias=False)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        x = self.tokens(idx) + self.positions(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.norm(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def make_text(chars: int, seed: int) -> str:
    """A text of made-up words in made-up lines: enough structure for the loss to fall."""
    rng = random.Random(seed)
    words = ["".join(rng.choice("etaoinshrdlucmfwyp") for _ in range(rng.randint(2, 7))) for _ in range(300)]
    lines, n = [], 0
    while n < chars:
        line = " ".join(rng.choice(words) for _ in range(rng.randint(4, 10))).capitalize() + rng.choice(".,;!?")
        lines.append(line)
        n += len(line) + 1
    return "\n".join(lines)[:chars]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--iters", type=int, default=60)
    p.add_argument("--eval-interval", type=int, default=1000)
    p.add_argument("--eval-iters", type=int, default=10)
    p.add_argument("--log-interval", type=int, default=10)
    p.add_argument("--batch", type=int, default=12)
    p.add_argument("--block", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--grad-accum", type=int, default=1)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--chars", type=int, default=60_000)
    a = p.parse_args()

    torch.manual_seed(1337)
    text = make_text(a.chars, 1337)
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    data = torch.tensor([stoi[ch] for ch in text], dtype=torch.long)
    split = int(0.9 * len(data))
    splits = {"train": data[:split], "val": data[split:]}
    print(f"vocab {len(chars)}, train {split:,} tokens, val {len(data) - split:,} tokens")

    def get_batch(name: str) -> tuple[torch.Tensor, torch.Tensor]:
        source = splits[name]
        ix = torch.randint(len(source) - a.block - 1, (a.batch,))
        x = torch.stack([source[i : i + a.block] for i in ix])
        y = torch.stack([source[i + 1 : i + 1 + a.block] for i in ix])
        return x, y

    model = CharGPT(Config(len(chars), a.block, a.layers, a.heads, a.width))
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=a.lr,
        betas=(0.9, 0.99),
    )

    @torch.no_grad()
    def estimate_loss() -> dict[str, float]:
        model.eval()
        out = {}
        for name in ("train", "val"):
            losses = torch.zeros(a.eval_iters)
            for k in range(a.eval_iters):
                _, loss = model(*get_batch(name))
                losses[k] = loss.item()
            out[name] = losses.mean().item()
        model.train()
        return out

    warmup = max(1, a.iters // 10)

    def lr_at(it: int) -> float:
        if it < warmup:
            return a.lr * (it + 1) / (warmup + 1)
        ratio = (it - warmup) / max(1, a.iters - warmup)
        return a.lr / 10 + 0.5 * (1.0 + math.cos(math.pi * min(1.0, ratio))) * (a.lr - a.lr / 10)

    x, y = get_batch("train")
    t0 = time.time()
    evals = 0
    for it in range(a.iters + 1):
        for group in optimizer.param_groups:
            group["lr"] = lr_at(it)
        if it % a.eval_interval == 0:
            losses = estimate_loss()
            evals += 2 * a.eval_iters
            print(f"step {it}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
        if it == a.iters:
            break
        for _ in range(a.grad_accum):
            _, loss = model(x, y)
            loss = loss / a.grad_accum
            x, y = get_batch("train")
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        t1 = time.time()
        dt, t0 = t1 - t0, t1
        if it % a.log_interval == 0:
            print(f"iter {it}: loss {loss.item() * a.grad_accum:.4f}, time {dt * 1000:.2f}ms")
    print(f"done steps={a.iters} evals={evals}")


if __name__ == "__main__":
    main()
