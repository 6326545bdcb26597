"""``hf:MODEL_TYPE`` TARGETs: a Hugging Face transformers model built from its library's default configuration.

The weights are random and nothing is downloaded: the configuration comes from
``AutoConfig.for_model`` and the model from ``AutoModel.from_config``. ``--hf-config
key=value,…`` changes configuration values first (``num_hidden_layers=2``). Before the
model is built, its size is counted on the meta device, so a configuration that would not
fit in this machine's memory is refused instead of swapping the machine to a halt.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
from collections.abc import Sequence
from typing import Any

import torch

from fxtui.core.errors import FxtuiError, exception_text
from fxtui.measure.inputs import Inputs
from fxtui.measure.memory_limit import headroom
from fxtui.measure.targets.default_inputs import SEED
from fxtui.measure.targets.hf_inputs import default_inputs

PREFIX = "hf:"
#: Refuse a model whose parameters take more than this share of the memory available now:
#: the rest is needed for activations, the statistics and the app.
MEMORY_SHARE = 0.6
#: Configuration keys that shrink a model, named when one is refused (those the config has).
_SHRINKING_KEYS = (
    "num_hidden_layers",
    "hidden_size",
    "intermediate_size",
    "num_attention_heads",
    "vocab_size",
    "n_layer",
    "n_embd",
    "num_layers",
    "d_model",
)


def load_hf(
    model_type: str,
    overrides: Sequence[tuple[str, str]] = (),
    shape: tuple[int, ...] | None = None,
    *,
    causal_lm: bool = False,
) -> tuple[torch.nn.Module, Inputs]:
    """Build ``hf:model_type`` with random weights; returns ``(module, inputs)``.

    ``causal_lm`` builds the model with its language-model head (``AutoModelForCausalLM``, for ``--generate``).
    """
    try:
        import transformers
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    except ImportError:
        raise FxtuiError(f'{PREFIX}{model_type} needs the transformers package: pip install "fxtui[hf]"') from None
    known = sorted(CONFIG_MAPPING.keys())
    if model_type not in known:
        close = difflib.get_close_matches(model_type, known, n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(PREFIX + c for c in close)}?" if close else ""
        raise FxtuiError(f"unknown transformers model type {model_type!r}{hint}")
    config = transformers.AutoConfig.for_model(model_type)
    for key, text in overrides:
        _override(config, model_type, key, text)
    name = f"{PREFIX}{model_type}"
    auto: Any = transformers.AutoModel
    if causal_lm:
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

        if model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
            raise FxtuiError(
                f"{name} cannot generate: transformers has no causal language-model head for it, and --generate "
                "needs a decoder-only causal language model such as hf:gpt2 or hf:llama"
            )
        auto = transformers.AutoModelForCausalLM
    skeleton = _build(auto, config, name, device="meta")
    _check_fits(sum(p.numel() for p in skeleton.parameters()), config, name)
    torch.manual_seed(SEED)
    module = _materialize(skeleton)
    if module is None:
        torch.manual_seed(SEED)
        module = _build(auto, config, name)
    return module.eval(), default_inputs(module, config, name, shape)


def _build(auto: Any, config: Any, name: str, device: str | None = None) -> torch.nn.Module:
    """``auto.from_config(config)`` (``AutoModel``'s), on ``device`` when given (``meta``: no memory, no time).

    transformers' warnings are held back: an encoder built with a language-model head for ``--generate``
    warns that it is no decoder, which fxtui says in its own sentence.
    """
    from transformers.utils import logging

    before = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        with torch.device(device) if device else contextlib.nullcontext():
            return auto.from_config(config)
    except Exception as e:
        raise FxtuiError(f"building {name} failed with {exception_text(e)}") from e
    finally:
        logging.set_verbosity(before)


def _materialize(skeleton: torch.nn.Module) -> torch.nn.Module | None:
    """Give the meta-device ``skeleton`` real, randomly initialized weights; None if that fails.

    ``from_config`` on the CPU initializes every weight twice: torch's default init in each
    layer's constructor, then the model's own ``_init_weights``. This does the second only,
    the way transformers itself completes a model built on the meta device: BERT-base took
    2.0 s through ``from_config``, of which 1.2 s was the first, discarded init. Memory is
    zeroed first so that anything ``_init_weights`` leaves alone is zero rather than garbage.
    """
    init_weights = getattr(skeleton, "init_weights", None)
    if init_weights is None:
        return None
    try:
        module = skeleton.to_empty(device="cpu")
        with torch.no_grad():
            for tensor in (*module.parameters(), *module.buffers()):
                tensor.zero_()
        init_weights()
    except Exception:  # an unusual model: build it the ordinary way
        return None
    return module


def _override(config: Any, model_type: str, key: str, text: str) -> None:
    if not hasattr(config, key):
        keys = [k for k in config.to_dict() if not k.startswith("_")]
        close = difflib.get_close_matches(key, keys, n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise FxtuiError(f"--hf-config: the {model_type} configuration has no key {key!r}{hint}")
    current = getattr(config, key)
    setattr(config, key, _value(key, text, current))


def _value(key: str, text: str, current: Any) -> Any:
    """``text`` as the type the configuration value has now."""
    if isinstance(current, bool):
        if text.lower() in ("true", "1", "yes"):
            return True
        if text.lower() in ("false", "0", "no"):
            return False
        raise FxtuiError(f"--hf-config {key} takes true or false, not {text!r}")
    if isinstance(current, int):
        try:
            return int(text)
        except ValueError:
            raise FxtuiError(f"--hf-config {key} takes a whole number, not {text!r}") from None
    if isinstance(current, float):
        try:
            return float(text)
        except ValueError:
            raise FxtuiError(f"--hf-config {key} takes a number, not {text!r}") from None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _check_fits(params: int, config: Any, name: str) -> None:
    available = _available_bytes()
    needed = params * 4  # random weights are float32
    if available is None or needed <= MEMORY_SHARE * available:
        return
    keys = [k for k in _SHRINKING_KEYS if isinstance(getattr(config, k, None), int)]
    example = ",".join(f"{k}={max(1, getattr(config, k) // 8)}" for k in keys[:2])
    raise FxtuiError(
        f"{name} with these settings has {params / 1e9:.1f} billion parameters ({needed / 2**30:.1f} GiB in float32), "
        f"more than this machine can hold beside its activations ({available / 2**30:.1f} GiB available); "
        f"shrink it with --hf-config, e.g. {example} (keys: {', '.join(keys)})"
    )


def _available_bytes() -> int | None:
    # The memory cgroup's limit counts as much as the machine's memory: past it the process is killed.
    room = headroom()
    return room.bytes if room is not None else None
