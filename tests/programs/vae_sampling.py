"""A variational autoencoder trained with a loss made of functions, which decodes samples after each evaluation.

The pattern of pytorch/examples ``vae``: the model's ``encode``, ``reparameterize`` and ``decode`` methods, its
``forward`` returning the reconstruction with the mean and log-variance; a loss computed by functions outside every
module (binary cross-entropy summed, plus the KL divergence); Adam; ``loss.item()`` after the backward. Each epoch
ends with an evaluation under ``torch.no_grad()`` over the test batches, then ``model.decode(torch.randn(…))`` of a
batch of samples under ``no_grad``: the model's method, not its forward, calls two of its layers at the top. Images
are made locally (seeded), in [0, 1] as ``ToTensor`` gives them.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class VariationalAutoencoder(nn.Module):
    def __init__(self, pixels: int, hidden: int, latent: int) -> None:
        super().__init__()
        self.pixels = pixels
        self.enc = nn.Linear(pixels, hidden)
        self.to_mu = nn.Linear(hidden, latent)
        self.to_logvar = nn.Linear(hidden, latent)
        self.dec = nn.Linear(latent, hidden)
        self.to_pixels = nn.Linear(hidden, pixels)

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = F.relu(self.enc(x))
        return self.to_mu(h), self.to_logvar(h)

    def reparameterize(self, mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
        return mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.to_pixels(F.relu(self.dec(z))))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        mu, logvar = self.encode(x.view(-1, self.pixels))
        return self.decode(self.reparameterize(mu, logvar)), mu, logvar


def elbo_loss(recon: torch.Tensor, x: torch.Tensor, mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    """Reconstruction (summed binary cross-entropy) plus the KL divergence from the unit Gaussian."""
    bce = F.binary_cross_entropy(recon, x.view(recon.shape), reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


def images(n: int, side: int, seed: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    return TensorDataset(torch.rand(n, 1, side, side, generator=g), torch.zeros(n, dtype=torch.long))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batches", type=int, default=12)
    p.add_argument("--test-batches", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--side", type=int, default=28)
    p.add_argument("--hidden", type=int, default=400)
    p.add_argument("--latent", type=int, default=20)
    p.add_argument("--samples", type=int, default=64)
    a = p.parse_args()

    torch.manual_seed(1)
    train = DataLoader(images(a.batches * a.batch_size, a.side, 1), batch_size=a.batch_size, shuffle=True)
    test = DataLoader(images(a.test_batches * a.batch_size, a.side, 2), batch_size=a.batch_size)
    model = VariationalAutoencoder(a.side * a.side, a.hidden, a.latent)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    steps = evals = decodes = 0
    for epoch in range(1, a.epochs + 1):
        model.train()
        total = 0.0
        for x, _ in train:
            optimizer.zero_grad()
            recon, mu, logvar = model(x)
            loss = elbo_loss(recon, x, mu, logvar)
            loss.backward()
            total += loss.item()
            optimizer.step()
            steps += 1
        print(f"epoch {epoch} train loss {total / len(train.dataset):.4f}")
        model.eval()
        test_loss = 0.0
        with torch.no_grad():
            for x, _ in test:
                recon, mu, logvar = model(x)
                test_loss += elbo_loss(recon, x, mu, logvar).item()
                evals += 1
        print(f"epoch {epoch} test loss {test_loss / len(test.dataset):.4f}")
        with torch.no_grad():
            sample = model.decode(torch.randn(a.samples, a.latent))
            decodes += 1
        print(f"epoch {epoch} sample mean {sample.mean().item():.4f}")
    print(f"done steps={steps} evals={evals} decodes={decodes}")


if __name__ == "__main__":
    main()
