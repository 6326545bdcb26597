"""torchvision model names as TARGETs: built with random weights, given an input that suits their kind.

Nothing here downloads anything: builders get ``weights=None`` and, where they take one,
``weights_backbone=None``.
"""

from __future__ import annotations

import difflib
import inspect
import warnings
from typing import Any

import torch

from fxtui.core.errors import FxtuiError
from fxtui.measure.targets.default_inputs import SEED

#: Segmentation models are fully convolutional and accept any size. Their weights
#: metadata says 520, but at 520 a dilated ResNet-101 takes seconds per run on a CPU,
#: and the profiler reruns the model continuously: 224 exercises the same operators
#: about five times faster. ``--input-shape 1,3,520,520`` restores the reference size.
SEGMENTATION_SIDE = 224
#: Detection models resize their images internally (GeneralizedRCNNTransform), so the
#: input size mostly affects the preprocessing; 320 is the size of the cheapest models.
DETECTION_SIDE = 320
#: Video classifiers take clips of this many frames (MViT requires exactly 16).
VIDEO_FRAMES = 16


def load_torchvision(name: str) -> tuple[torch.nn.Module, tuple[Any, ...], str]:
    import torchvision.models as tvm

    names = tvm.list_models()
    if name not in names:
        hint = ""
        if name.endswith(".py") or "/" in name:
            hint = f"; to load from a file write {name}:ClassOrFactory"
        elif "." in name:
            hint = f"; to load from a Python module write {name}:ClassOrFactory"
        else:
            close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
            if close:
                listed = ", ".join(close[:-1]) + " or " + close[-1] if len(close) > 1 else close[0]
                hint = f"; did you mean {listed}?"
        raise FxtuiError(f"unknown model {name!r}{hint}")
    builder = tvm.get_model_builder(name)
    kwargs: dict[str, Any] = {"weights": None}
    # Detection and segmentation builders fetch ImageNet backbone weights unless told not to.
    if "weights_backbone" in inspect.signature(builder).parameters:
        kwargs["weights_backbone"] = None
    with warnings.catch_warnings():
        # torchvision warns about its own defaults (e.g. init_weights for GoogLeNet);
        # nothing the user can act on.
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", FutureWarning)
        module = tvm.get_model(name, **kwargs)
    kind = _torchvision_kind(builder.__module__)
    return module, _torchvision_inputs(name, module, kind), kind


def _torchvision_kind(builder_module: str) -> str:
    for kind in ("detection", "segmentation", "video", "optical_flow"):
        if builder_module.startswith(f"torchvision.models.{kind}"):
            return kind
    return "classification"


def _torchvision_inputs(name: str, module: torch.nn.Module, kind: str) -> tuple[Any, ...]:
    gen = torch.Generator().manual_seed(SEED)
    if kind == "detection":
        return ([torch.randn(3, DETECTION_SIDE, DETECTION_SIDE, generator=gen)],)
    if kind == "segmentation":
        return (torch.randn(1, 3, SEGMENTATION_SIDE, SEGMENTATION_SIDE, generator=gen),)
    if kind == "optical_flow":
        # RAFT needs sides that are multiples of 8; its weights metadata gives the smallest size it supports.
        h, w = (-(-s // 8) * 8 for s in _weights_meta(name).get("min_size", (128, 128)))
        return (torch.randn(1, 3, h, w, generator=gen), torch.randn(1, 3, h, w, generator=gen))
    h, w = _image_size(name, module)
    if kind == "video":
        return (torch.randn(1, 3, VIDEO_FRAMES, h, w, generator=gen),)
    return (torch.randn(1, 3, h, w, generator=gen),)


def _first_weights(name: str) -> Any:
    import torchvision.models as tvm

    try:
        return next(iter(tvm.get_model_weights(name)))
    except (ValueError, StopIteration):
        return None


def _weights_meta(name: str) -> dict[str, Any]:
    weights = _first_weights(name)
    return dict(weights.meta) if weights is not None else {}


def _image_size(name: str, module: torch.nn.Module) -> tuple[int, int]:
    # A vision transformer built without weights has a fixed size of its own, which can
    # differ from its first weights' (vit_h_14's weights are for 518, the random model 224).
    size = getattr(module, "image_size", None)
    if isinstance(size, int):
        return size, size
    weights = _first_weights(name)
    if weights is not None:
        crop = getattr(weights.transforms(), "crop_size", None)
        if crop:
            return (crop[0], crop[-1])
        min_size = weights.meta.get("min_size")
        if min_size:
            return (max(min_size[0], 224), max(min_size[1], 224))
    return 224, 224
