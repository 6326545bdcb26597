"""What ``--generate`` asks of a model: that it can generate from its inputs, its pad token, and what its cache holds.

Torch and the model, nothing timed: the checks run once, before any call (each failure one
sentence the user can act on); the byte counts after a call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from fxtui.core.errors import FxtuiError
from fxtui.measure.inputs import Inputs


def check_can_generate(
    module: torch.nn.Module, inputs: Inputs, name: str, new_tokens: int, probe: bool = True
) -> tuple[int, int]:
    """The prompt's (batch, length) when ``module`` can generate ``new_tokens`` from ``inputs``; else one sentence.

    A model can when it has transformers' ``generate()``, is no encoder-decoder, and is causal: the
    logits at a position do not change when a later token does (an encoder's do: ``hf:bert``).
    ``probe=False`` skips that test (a what-if's changed copy of a model that passed it: int8 activations
    quantized over the whole prompt move every position a little).
    """
    examples = "such as hf:gpt2 or hf:llama"
    can = getattr(module, "can_generate", None)
    if not callable(getattr(module, "generate", None)) or not callable(can) or not can():
        raise FxtuiError(
            f"{name} cannot generate: --generate needs a causal language model with a language-model head and "
            f"transformers' generate() ({examples}, or a *ForCausalLM model from a file)"
        )
    config = getattr(module, "config", None)
    if getattr(config, "is_encoder_decoder", False):
        raise FxtuiError(
            f"{name} is an encoder-decoder model; --generate profiles decoder-only causal language models ({examples})"
        )
    ids = inputs.kwargs.get("input_ids")
    if ids is None and inputs.args and isinstance(inputs.args[0], torch.Tensor):
        ids = inputs.args[0]
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.is_floating_point():
        raise FxtuiError(f"--generate needs token ids (a batch × length integer tensor) as {name}'s input")
    batch, length = ids.shape
    limit = _max_positions(config)
    if limit is not None and length > limit:
        raise FxtuiError(
            f"the prompt has {length} tokens, more than {name} has positions for ({limit}, its max_position_embeddings)"
        )
    if limit is not None and length + new_tokens > limit:
        raise FxtuiError(
            f"a {length}-token prompt and {new_tokens} new tokens need {length + new_tokens} positions, more than "
            f"{name} has ({limit}, its max_position_embeddings); shorten the prompt (--input-shape "
            f"{batch},{max(limit - new_tokens, 1)}) or generate fewer tokens"
        )
    if probe and not _causal(module, ids):
        raise FxtuiError(
            f"{name} cannot generate: it is an encoder (each position sees the tokens after it), and --generate "
            f"needs a decoder-only causal language model ({examples})"
        )
    return int(batch), int(length)


def _max_positions(config: Any) -> int | None:
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _causal(module: torch.nn.Module, ids: torch.Tensor) -> bool:
    """The logits of the first positions stay when the last token changes (a short probe, two forwards)."""
    probe = ids[:1, : min(ids.shape[1], 6)]
    if probe.shape[1] < 2:
        return True
    vocab = getattr(getattr(module, "config", None), "vocab_size", None) or int(probe.max()) + 2
    changed = probe.clone()
    changed[0, -1] = (changed[0, -1] + 1) % vocab
    try:
        with torch.inference_mode(), quiet_transformers():
            a = module(input_ids=probe, use_cache=False).logits[0, :-1].float()
            b = module(input_ids=changed, use_cache=False).logits[0, :-1].float()
    except Exception:  # a model that cannot be probed so: generate() will say what it needs
        return True
    scale = float(a.abs().max()) or 1.0
    return float((a - b).abs().max()) <= 1e-4 * scale


def pad_token(module: torch.nn.Module) -> int | None:
    config = getattr(module, "generation_config", None)
    for key in ("pad_token_id", "eos_token_id"):
        value = getattr(config, key, None)
        if isinstance(value, (list, tuple)):
            value = value[0] if value else None
        if isinstance(value, int):
            return value
    return None


def has_eos(module: torch.nn.Module) -> bool:
    return getattr(getattr(module, "generation_config", None), "eos_token_id", None) is not None


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """transformers' warnings (a pad token set, a flag ignored) would be printed once per call."""
    try:
        from transformers.utils import logging
    except ImportError:
        yield
        return
    before = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        yield
    finally:
        logging.set_verbosity(before)
