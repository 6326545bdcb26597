"""A small DCGAN on torchvision's FakeData: two models, two optimizers, one BCELoss module.

The pattern of the classic DCGAN example: a generator of transposed convolutions and a discriminator of strided
convolutions, both initialised by ``model.apply(weights_init)``; each iteration updates the discriminator on a real
batch and on a detached fake batch, then updates the generator through the discriminator (the generator's backward
flows through the discriminator's layers), each with its own Adam.
"""

from __future__ import annotations

import argparse
import random

import torch
import torch.nn as nn
import torch.utils.data
import torchvision.datasets as dset
import torchvision.transforms as transforms


class Generator(nn.Module):
    def __init__(self, nz: int, ngf: int, nc: int) -> None:
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self, ndf: int, nc: int) -> None:
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.main(x).view(-1, 1).squeeze(1)


def weights_init(m: nn.Module) -> None:
    name = type(m).__name__
    if "Conv" in name:
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif "BatchNorm" in name:
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.zeros_(m.bias)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--image-size", type=int, default=16)
    p.add_argument("--nz", type=int, default=32)
    p.add_argument("--ngf", type=int, default=32)
    p.add_argument("--ndf", type=int, default=32)
    p.add_argument("--log-interval", type=int, default=5)
    a = p.parse_args()

    random.seed(999)
    torch.manual_seed(999)
    dataset = dset.FakeData(
        size=a.iters * a.batch_size, image_size=(3, a.image_size, a.image_size), transform=transforms.ToTensor()
    )
    loader = torch.utils.data.DataLoader(dataset, batch_size=a.batch_size, shuffle=True, num_workers=0)
    net_g = Generator(a.nz, a.ngf, 3)
    net_g.apply(weights_init)
    net_d = Discriminator(a.ndf, 3)
    net_d.apply(weights_init)
    criterion = nn.BCELoss()
    opt_d = torch.optim.Adam(net_d.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_g = torch.optim.Adam(net_g.parameters(), lr=2e-4, betas=(0.5, 0.999))

    iters = 0
    for i, (real, _) in enumerate(loader):
        # The discriminator: real batch, then a fake one the generator made (detached).
        net_d.zero_grad()
        label = torch.full((real.size(0),), 1.0)
        output = net_d(real)
        err_d_real = criterion(output, label)
        err_d_real.backward()
        d_x = output.mean().item()
        noise = torch.randn(real.size(0), a.nz, 1, 1)
        fake = net_g(noise)
        label.fill_(0.0)
        output = net_d(fake.detach())
        err_d_fake = criterion(output, label)
        err_d_fake.backward()
        opt_d.step()
        # The generator, through the discriminator.
        net_g.zero_grad()
        label.fill_(1.0)
        output = net_d(fake)
        err_g = criterion(output, label)
        err_g.backward()
        opt_g.step()
        iters += 1
        if i % a.log_interval == 0:
            err_d = (err_d_real + err_d_fake).item()
            print(f"[{i}/{len(loader)}] Loss_D: {err_d:.4f} Loss_G: {err_g.item():.4f} D(x): {d_x:.4f}")
    print(f"done steps={iters}")


if __name__ == "__main__":
    main()
