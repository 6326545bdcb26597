"""A word-level LSTM language model trained by hand: no optimizer object.

The pattern of the classic word-language-model example: a corpus read into a dictionary, batchified into columns,
cut into ``--bptt`` chunks; each batch detaches the hidden state, calls ``model.zero_grad()``, backpropagates, clips
with ``clip_grad_norm_`` and updates every parameter with ``p.data.add_(p.grad, alpha=-lr)``. After each epoch it
evaluates under ``torch.no_grad()`` after ``model.eval()``, saves the whole model with ``torch.save(model, f)`` when
the validation loss improves, and at the end loads it back and evaluates on the test split.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import tempfile
import time

import torch
import torch.nn as nn


class RNNLM(nn.Module):
    def __init__(self, ntoken: int, ninp: int, nhid: int, nlayers: int, dropout: float) -> None:
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.ntoken, self.nhid, self.nlayers = ntoken, nhid, nlayers
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, tokens: torch.Tensor, hidden: tuple[torch.Tensor, torch.Tensor]):
        output, hidden = self.rnn(self.drop(self.encoder(tokens)), hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.ntoken)
        return torch.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz: int) -> tuple[torch.Tensor, torch.Tensor]:
        weight = next(self.parameters())
        return weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid)


def make_corpus(words: int, seed: int) -> list[list[str]]:
    """Lines of words drawn from a small made-up vocabulary with a little grammar (pairs that follow each other)."""
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefghijklmnoprstuvw") for _ in range(rng.randint(2, 8))) for _ in range(400)]
    follows = {w: rng.sample(vocab, 5) for w in vocab}
    lines, n = [], 0
    while n < words:
        w = rng.choice(vocab)
        line = [w]
        for _ in range(rng.randint(5, 15)):
            w = rng.choice(follows[w]) if rng.random() < 0.8 else rng.choice(vocab)
            line.append(w)
        lines.append(line)
        n += len(line) + 1
    return lines


def tokenize(lines: list[list[str]], index: dict[str, int]) -> torch.Tensor:
    ids = []
    for line in lines:
        for word in [*line, "<eos>"]:
            ids.append(index.setdefault(word, len(index)))
    return torch.tensor(ids, dtype=torch.int64)


def batchify(data: torch.Tensor, bsz: int) -> torch.Tensor:
    nbatch = data.size(0) // bsz
    return data.narrow(0, 0, nbatch * bsz).view(bsz, -1).t().contiguous()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--words", type=int, default=20_000)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--emsize", type=int, default=64)
    p.add_argument("--nhid", type=int, default=64)
    p.add_argument("--nlayers", type=int, default=2)
    p.add_argument("--lr", type=float, default=20.0)
    p.add_argument("--clip", type=float, default=0.25)
    p.add_argument("--batch-size", type=int, default=20)
    p.add_argument("--bptt", type=int, default=35)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--log-interval", type=int, default=10)
    p.add_argument("--save", default="")
    a = p.parse_args()

    torch.manual_seed(1111)
    lines = make_corpus(a.words, 1111)
    cut1, cut2 = int(len(lines) * 0.8), int(len(lines) * 0.9)
    index: dict[str, int] = {}
    train_data = batchify(tokenize(lines[:cut1], index), a.batch_size)
    val_data = batchify(tokenize(lines[cut1:cut2], index), 10)
    test_data = batchify(tokenize(lines[cut2:], index), 10)
    ntokens = len(index)
    model = RNNLM(ntokens, a.emsize, a.nhid, a.nlayers, a.dropout)
    criterion = nn.NLLLoss()

    def repackage(h):
        return h.detach() if isinstance(h, torch.Tensor) else tuple(repackage(v) for v in h)

    def get_batch(source: torch.Tensor, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        seq_len = min(a.bptt, len(source) - 1 - i)
        return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].reshape(-1)

    eval_calls = 0

    def evaluate(source: torch.Tensor) -> float:
        nonlocal eval_calls
        model.eval()
        total = 0.0
        hidden = model.init_hidden(10)
        with torch.no_grad():
            for i in range(0, source.size(0) - 1, a.bptt):
                data, targets = get_batch(source, i)
                output, hidden = model(data, hidden)
                eval_calls += 1
                hidden = repackage(hidden)
                total += len(data) * criterion(output, targets).item()
        return total / (len(source) - 1)

    batches = 0

    def train(epoch: int, lr: float) -> None:
        nonlocal batches
        model.train()
        total, start = 0.0, time.time()
        hidden = model.init_hidden(a.batch_size)
        for batch, i in enumerate(range(0, train_data.size(0) - 1, a.bptt)):
            data, targets = get_batch(train_data, i)
            model.zero_grad()
            hidden = repackage(hidden)
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
            for param in model.parameters():
                param.data.add_(param.grad, alpha=-lr)
            total += loss.item()
            batches += 1
            if batch % a.log_interval == 0 and batch > 0:
                cur = total / a.log_interval
                ms = (time.time() - start) * 1000 / a.log_interval
                ppl = math.exp(cur)
                print(f"| epoch {epoch:3d} | {batch:5d} batches | lr {lr:02.2f} | loss {cur:5.2f} | ppl {ppl:8.2f}")
                print(f"| ms/batch {ms:5.2f}")
                total, start = 0.0, time.time()

    save = a.save or os.path.join(tempfile.mkdtemp(prefix="word-lm-"), "model.pt")
    lr, best = a.lr, None
    for epoch in range(1, a.epochs + 1):
        epoch_start = time.time()
        train(epoch, lr)
        val_loss = evaluate(val_data)
        print(f"| end of epoch {epoch:3d} | valid loss {val_loss:5.2f} | valid ppl {math.exp(val_loss):8.2f}")
        print(f"| epoch time: {time.time() - epoch_start:5.2f}s")
        if best is None or val_loss < best:
            with open(save, "wb") as f:
                torch.save(model, f)
            best = val_loss
        else:
            lr /= 4.0
    with open(save, "rb") as f:
        model = torch.load(f, weights_only=False)
    model.rnn.flatten_parameters()
    test_loss = evaluate(test_data)
    print(f"| end of training | test loss {test_loss:5.2f} | test ppl {math.exp(test_loss):8.2f}")
    print(f"done epochs={a.epochs} batches={batches} eval_calls={eval_calls}")


if __name__ == "__main__":
    main()
