"""A Lightning ``Trainer.fit`` with automatic optimization and a validation loop.

The pattern of Lightning's own examples and docs: a ``LightningModule`` holding an ``nn.Sequential`` as ``self.net``,
whose ``training_step`` calls ``self.net`` and computes the loss outside any module (``F.cross_entropy``) and logs
it; a ``validation_step``; an AdamW from ``configure_optimizers``. ``Trainer.fit`` runs ``training_step`` inside
``optimizer.step(closure)`` and the validation loop under ``torch.no_grad()`` after ``model.eval()``. Logger,
checkpoints and progress bar are off so the output is the program's own.
"""

from __future__ import annotations

import argparse
import warnings

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class LitClassifier(L.LightningModule):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(64, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10)
        )

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.cross_entropy(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


class PrintLosses(L.Callback):
    validation_batches = 0

    def on_validation_batch_end(self, trainer, module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        self.validation_batches += 1

    def on_validation_epoch_end(self, trainer, module) -> None:
        print(f"epoch {trainer.current_epoch}: val_loss {float(trainer.callback_metrics['val_loss']):.4f}")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batches", type=int, default=12)
    p.add_argument("--val-batches", type=int, default=4)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--width", type=int, default=256)
    a = p.parse_args()

    warnings.filterwarnings("ignore", ".*does not have many workers.*")
    L.seed_everything(0, verbose=False)
    n = a.batches * a.batch
    train = TensorDataset(torch.randn(n, 64), torch.randint(0, 10, (n,)))
    val = TensorDataset(torch.randn(a.val_batches * a.batch, 64), torch.randint(0, 10, (a.val_batches * a.batch,)))
    model = LitClassifier(a.width)
    trainer = L.Trainer(
        accelerator="cpu",
        devices=1,
        max_epochs=a.epochs,
        num_sanity_val_steps=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[printer := PrintLosses()],
    )
    trainer.fit(model, DataLoader(train, batch_size=a.batch, shuffle=True), DataLoader(val, batch_size=a.batch))
    print(f"done steps={trainer.global_step} val_batches={printer.validation_batches}")


if __name__ == "__main__":
    main()
