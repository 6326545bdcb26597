"""The default input of a transformers model, made from its configuration and what its ``forward`` takes.

The model's ``main_input_name`` says what it reads first (``input_ids``, ``pixel_values``,
``input_features``, ``input_values``); each has a maker that sizes it from the configuration
(a vision-text model's ``text_config`` and ``vision_config`` included). Beside it: both token ids
and an image for a vision-text model (CLIP, SigLIP, BLIP …), decoder token ids for an
encoder-decoder (T5, BART, Whisper, Speech2Text), an attention mask beside token ids. Where no
maker fits, one sentence names the input the model wants.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch

from fxtui.core.errors import FxtuiError
from fxtui.measure.inputs import Inputs
from fxtui.measure.targets.default_inputs import SEED

#: Token ids per sequence of the default text input (fewer when the model has fewer positions).
TEXT_LENGTH = 128
#: Feature frames of a speech model that takes any length (Speech2Text: 100 frames a second).
AUDIO_FRAMES = 1000
#: Samples of a raw waveform when the configuration gives no sampling rate: a second at 16 kHz.
WAVEFORM_SAMPLES = 16_000

Maker = Callable[[Any, torch.Generator, "tuple[int, ...] | None"], torch.Tensor]


def _part(config: Any, name: str) -> Any:
    """A composite configuration's ``text_config`` / ``vision_config`` / ``audio_config``, or the config itself."""
    return getattr(config, name, None) or config


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _token_ids(config: Any, gen: torch.Generator, shape: tuple[int, ...] | None, *, decoder: bool = False) -> Any:
    text = _part(config, "text_config")
    vocab = _positive(getattr(text, "vocab_size", None))
    if vocab is None:
        return None
    keys: tuple[str, ...] = ("max_target_positions",) if decoder else ()
    keys += ("max_position_embeddings", "n_positions", "max_text_positions")
    limit = next((v for k in keys if (v := _positive(getattr(text, k, None))) is not None), TEXT_LENGTH)
    return torch.randint(0, vocab, shape or (1, min(TEXT_LENGTH, limit)), generator=gen)


def _image(config: Any, gen: torch.Generator, shape: tuple[int, ...] | None) -> Any:
    vision = _part(config, "vision_config")
    size = getattr(vision, "image_size", None)
    side = _positive(size[0] if isinstance(size, (list, tuple)) and size else size)
    if side is None:
        return None
    channels = _positive(getattr(vision, "num_channels", None)) or 3
    return torch.randn(shape or (1, channels, side, side), generator=gen)


def _features(config: Any, gen: torch.Generator, shape: tuple[int, ...] | None) -> Any:
    """Log-mel features: Whisper's ``batch × mel bins × frames`` (exactly two frames per encoder position),
    Speech2Text's ``batch × frames × features``."""
    audio = _part(config, "audio_config")
    mel, positions = (
        _positive(getattr(audio, "num_mel_bins", None)),
        _positive(getattr(audio, "max_source_positions", None)),
    )
    if mel is not None and positions is not None:
        return torch.randn(shape or (1, mel, 2 * positions), generator=gen)
    per_channel = _positive(getattr(audio, "input_feat_per_channel", None))
    if per_channel is not None:
        width = per_channel * (_positive(getattr(audio, "input_channels", None)) or 1)
        frames = min(AUDIO_FRAMES, 4 * (positions or AUDIO_FRAMES))
        return torch.randn(shape or (1, frames, width), generator=gen)
    return None


def _values(config: Any, gen: torch.Generator, shape: tuple[int, ...] | None) -> Any:
    """A raw waveform (wav2vec2, HuBERT, WavLM, Encodec), or a spectrogram (the Audio Spectrogram Transformer)."""
    audio = _part(config, "audio_config")
    frames, mel = _positive(getattr(audio, "max_length", None)), _positive(getattr(audio, "num_mel_bins", None))
    if frames is not None and mel is not None:
        return torch.randn(shape or (1, frames, mel), generator=gen)
    samples = _positive(getattr(audio, "sampling_rate", None)) or WAVEFORM_SAMPLES
    channels = _positive(getattr(audio, "audio_channels", None))
    return torch.randn(shape or ((1, channels, samples) if channels else (1, samples)), generator=gen)


MAKERS: dict[str, Maker] = {
    "input_ids": _token_ids,
    "pixel_values": _image,
    "input_features": _features,
    "input_values": _values,
}

#: What each input is, for the sentence that says one cannot be made.
_WHAT = {
    "input_ids": "token ids",
    "pixel_values": "images",
    "input_features": "audio features",
    "input_values": "a waveform",
}


def default_inputs(module: torch.nn.Module, config: Any, name: str, shape: tuple[int, ...] | None) -> Inputs:
    """The inputs fxtui gives ``module`` (built from ``config``) by default; ``shape`` sizes its main input."""
    try:
        parameters = inspect.signature(module.forward).parameters
    except (TypeError, ValueError):
        parameters = {}  # type: ignore[assignment]
    main = getattr(module, "main_input_name", None) or "input_ids"
    gen = torch.Generator().manual_seed(SEED)
    kwargs: dict[str, Any] = {}
    made = MAKERS[main](config, gen, shape) if main in MAKERS else None
    if made is None:
        raise FxtuiError(_cannot(name, main, parameters))
    kwargs[main] = made
    # A vision-text model reads both: token ids and an image.
    if getattr(config, "text_config", None) is not None and getattr(config, "vision_config", None) is not None:
        for other in ("input_ids", "pixel_values"):
            if other not in kwargs and other in parameters and (value := MAKERS[other](config, gen, None)) is not None:
                kwargs[other] = value
    if "input_ids" in kwargs and "attention_mask" in parameters:
        kwargs["attention_mask"] = torch.ones_like(kwargs["input_ids"])
    if getattr(config, "is_encoder_decoder", False) and "decoder_input_ids" in parameters:
        # A text seq2seq model decodes the ids it reads; a speech one gets ids as long as its decoder allows.
        decoder = kwargs["input_ids"].clone() if main == "input_ids" else _token_ids(config, gen, None, decoder=True)
        if decoder is not None:
            kwargs["decoder_input_ids"] = decoder
    return Inputs((), kwargs)


def _cannot(name: str, main: str, parameters: Any) -> str:
    required = [
        p
        for p, v in parameters.items()
        if v.default is inspect.Parameter.empty and v.kind not in (v.VAR_POSITIONAL, v.VAR_KEYWORD) and p != main
    ]
    wants = f"{main} ({_WHAT[main]})" if main in _WHAT else main
    more = f", with {', '.join(required)}" if required else ""
    return (
        f"fxtui has no default input for {name}: it wants {wants}{more}, which fxtui cannot make from its "
        "configuration; build it in a file and name the factory (path/file.py:make returning (model, args, kwargs))"
    )


#: Inputs a transformers model may need beside its main one, named when a default input does not run it.
_OTHER_INPUTS = (
    "input_ids",
    "pixel_values",
    "input_features",
    "input_values",
    "decoder_input_ids",
    "decoder_input_values",
)


def input_hint(module: torch.nn.Module, name: str, inputs: Inputs) -> str:
    """What to add when the default ``inputs`` do not run ``module``: the inputs given, the ones it also takes."""
    try:
        parameters = inspect.signature(module.forward).parameters
    except (TypeError, ValueError):
        return ""
    given = list(inputs.kwargs)
    missing = [p for p in _OTHER_INPUTS if p in parameters and p not in given]
    also = f"; its forward also takes {', '.join(missing)}" if missing else ""
    return (
        f"fxtui gave {name} {', '.join(given) or 'no input'} by default{also}: give the inputs it needs in a file "
        "(path/file.py:make returning (model, args, kwargs))"
    )
