"""Exactly three ``generate()`` calls on a tiny randomly initialised causal language model.

The pattern of a script that samples from a model: the model built from a config (no download), put in ``eval()``,
and ``model.generate`` called on three prompts of different lengths with greedy decoding, each printing its tokens.
At the default sizes each call takes more than a second of a core: three long steps.
"""

from __future__ import annotations

import argparse

import torch
import transformers


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--new-tokens", type=int, default=48)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=256)
    a = p.parse_args()

    torch.manual_seed(0)
    transformers.logging.set_verbosity_error()
    config = transformers.LlamaConfig(
        vocab_size=256,
        hidden_size=a.width,
        intermediate_size=2 * a.width,
        num_hidden_layers=a.layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    for i, length in enumerate((5, 9, 13)):
        prompt = torch.randint(3, 256, (1, length))
        out = model.generate(
            prompt,
            attention_mask=torch.ones_like(prompt),
            max_new_tokens=a.new_tokens,
            min_new_tokens=a.new_tokens,
            do_sample=False,
        )
        print(f"call {i}: prompt {length} tokens -> {out[0, length:].tolist()}")
    print("done generate_calls=3")


if __name__ == "__main__":
    main()
