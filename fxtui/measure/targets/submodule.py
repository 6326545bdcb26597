"""``--submodule PATH``: one part of a model, on exactly the inputs it receives inside the whole model."""

from __future__ import annotations

from typing import Any

import torch

from fxtui.core.errors import FxtuiError, exception_text
from fxtui.measure.inputs import Inputs


class _Captured(Exception):
    """Raised by the capture hook to stop the full model once the submodule's inputs are known."""


def select_submodule(
    module: torch.nn.Module, inputs: Inputs | None, path: str, name: str, *, capture: bool
) -> tuple[torch.nn.Module, Inputs | None]:
    """The submodule at ``path`` and, when ``capture``, the inputs it is first called with in one eager run."""
    try:
        sub = module.get_submodule(path)
    except AttributeError:
        raise FxtuiError(f"{name} has no submodule {path!r}; {_child_hint(module, path)}") from None
    if not capture:
        return sub, None
    if inputs is None:
        raise FxtuiError(
            f"{name} comes without example inputs to capture {path}'s from; give its shapes with --input-shape"
        )
    return sub, _capture_inputs(module, sub, inputs, path, name)


def _child_hint(module: torch.nn.Module, path: str) -> str:
    """Name a few valid paths: the children of the deepest part of ``path`` that exists."""
    parent_path = path
    while True:
        parent_path = parent_path.rpartition(".")[0]
        try:
            parent = module.get_submodule(parent_path)
            break
        except AttributeError:
            continue
    children = [f"{parent_path}.{n}" if parent_path else n for n, _ in parent.named_children()]
    if not children:
        return f"{parent_path or 'it'} has no submodules"
    shown = ", ".join(children[:8]) + (", …" if len(children) > 8 else "")
    return f"try one of {shown}"


def _capture_inputs(module: torch.nn.Module, sub: torch.nn.Module, inputs: Inputs, path: str, name: str) -> Inputs:
    """Run ``module`` eagerly once and return the arguments ``sub`` is first called with (keywords too)."""
    captured: list[Inputs] = []

    def hook(_: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        captured.append(Inputs(tuple(args), dict(kwargs)))
        raise _Captured

    handle = sub.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        with torch.inference_mode():
            inputs.call(module)
    except _Captured:
        pass
    except FxtuiError:
        raise
    except Exception as e:
        raise FxtuiError(f"running {name} to capture the inputs of {path} failed with {exception_text(e)}") from e
    finally:
        handle.remove()
    if not captured:
        raise FxtuiError(f"{name} never calls {path} on its example inputs; give its shapes with --input-shape")
    # Cloned outside inference mode: inference tensors would fail in any later run that
    # is not itself under inference_mode (parameters still require grad).
    return captured[0].fresh()
