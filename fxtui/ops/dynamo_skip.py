"""fxtui's hooks run as plain Python inside a program that compiles its model: TorchDynamo neither compiles nor
breaks on them.

A module hook is called from ``Module._call_impl``. Where that call runs under TorchDynamo's
frame callback (the module inside ``torch.compile(model)``, any module of a model compiled with
``model.compile()``), TorchDynamo would take the hook's frame for the user's code and compile
it: with ``torch.compiler.is_compiling()`` true while it traces, into a graph that does
nothing, so the hook would never run again (measured: a compiled inference loop gave 9 graphs
and no steps). Each hook's code is therefore marked to run as it is, callees included
(``set_code_exec_strategy``: skip the frame and every frame it calls), as soon as TorchDynamo
is imported. Where TorchDynamo *traces* a module call into a graph (a submodule inside the
compiled forward), the hooks see ``is_compiling()`` and add nothing to the user's graph.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Callable
from typing import Any

from fxtui.ops.after_import import after_import

_EVAL_FRAME = "torch._dynamo.eval_frame"
#: Code to mark, and whether the frames it calls are skipped too (True) or compiled as usual (False).
_pending: dict[types.CodeType, bool] = {}
_marked: set[types.CodeType] = set()
_waiting = False


def run_eagerly(*functions: Callable[..., Any]) -> None:
    """Never let TorchDynamo compile these functions' frames, or the frames they call (now, or once it is imported)."""
    _ask(functions, callees=True)


def run_eagerly_here(*functions: Callable[..., Any]) -> None:
    """Never let TorchDynamo start compiling at these functions' frames; the frames they call are compiled as they
    would be (a stand-in for a function of torch's own, which TorchDynamo skips the same way)."""
    _ask(functions, callees=False)


def _ask(functions: tuple[Callable[..., Any], ...], callees: bool) -> None:
    global _waiting
    for function in functions:
        code = _code(function)
        if code is not None and code not in _marked:  # the recorder asks every step
            _pending[code] = callees
    if _EVAL_FRAME in sys.modules:
        _mark(sys.modules[_EVAL_FRAME])
    elif not _waiting:
        _waiting = True
        after_import(_EVAL_FRAME, _mark)


def _code(function: Callable[..., Any]) -> types.CodeType | None:
    function = getattr(function, "__func__", function)
    return getattr(function, "__code__", None)


def _mark(eval_frame: types.ModuleType) -> None:
    strategy = getattr(eval_frame, "FrameExecStrategy", None)
    action = getattr(eval_frame, "FrameAction", None)
    apply = getattr(eval_frame, "set_code_exec_strategy", None)
    if strategy is None or action is None or apply is None:
        return  # a torch without it: the hooks' is_compiling() checks are all there is
    while _pending:
        code, callees = _pending.popitem()
        with contextlib.suppress(Exception):
            apply(code, strategy(action.SKIP, action.SKIP if callees else action.DEFAULT))
            _marked.add(code)
