"""Example inputs made from shapes, dtype conversion, and the seed that makes them repeatable."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import torch

from fxtui.core.errors import FxtuiError

#: Seeds the random weights and inputs, so every session profiles the same numbers.
SEED = 0


def own_dtype(module: torch.nn.Module) -> torch.dtype:
    """The dtype of the module's first floating point parameter or buffer (float32 when it has none)."""
    for tensor in (*module.parameters(), *module.buffers()):
        if tensor.is_floating_point():
            return tensor.dtype
    return torch.float32


def convert(value: Any, dtype: torch.dtype) -> Any:
    """Move tensors to the CPU and floating point ones to ``dtype``, through lists, tuples and dicts."""
    if isinstance(value, torch.Tensor):
        value = value.cpu()
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, (list, tuple)):
        return type(value)(convert(v, dtype) for v in value)
    if isinstance(value, dict):
        return {k: convert(v, dtype) for k, v in value.items()}
    return value


def inputs_from_shapes(
    module: torch.nn.Module,
    shapes: list[tuple[int, ...]],
    dtype: torch.dtype,
    name: str,
    *,
    detection: bool,
    examples: Sequence[Any] = (),
) -> tuple[Any, ...]:
    """Random inputs of the given shapes: like the example input in the same position where
    there is one (token ids stay integers in their range), else floating point ``dtype``."""
    gen = torch.Generator().manual_seed(SEED)
    if detection:
        # Detection models take one list of 3×H×W images; N×3×H×W means N images.
        images: list[torch.Tensor] = []
        for shape in shapes:
            if len(shape) == 4:
                images.extend(torch.randn(shape, generator=gen).to(dtype).unbind(0))
            elif len(shape) == 3:
                images.append(torch.randn(shape, generator=gen).to(dtype))
            else:
                raise FxtuiError(f"{name} takes 3×H×W images; cannot use the shape {'×'.join(map(str, shape))}")
        return (images,)
    low, high = _positional_arity(module)
    if len(shapes) < low or (high is not None and len(shapes) > high):
        expected = str(low) if low == high else f"{low} to {high}" if high is not None else f"at least {low}"
        raise FxtuiError(
            f"{name} takes {expected} positional input{'s' if expected != '1' else ''}, "
            f"but {len(shapes)} --input-shape {'was' if len(shapes) == 1 else 'were'} given"
        )
    return tuple(
        _random_like(examples[i] if i < len(examples) else None, shape, dtype, gen) for i, shape in enumerate(shapes)
    )


def _random_like(example: Any, shape: tuple[int, ...], dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    """A random tensor of ``shape`` with the dtype and, for integers, the value range of ``example``.

    An embedding's indices must stay integers below its table size, a mask stays
    boolean; anything else (or no example) is ``randn`` in ``dtype``.
    """
    if not isinstance(example, torch.Tensor) or example.is_floating_point() or example.is_complex():
        return torch.randn(shape, generator=gen).to(dtype)
    if example.dtype is torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    low, high = (int(example.min()), int(example.max()) + 1) if example.numel() else (0, 2)
    return torch.randint(low, high, shape, generator=gen).to(example.dtype)


def _positional_arity(module: torch.nn.Module) -> tuple[int, int | None]:
    """How many positional inputs ``module.forward`` needs, and at most takes (None: no limit)."""
    try:
        params = inspect.signature(module.forward).parameters.values()
    except (TypeError, ValueError):
        return 0, None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = sum(1 for p in positional if p.default is p.empty)
    unlimited = any(p.kind is p.VAR_POSITIONAL for p in params)
    return required, None if unlimited else len(positional)
