"""A what-if costs the memory of what it changes: its copy shares every other tensor and is freed when it ends.

Also: int8-dynamic on an nn.TransformerEncoder, whose fast path cannot take quantized weights.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest
import torch
from helpers import Mlp, conv_session
from torch import nn

from fxtui.core.what_if_text import memory_line
from fxtui.measure.pipeline import loaded_from_module, session_for_module
from fxtui.measure.session import Session
from fxtui.measure.whatif import changes
from fxtui.measure.whatif.changes import make_variant
from fxtui.measure.whatif.runner import run_what_ifs
from fxtui.report.findings_text import what_if_text

pytestmark = pytest.mark.unit


def tensors(module: nn.Module) -> dict[str, torch.Tensor]:
    return {**dict(module.named_parameters()), **dict(module.named_buffers())}


def test_channels_last_copies_the_4d_weights_only_and_shares_the_rest() -> None:
    session = conv_session(capture="fx")
    original = tensors(session.captured.root)
    variant = make_variant("channels-last", session)
    assert variant.captured is not None
    copied = tensors(variant.captured.root)
    assert copied.keys() == original.keys()
    for name, tensor in copied.items():
        if original[name].dim() == 4:
            assert tensor is not original[name] and tensor.is_contiguous(memory_format=torch.channels_last), name
        else:
            assert tensor is original[name], name  # bias, BatchNorm, Linear: the session's own
    assert original["conv.weight"].is_contiguous()  # the session's model is unchanged


def test_int8_replaces_the_linear_weights_and_shares_the_rest() -> None:
    session = conv_session(capture="fx")
    original = tensors(session.captured.root)
    variant = make_variant("int8-dynamic", session)
    assert variant.captured is not None
    copied = tensors(variant.captured.root)
    assert "fc.weight" not in copied  # a quantized Linear keeps packed weights, not a parameter
    for name in ("conv.weight", "conv.bias", "bn.weight", "bn.running_mean"):
        assert copied[name] is original[name], name
    assert isinstance(session.captured.root.fc, nn.Linear)  # the session's own Linear stays


def test_autocast_and_threads_make_no_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    session = conv_session(capture="fx")
    copies: list[nn.Module] = []
    real = changes._copy
    monkeypatch.setattr(changes, "_copy", lambda s: copies.append(real(s)) or copies[-1])
    for name in ("bf16", "threads=1"):
        variant = make_variant(name, session)
        assert variant.captured is not None and variant.captured.root is session.captured.root
    assert copies == []


@pytest.mark.parametrize("capture", ["fx", "dynamo"])
def test_the_copy_is_freed_when_the_what_if_ends_and_its_memory_is_reported(
    capture: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = conv_session(capture=capture)
    made: list[weakref.ref[Any]] = []
    real = changes._copy

    def recorded(s: Session) -> nn.Module:
        copy = real(s)
        made.append(weakref.ref(copy))
        return copy

    monkeypatch.setattr(changes, "_copy", recorded)
    (result,) = run_what_ifs(session, ["channels-last"], pairs=2)
    gc.collect()
    assert result.measured and len(made) == 1
    assert made[0]() is None
    assert result.peak_rss_bytes is not None and result.rss_before_bytes is not None
    assert result.peak_rss_bytes >= result.rss_before_bytes
    assert memory_line(result).startswith("peak RSS ") and "memory     peak RSS" in what_if_text(result)


def test_int8_on_a_transformer_encoder_runs_with_the_fast_path_off_and_says_so() -> None:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
    session = session_for_module(loaded_from_module(model, torch.randn(2, 8, 32)), analyse=False)
    (result,) = run_what_ifs(session, ["int8-dynamic"], pairs=2)
    assert result.error == "" and result.measured
    assert "fast path off" in result.title
    assert torch.backends.mha.get_fastpath_enabled()  # switched back after the what-if


def test_int8_on_an_fx_mlp_still_times_every_node() -> None:
    session = session_for_module(loaded_from_module(Mlp().eval(), torch.randn(4, 16)), analyse=False)
    (result,) = run_what_ifs(session, ["int8-dynamic"], pairs=2)
    assert result.measured and result.nodes and "fast path" not in result.title
