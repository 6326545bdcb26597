"""Every common kind of transformers model gets a default input from its configuration; otherwise one sentence.

The makers are checked on small stand-ins (a module with the forward a kind of model has, a
configuration with the fields it has); speech seq2seq (Whisper) and a vision-text model run for real.
"""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from fxtui.commands.cli import main
from fxtui.core.errors import FxtuiError
from fxtui.measure.targets.hf_inputs import default_inputs, input_hint

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def stand_in(main_input: str, forward: str) -> nn.Module:
    """A module whose forward takes the parameters ``forward`` lists (all keyword, default None)."""
    namespace: dict[str, Any] = {}
    exec(f"def forward(self, {forward}): return None", namespace)  # a signature to inspect
    cls = type("StandIn", (nn.Module,), {"forward": namespace["forward"], "main_input_name": main_input})
    return cls()


def config(**fields: Any) -> types.SimpleNamespace:
    return types.SimpleNamespace(**fields)


def shapes(module: nn.Module, cfg: Any, shape: tuple[int, ...] | None = None) -> dict[str, tuple[int, ...]]:
    return {k: tuple(v.shape) for k, v in default_inputs(module, cfg, "hf:x", shape).kwargs.items()}


def test_speech_seq2seq_gets_features_sized_from_the_config_and_decoder_ids() -> None:
    whisper = stand_in("input_features", "input_features=None, attention_mask=None, decoder_input_ids=None")
    cfg = config(num_mel_bins=80, max_source_positions=1500, vocab_size=51865, max_target_positions=448)
    cfg.is_encoder_decoder = True
    assert shapes(whisper, cfg) == {"input_features": (1, 80, 3000), "decoder_input_ids": (1, 128)}
    speech2text = stand_in("input_features", "input_features=None, decoder_input_ids=None")
    cfg = config(input_feat_per_channel=80, input_channels=1, max_source_positions=6000, vocab_size=10000)
    cfg.is_encoder_decoder = True
    assert shapes(speech2text, cfg) == {"input_features": (1, 1000, 80), "decoder_input_ids": (1, 128)}


def test_audio_encoders_get_a_waveform_or_a_spectrogram() -> None:
    wav2vec2 = stand_in("input_values", "input_values=None, attention_mask=None")
    assert shapes(wav2vec2, config(vocab_size=32)) == {"input_values": (1, 16000)}
    ast = stand_in("input_values", "input_values=None")
    assert shapes(ast, config(max_length=1024, num_mel_bins=128)) == {"input_values": (1, 1024, 128)}


def test_vision_text_models_get_token_ids_and_an_image_from_their_two_configs() -> None:
    clip = stand_in("input_ids", "input_ids=None, pixel_values=None, attention_mask=None")
    cfg = config(
        text_config=config(vocab_size=49408, max_position_embeddings=77),
        vision_config=config(image_size=224, num_channels=3),
    )
    assert shapes(clip, cfg) == {"input_ids": (1, 77), "pixel_values": (1, 3, 224, 224), "attention_mask": (1, 77)}


def test_text_seq2seq_decodes_its_own_ids_and_a_shape_sizes_the_main_input() -> None:
    t5 = stand_in("input_ids", "input_ids=None, attention_mask=None, decoder_input_ids=None")
    cfg = config(vocab_size=32128, n_positions=512, is_encoder_decoder=True)
    inputs = default_inputs(t5, cfg, "hf:t5", (2, 16)).kwargs
    assert tuple(inputs["input_ids"].shape) == (2, 16) and torch.equal(inputs["decoder_input_ids"], inputs["input_ids"])


def test_a_model_whose_input_cannot_be_made_is_one_sentence_naming_it() -> None:
    series = stand_in("past_values", "past_values, past_time_features, past_observed_mask, static_features=None")
    with pytest.raises(FxtuiError) as raised:
        default_inputs(series, config(), "hf:time_series_transformer", None)
    message = str(raised.value)
    assert message.startswith("fxtui has no default input for hf:time_series_transformer: it wants past_values")
    assert "past_time_features, past_observed_mask" in message and "\n" not in message
    no_image_size = stand_in("pixel_values", "pixel_values=None")
    with pytest.raises(FxtuiError, match=r"it wants pixel_values \(images\)"):
        default_inputs(no_image_size, config(), "hf:y", None)


def test_the_hint_names_what_was_given_and_what_else_the_model_takes() -> None:
    clap = stand_in("input_ids", "input_ids=None, input_features=None, attention_mask=None")
    inputs = default_inputs(clap, config(vocab_size=100), "hf:clap", None)
    assert input_hint(clap, "hf:clap", inputs).startswith(
        "fxtui gave hf:clap input_ids, attention_mask by default; its forward also takes input_features"
    )


# -- real models ------------------------------------------------------------------------------

WHISPER = (
    "encoder_layers=1,decoder_layers=1,d_model=32,encoder_attention_heads=2,decoder_attention_heads=2,"
    "encoder_ffn_dim=32,decoder_ffn_dim=32,max_source_positions=32"
)


def test_whisper_profiles_with_its_default_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("transformers")
    saved = tmp_path / "whisper.json"
    code = main(["hf:whisper", "--hf-config", WHISPER, "--once", "--runs", "2", "--warmup", "0", "--json", str(saved)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "inputs input_features: 1×80×64, decoder_input_ids: 1×" in out.splitlines()[0]
    assert json.loads(saved.read_text())["rows"]


def test_a_default_input_that_does_not_run_the_model_says_what_else_it_takes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("transformers")
    code = main(["hf:speecht5", "--hf-config", "encoder_layers=1,decoder_layers=1", "--once", "--runs", "1"])
    _, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err
    assert "fxtui gave hf:speecht5 input_values by default; its forward also takes decoder_input_values" in err
