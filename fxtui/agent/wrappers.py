"""The agent's wrappers of torch's own functions and methods that mark a phase: ``backward``, a DataLoader's next
batch, ``zero_grad``, gradient clipping.

Each replaces an attribute of torch's (``torch.autograd.backward``, ``Optimizer.zero_grad`` …),
never of the program's objects, and is undone when the agent uninstalls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch.compiler import is_compiling

from fxtui.ops.dynamo_skip import run_eagerly_here
from fxtui.ops.records import Named


def wrap_call(
    owner: Any,
    name: str,
    enter: Callable[[object], None],
    leave: Callable[[], None],
    raised: Callable[[], None] | None = None,
) -> Callable[[], None]:
    """Replace ``owner.name`` with a wrapper calling ``enter(who)`` before it and ``leave()`` after; the undo.

    ``who`` is the object a method is called on (the optimizer), or the function's name (:class:`Named`).
    ``raised()`` is called, before ``leave()``, when the call raises (a DataLoader iterator's ``StopIteration``).
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
        except BaseException:
            if raised is not None:
                raised()
            raise
        finally:
            leave()

    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    wrapper.__name__ = getattr(original, "__name__", name)
    wrapper.__qualname__ = getattr(original, "__qualname__", name)
    wrapper.__doc__ = getattr(original, "__doc__", None)
    run_eagerly_here(wrapper)  # (``enter`` and ``leave`` must be marked to run eagerly by the caller)
    setattr(owner, name, wrapper)
    return lambda: setattr(owner, name, original)
