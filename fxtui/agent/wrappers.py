"""The agent's wrappers of torch's functions and methods that mark a phase (backward, a DataLoader's next batch,
``zero_grad``, gradient clipping), and the one warning of torch's its hooks would cause."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from torch.compiler import is_compiling

from fxtui.ops.dynamo_skip import run_eagerly


def wrap_call(owner: Any, name: str, enter: Callable[[object], None], leave: Callable[[], None]) -> Callable[[], None]:
    """Replace ``owner.name`` with a wrapper calling ``enter(who)`` before it and ``leave()`` after; the undo.

    ``who`` is the object a method is called on (the optimizer), or the function's name (:class:`Named`).
    """
    original = getattr(owner, name)
    method = isinstance(owner, type)
    named = Named(name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if is_compiling():  # traced by TorchDynamo (a compiled training step): the program's code alone
            return original(*args, **kwargs)
        enter((args[0] if args else None) if method else named)
        try:
            return original(*args, **kwargs)
        finally:
            leave()

    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    wrapper.__name__ = getattr(original, "__name__", name)
    wrapper.__doc__ = getattr(original, "__doc__", None)
    run_eagerly(wrapper)
    setattr(owner, name, wrapper)
    return lambda: setattr(owner, name, original)


class Named:
    """Names the owner of a phase that is a function, not an object (``clip_grad_norm_``)."""

    def __init__(self, name: str) -> None:
        self.name = name


#: The start of torch's warning about global module hooks and ``torch.compile(module)``.
_HOOKS_WARNING = r"Using `torch\.compile\(module\)` when there are global hooks"


def quiet_hooks_warning() -> Callable[[], None]:
    """Silence torch's warning that global module hooks fire twice around a compiled module (fxtui's know: they
    step aside); the undo, which leaves the program's warning filters as they were."""
    warnings.filterwarnings("ignore", message=_HOOKS_WARNING, category=UserWarning)
    added = warnings.filters[0]

    def undo() -> None:
        filters: list[Any] = warnings.filters  # type: ignore[assignment]  # a list, typed as a Sequence
        if added in filters:
            filters.remove(added)
            getattr(warnings, "_filters_mutated", lambda: None)()  # the per-module caches of warnings seen

    return undo
