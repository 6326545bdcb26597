"""How the agent sees module calls: ``torch.nn.Module.__call__`` itself, in place of hooks on the program's modules.

The agent must see every call of a module at the top (a *root* call: where a step's forward
begins and ends, and whether it is training or evaluation), and, on sampled steps, every module
call (the per-op timer's module stack). It must leave nothing on the program's own objects: a
module under fxtui pickles, deep-copies, saves and exports as without it, and its hook
dictionaries read as they would. Measured on 2 cores, one thread, torch 2.14 (step time added,
interleaved medians):

=============================  ==========  ============  ===================  ======================
program                        step        global hooks  ``__call__`` (this)  hooks on the roots
=============================  ==========  ============  ===================  ======================
MLP 8×32, training             0.20 ms     +18 µs (9%)   +5–7 µs (2.5–3.5%)   +8–10 µs
2 LSTMCells unrolled ×200      13.3 ms     +1.8 ms (14%) +0.3–0.7 ms (2.5–5%) ≈ 0
mobilenet_v3_small, 1×224      6.1 ms      +0.7 ms (11%) +0.10–0.13 ms (2%)   ≈ 0
resnet18 4×128, training       190 ms      ≈ 0           ≈ 0                  ≈ 0
=============================  ==========  ============  ===================  ======================

Hooks on the roots cost least but live in the program's modules (a model that no longer pickles:
the hooks are bound to the agent, which holds a lock). Global module hooks take every module
call down ``Module._call_impl``'s slow path (about 3 µs a call). Replacing
``torch.nn.Module.__call__`` — torch's class, not the program's — costs one Python frame, about
0.5 µs a module call, and leaves every module of the program as it is: that is what is done here.

Inside a root's call (and not recording) the replacement only calls the original. It steps aside
for TorchDynamo: while TorchDynamo traces a module call, ``is_compiling()`` is true and only the
original is traced; its frames are marked so that TorchDynamo never takes them for the user's
code to compile (:func:`~fxtui.ops.dynamo_skip.run_eagerly`); and when it is installed before
TorchDynamo is imported (the agent installs as the program imports torch), TorchDynamo takes it
for the unpatched ``__call__`` and compiles modules exactly as without fxtui. Calls from other
threads than the one that ran the first root call, and calls during ``torch.jit`` tracing or
``torch.fx`` symbolic tracing, are left alone.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

import torch
from torch.compiler import is_compiling

from fxtui.ops.dynamo_skip import run_eagerly_here

RootCall = Callable[[torch.nn.Module, Callable[..., Any], tuple[Any, ...], dict[str, Any]], Any]
InnerCall = RootCall


class ModuleCalls:
    """Installs the replacement of ``Module.__call__``; ``root(module, call, args, kwargs)`` runs each root call
    (it must call ``call(module, *args, **kwargs)`` and return its result), ``inner`` each call inside one while
    :attr:`recording`. TorchDynamo never compiles their frames; what they call of the program's is compiled as
    usual, so whatever else they call must be marked to run eagerly too
    (:func:`~fxtui.ops.dynamo_skip.run_eagerly`)."""

    def __init__(self, root: RootCall, inner: InnerCall) -> None:
        self.root = root
        self.inner = inner
        self.inside = False
        """A root's call is in progress (on the agent's thread)."""
        self.recording = False
        """Every module call goes to ``inner`` (the per-op timer records a step)."""
        self.thread: int | None = None
        self._original: Callable[..., Any] | None = None

    def install(self) -> None:
        original = self._original = torch.nn.Module.__call__
        calls = self

        def __call__(module: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
            if is_compiling() or (calls.inside and not calls.recording):
                return original(module, *args, **kwargs)
            return calls.dispatch(module, args, kwargs)

        __call__.__wrapped__ = original  # type: ignore[attr-defined]
        __call__.__doc__ = original.__doc__
        __call__.__qualname__ = "Module.__call__"
        # TorchDynamo skips torch's own frames as entry points and compiles the user's forward: it must do the
        # same with these (this frame only; what they call is compiled as usual).
        run_eagerly_here(__call__, self.dispatch, self.root, self.inner)
        torch.nn.Module.__call__ = __call__  # type: ignore[method-assign]

    def uninstall(self) -> None:
        if self._original is not None:
            torch.nn.Module.__call__ = self._original  # type: ignore[method-assign]
            self._original = None

    def dispatch(self, module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        original = self._original
        assert original is not None
        if self.inside:
            return self.inner(module, original, args, kwargs)
        ident = threading.get_ident()
        if self.thread is None:
            self.thread = ident
        if ident != self.thread or _tracing():
            return original(module, *args, **kwargs)
        return self.root(module, original, args, kwargs)


def _tracing() -> bool:
    """``torch.jit.trace`` or ``torch.fx`` symbolic tracing is running: their module calls are not the program's
    steps."""
    if torch._C._get_tracing_state() is not None:
        return True
    symbolic = sys.modules.get("torch.fx._symbolic_trace")
    tracing = getattr(symbolic, "is_fx_symbolic_tracing", None)  # (is_fx_tracing warns on every call)
    return bool(tracing()) if tracing is not None else False
