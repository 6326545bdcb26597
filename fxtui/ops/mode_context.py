"""fxtui's dispatch mode on torch's mode stack, pushed and popped in one context: the program's torch stays its own.

Torch keeps, per thread, the dispatch modes on a stack and a set of dispatch keys included and excluded. Pushing
the first mode includes the ``Python`` key; popping the last excludes it again. ``torch.inference_mode`` (and any
guard that saves and restores the thread's whole key set) undoes that on exit, whatever happened inside:

* a mode pushed outside and popped inside ``inference_mode`` leaves the ``Python`` key included with an empty
  stack once the block ends, and the program's next op without tensor arguments (``torch.empty(())``, which a
  DataLoader iterator runs) fails: *Hit Python dispatch key but no arguments had PyInterpreter*;
* a mode pushed inside and still on the stack after the block is *dead*: the key is gone, so it sees nothing,
  and a mode the program pushes then (the stack is not empty, so the key is not included again) sees nothing too.

A ``torch.compile``d call saves and restores the thread's key set around itself too.

The rule kept here: the recorder's mode is popped only in the context it was pushed in (the same inference-mode
state, the same thread-local include and exclude sets, the ``Python`` keys aside, and as many compiled calls in
progress), and only when it is the top
of the stack (a mode the program pushed after it stays above it and pops first; fxtui's waits). Where a step ends
elsewhere, the mode is not popped: it goes quiet (a pass-through that records nothing) and *lingers*, and
:func:`settle`, which the agent calls at each of its callbacks (root calls, phases, optimizer steps, backward, a
DataLoader's batch), pops it as soon as the context is again the one it was pushed in. A dead mode at the top is
popped wherever it is met: its key is gone already, so popping it changes no key. The next sampled step takes a
lingering mode back rather than push another; none is pushed above a mode of the program's
(:func:`programs_mode_on_stack`: such steps are set aside). Of the alternatives: popping where the step ends crashes
the program's next op without tensors; leaving every such step unsampled loses every evaluation of a program
that validates under ``inference_mode`` (timm's ``train.py``).

The context is read in 10 µs at a depth of 5 frames, 21 µs at 40 (two key sets, the inference-mode flag and a walk
of the frames; torch 2.14 on 2 cores at load 26), and only where fxtui pushes or pops, or while a mode lingers:
never per op, never on an unsampled step.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode

_PYTHON_KEYS = (torch._C.DispatchKey.Python, torch._C.DispatchKey.PythonTLSSnapshot)
_include = torch._C._dispatch_tls_local_include_set
_exclude = torch._C._dispatch_tls_local_exclude_set
_is_included = torch._C._dispatch_tls_is_dispatch_key_included
_stack_length = torch._C._len_torch_dispatch_stack
_stack_at = torch._C._get_dispatch_stack_at

Context = tuple[bool, int, int, int]
"""Inference mode on, the raw include and exclude key sets without the keys modes add, and the compiled calls in
progress."""

_EVAL_FRAME = os.path.join("torch", "_dynamo", "eval_frame.py")


def context() -> Context:
    """The thread's dispatch context now, as far as pushing or popping a mode depends on it."""
    include, exclude = _include(), _exclude()
    for key in _PYTHON_KEYS:
        include, exclude = include.remove(key), exclude.remove(key)
    return torch.is_inference_mode_enabled(), include.raw_repr(), exclude.raw_repr(), _compiled_calls()


def _compiled_calls() -> int:
    """How many calls of ``torch.compile``d code are in progress on this thread (frames of TorchDynamo's
    ``compile_wrapper``). Each saves the thread's key set before the call and restores it after, as an
    ``inference_mode`` block does, without changing it: a key set alone cannot tell inside from outside (a mode
    popped inside one, in a callback of the program's modules or optimizers it calls, crashed the program's next
    op without tensors after it). A walk of the frames, a few µs, only where fxtui pushes or pops."""
    calls = 0
    frame: Any = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "compile_wrapper" and code.co_filename.endswith(_EVAL_FRAME):
            calls += 1
        frame = frame.f_back
    return calls


def _on_stack(mode: TorchDispatchMode) -> bool:
    return any(_stack_at(i) is mode for i in range(_stack_length()))


def alive(mode: TorchDispatchMode) -> bool:
    """``mode`` is on the stack and torch calls the stack: the ``Python`` key is included (a guard that restored the
    thread's key set since it was pushed may have dropped it)."""
    return _is_included(torch._C.DispatchKey.Python) and _on_stack(mode)


def programs_mode_on_stack() -> bool:
    """A dispatch mode of the program's (``FlopCounterMode``, its own) is on the stack: fxtui does not push above
    it, for the program's ``__exit__`` pops whatever mode is on top (it would pop fxtui's and leave its own)."""
    return any(id(_stack_at(i)) not in _pushed for i in range(_stack_length()))


def lost(mode: TorchDispatchMode) -> bool:
    """``mode`` is on the stack but dead: a guard restored the thread's key set without the ``Python`` key (an
    ``inference_mode`` block it was pushed in ended), so it has missed every op since."""
    return not _is_included(torch._C.DispatchKey.Python) and _on_stack(mode)


class _Pushed:
    """One mode fxtui pushed: where it was pushed, and how to quiet it."""

    __slots__ = ("context", "mode", "quiet")

    def __init__(self, mode: TorchDispatchMode, where: Context, quiet: Any) -> None:
        self.mode = mode
        self.context = where
        self.quiet = quiet


_pushed: dict[int, _Pushed] = {}
"""The modes fxtui has on the stack, by id."""
_lingering: list[_Pushed] = []
"""Those whose step ended in another context: quiet, waiting to be popped where they were pushed."""


def push(mode: TorchDispatchMode, quiet: Any) -> None:
    """Push ``mode`` on the stack, noting the context; ``quiet()`` makes it record nothing (while it lingers)."""
    where = context()
    mode.__enter__()
    _pushed[id(mode)] = _Pushed(mode, where, quiet)


def pushed_in_inference(mode: TorchDispatchMode) -> bool:
    """``mode`` was pushed under ``inference_mode``: it dies when that block ends (the agent stops it before)."""
    entry = _pushed.get(id(mode))
    return entry is not None and entry.context[0]


def pushed_here(mode: TorchDispatchMode) -> bool:
    """``mode`` was pushed under ``inference_mode`` in the context of now: an ``inference_mode`` block ending here
    is (as far as can be told) the one it was pushed in, and would leave it dead (the agent stops it first)."""
    entry = _pushed.get(id(mode))
    return entry is not None and entry.context[0] and context() == entry.context


def _can_pop(entry: _Pushed) -> bool:
    if not _on_stack(entry.mode):
        return True  # gone already (the program cleared the stack): only forget it
    if _get_current_dispatch_mode() is not entry.mode:
        return False  # a mode of the program's above it: it pops first
    # Dead (its key gone): popping it changes no key. Else only where it was pushed.
    return not _is_included(torch._C.DispatchKey.Python) or context() == entry.context


def _pop(entry: _Pushed) -> None:
    _pushed.pop(id(entry.mode), None)
    if _on_stack(entry.mode):
        entry.mode.__exit__(None, None, None)


def pop(mode: TorchDispatchMode) -> bool:
    """Pop ``mode`` if this is the context it was pushed in; else quiet it and let it linger (:func:`settle` pops
    it). True when popped."""
    entry = _pushed.get(id(mode))
    if entry is None:
        return True
    if _can_pop(entry):
        _pop(entry)
        return True
    entry.quiet()
    if entry not in _lingering:
        _lingering.append(entry)
    return False


def reclaim() -> TorchDispatchMode | None:
    """A lingering mode still alive, taken back for the next recording (its push context kept); dead ones popped."""
    settle()
    while _lingering:
        entry = _lingering.pop()
        if alive(entry.mode):
            return entry.mode
        _pop(entry)
    return None


def settle() -> None:
    """Pop each lingering mode that can be popped here (called at the agent's callbacks; nothing to do mostly)."""
    if not _lingering:
        return
    for entry in list(_lingering):
        if _can_pop(entry):
            _lingering.remove(entry)
            _pop(entry)


def lingering_mode() -> TorchDispatchMode | None:
    """The latest mode waiting to be popped, if any."""
    return _lingering[-1].mode if _lingering else None


def lingering() -> int:
    """Modes waiting to be popped (for tests and the agent's end)."""
    return len(_lingering)


_repairing: Context | None = None
"""The push context of a mode popped away from it (:func:`pop_for_profiler`), until the program is back there."""


def pop_for_profiler(mode: TorchDispatchMode) -> bool:
    """Pop ``mode`` now though the program has entered ``inference_mode`` blocks since it was pushed: the program's
    profiler is starting, and must not see it. Each of those blocks, as it ends, restores the ``Python`` key with
    the stack empty; :func:`after_inference_exit` takes it out again right there. Not inside a compiled call
    entered since (its restore cannot be followed): False, the mode left quiet."""
    global _repairing
    entry = _pushed.get(id(mode))
    if entry is None or _can_pop(entry):
        settle()
        return True
    if _get_current_dispatch_mode() is not mode or _compiled_calls() != entry.context[3]:
        return False
    if entry in _lingering:
        _lingering.remove(entry)
    _pop(entry)
    _repairing = entry.context
    return True


def after_inference_exit() -> None:
    """An ``inference_mode`` block has ended: if it restored the ``Python`` key over an empty stack (a mode popped
    inside it by :func:`pop_for_profiler`), the key goes, as torch's own pop of the last mode takes it."""
    global _repairing
    if _repairing is None:
        return
    if _stack_length() == 0 and _is_included(torch._C.DispatchKey.Python):
        for key in _PYTHON_KEYS:
            torch._C._dispatch_tls_set_dispatch_key_included(key, False)
    if context() == _repairing:
        _repairing = None
