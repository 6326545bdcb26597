"""A transformers ``Trainer`` fine-tuning a tiny causal language model built from a config (no download).

The pattern of the fine-tuning scripts built on transformers: a model made with ``AutoModelForCausalLM.from_config``
(random weights, a small GPT-2 shape), a map-style dataset of ``input_ids``/``labels`` dicts made here, and
``Trainer(model, TrainingArguments(...), train_dataset, eval_dataset).train()`` with an evaluation at the end of the
run, no reporting integrations and no checkpoints.
"""

from __future__ import annotations

import argparse
import tempfile

import torch
import transformers
from torch.utils.data import Dataset


class Sequences(Dataset):
    def __init__(self, n: int, length: int, vocab: int, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        start = torch.randint(0, vocab, (n, 1), generator=g)
        self.ids = (start + torch.arange(length) * torch.randint(1, 4, (n, 1), generator=g)) % vocab  # learnable

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=16)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--length", type=int, default=32)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--width", type=int, default=64)
    a = p.parse_args()

    transformers.set_seed(0)
    transformers.logging.set_verbosity_error()
    config = transformers.GPT2Config(
        vocab_size=128, n_positions=64, n_embd=a.width, n_layer=a.layers, n_head=4, bos_token_id=0, eos_token_id=0
    )
    model = transformers.AutoModelForCausalLM.from_config(config)
    with tempfile.TemporaryDirectory() as out:
        args = transformers.TrainingArguments(
            output_dir=out,
            max_steps=a.steps,
            per_device_train_batch_size=a.batch,
            per_device_eval_batch_size=a.batch,
            learning_rate=1e-3,
            logging_steps=max(1, a.steps // 4),
            eval_strategy="no",
            save_strategy="no",
            report_to=[],
            use_cpu=True,
            disable_tqdm=True,
            dataloader_num_workers=0,
            seed=0,
        )
        trainer = transformers.Trainer(
            model=model,
            args=args,
            train_dataset=Sequences(a.steps * a.batch, a.length, 128, 1),
            eval_dataset=Sequences(4 * a.batch, a.length, 128, 2),
        )
        result = trainer.train()
        metrics = trainer.evaluate()
    print(f"train loss {result.training_loss:.4f} eval loss {metrics['eval_loss']:.4f}")
    print(f"done steps={result.global_step}")


if __name__ == "__main__":
    main()
