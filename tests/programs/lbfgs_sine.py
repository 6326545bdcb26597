"""Sine waves learnt by two LSTM cells unrolled over time inside the model's forward, optimised by LBFGS with a
closure, then a prediction of the future under ``torch.no_grad()``.

The pattern of the classic time-sequence-prediction example: ``nn.LSTMCell`` called once per time step in a Python
loop in ``forward`` (so one forward calls each cell ``--length`` times), ``optimizer.step(closure)`` where the closure
zeroes the gradients, runs the forward and the loss and backpropagates (LBFGS calls it several times per step), and
after each step a prediction that runs the cells ``--future`` more times.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn


class Sequence(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.hidden = hidden
        self.lstm1 = nn.LSTMCell(1, hidden)
        self.lstm2 = nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor, future: int = 0) -> torch.Tensor:
        outputs = []
        h1 = torch.zeros(x.size(0), self.hidden, dtype=x.dtype)
        c1 = torch.zeros(x.size(0), self.hidden, dtype=x.dtype)
        h2 = torch.zeros(x.size(0), self.hidden, dtype=x.dtype)
        c2 = torch.zeros(x.size(0), self.hidden, dtype=x.dtype)
        output = x[:, :1]
        for x_t in x.split(1, dim=1):
            h1, c1 = self.lstm1(x_t, (h1, c1))
            h2, c2 = self.lstm2(h1, (h2, c2))
            output = self.linear(h2)
            outputs.append(output)
        for _ in range(future):
            h1, c1 = self.lstm1(output, (h1, c1))
            h2, c2 = self.lstm2(h1, (h2, c2))
            output = self.linear(h2)
            outputs.append(output)
        return torch.cat(outputs, dim=1)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--length", type=int, default=40, help="time steps of each wave (the cells' loop length)")
    p.add_argument("--waves", type=int, default=20)
    p.add_argument("--hidden", type=int, default=24)
    p.add_argument("--future", type=int, default=20)
    p.add_argument("--max-iter", type=int, default=5, help="LBFGS's closure calls per step at most")
    a = p.parse_args()

    np.random.seed(2)
    period = 20
    x = np.arange(a.length + 1) + np.random.randint(-4 * period, 4 * period, a.waves).reshape(a.waves, 1)
    data = np.sin(x / 1.0 / period).astype("float64")
    np.random.seed(0)
    torch.manual_seed(0)
    train_in, train_out = torch.from_numpy(data[3:, :-1]), torch.from_numpy(data[3:, 1:])
    test_in, test_out = torch.from_numpy(data[:3, :-1]), torch.from_numpy(data[:3, 1:])
    seq = Sequence(a.hidden).double()
    criterion = nn.MSELoss()
    optimizer = torch.optim.LBFGS(seq.parameters(), lr=0.8, max_iter=a.max_iter)
    closures = 0
    for i in range(a.steps):
        print("STEP:", i)

        def closure() -> torch.Tensor:
            nonlocal closures
            closures += 1
            optimizer.zero_grad()
            loss = criterion(seq(train_in), train_out)
            print(f"loss: {loss.item():.6f}")
            loss.backward()
            return loss

        optimizer.step(closure)
        with torch.no_grad():
            pred = seq(test_in, future=a.future)
            loss = criterion(pred[:, : -a.future] if a.future else pred, test_out)
            print(f"test loss: {loss.item():.6f}")
    print(f"done steps={a.steps} closures={closures} predictions={a.steps}")


if __name__ == "__main__":
    main()
