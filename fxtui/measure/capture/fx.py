"""The ``fx`` capture: symbolic tracing with a fallback for untraceable submodules, and each node's module path.

``torch.fx`` cannot trace code whose control flow depends on tensor values
(``if x.sum() > 0:``). When that happens inside a submodule, :func:`trace_model`
keeps the innermost submodule being traced at the time whole (a leaf, one
``call_module`` node) and traces again, so the rest of the model is still profiled
node by node. A failure in the top-level module's own code cannot be worked around
that way; it becomes an :class:`FxtuiError` pointing at the line and at
``--submodule``.
"""

from __future__ import annotations

import functools
import os
import sys
import time
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from torch.fx.proxy import TraceError

from fxtui.core.errors import FxtuiError
from fxtui.core.nodes import module_ancestors
from fxtui.measure.capture.captured import CapturedModel, one_graph_model
from fxtui.measure.inputs import Inputs

#: Retrace at most this many times; each retry turns one more submodule into a leaf.
MAX_LEAF_RETRIES = 64

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_FXTUI_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


@dataclass
class TracedModel:
    """A traced model and where each of its nodes sits in the module tree."""

    gm: torch.fx.GraphModule
    leaf_modules: tuple[str, ...]
    """Module paths kept whole because their code could not be traced, in the order found."""
    module_paths: dict[str, str]
    """Node name -> path of the module the node belongs to (``""`` is the root), for every node."""
    module_classes: dict[str, str]
    """Module path -> class name, for every path any node uses, all their ancestors and the root ``""``."""
    trace_seconds: float
    """Wall time spent tracing, retries included."""
    leaf_reasons: dict[str, str] = field(default_factory=dict)
    """Leaf path -> why it could not be traced, e.g. ``data-dependent control flow at model.py:12 (`if x:`)``."""


class _FallbackTracer(torch.fx.Tracer):
    """A tracer that treats chosen paths as leaves and remembers where tracing failed.

    ``failure`` holds the innermost non-leaf submodule that an exception escaped
    from, with that exception; the caller makes it a leaf when the same exception
    ends the trace.
    """

    # node.stack_trace is recorded by create_node below, not by torch.fx: its recorder
    # symbolizes stacks through torch._dynamo and filters them through sympy-based
    # helpers, and importing those costs about a second and 100 MB on the first trace.
    record_stack_traces = False

    def __init__(self, leaves: set[str]) -> None:
        super().__init__()
        self.leaves = leaves
        self.failure: tuple[BaseException, str] | None = None

    def create_node(
        self,
        kind: str,
        target: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        name: str | None = None,
        type_expr: Any | None = None,
    ) -> torch.fx.Node:
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        if not node.stack_trace:
            node.stack_trace = _model_stack()
        return node

    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        return module_qualified_name in self.leaves or super().is_leaf_module(m, module_qualified_name)

    def call_module(
        self,
        m: torch.nn.Module,
        forward: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        path = self._path_or_none(m)
        if path is None or self.is_leaf_module(m, path):
            # Nothing of this module's own code runs here; a failure belongs to the caller.
            return super().call_module(m, forward, args, kwargs)
        try:
            return super().call_module(m, forward, args, kwargs)
        except Exception as e:
            # The first handler to see an exception is the innermost module it escaped
            # from; outer modules see the same exception (or one raised from it) and
            # keep that record. A different exception is a new failure.
            if self.failure is None or not _caused_by(e, self.failure[0]):
                self.failure = (e, path)
            raise

    def _path_or_none(self, m: torch.nn.Module) -> str | None:
        try:
            return self.path_of_module(m)
        except NameError:  # a module built inside forward, not installed on the tree
            return None


def trace_model(module: torch.nn.Module, *, name: str = "model") -> TracedModel:
    """Symbolically trace ``module``, keeping untraceable submodules whole.

    Raises :class:`FxtuiError` when the failure is in ``module``'s own code (not in
    a submodule) or when more than :data:`MAX_LEAF_RETRIES` submodules fail.
    """
    started = time.perf_counter()
    leaves: list[str] = []
    reasons: dict[str, str] = {}
    for _ in range(MAX_LEAF_RETRIES + 1):
        tracer = _FallbackTracer(set(leaves))
        try:
            graph = tracer.trace(module)
        except Exception as e:
            failure = tracer.failure
            path = failure[1] if failure is not None and _caused_by(e, failure[0]) else ""
            if not path or path in leaves:
                raise FxtuiError(_top_level_message(module, name, e)) from e
            leaves.append(path)
            reasons[path] = _describe_failure(e)
            continue
        gm = torch.fx.GraphModule(tracer.root, graph, type(module).__name__)
        module_paths = _module_paths(gm, module)
        return TracedModel(
            gm=gm,
            leaf_modules=tuple(leaves),
            module_paths=module_paths,
            module_classes=_module_classes(module, module_paths.values()),
            trace_seconds=time.perf_counter() - started,
            leaf_reasons=reasons,
        )
    raise FxtuiError(
        f"{name} cannot be traced: more than {MAX_LEAF_RETRIES} of its submodules fail to trace "
        f"(the first ones: {', '.join(leaves[:3])}); profile a part of it with --submodule"
    )


def capture_fx(module: torch.nn.Module, inputs: Inputs, *, name: str = "model") -> CapturedModel:
    """Trace ``module`` with torch.fx into a one-graph captured model whose node names are the FX names.

    The graph takes positional inputs only: keyword inputs are placed by ``forward``'s
    signature, and a keyword that has no position makes this capture refuse the model.
    """
    positional_inputs(module, inputs, name)
    traced = trace_model(module, name=name)
    args_captured = one_graph_model(
        traced.gm,
        module_paths=traced.module_paths,
        module_classes=traced.module_classes,
        root=module,
        capture="fx",
        leaf_modules=traced.leaf_modules,
        leaf_reasons=traced.leaf_reasons,
        seconds=traced.trace_seconds,
    )
    part = args_captured.parts[0]

    def call(given: Inputs) -> Any:
        return part(*positional_inputs(module, given, name).args)

    args_captured.call = call
    return args_captured


def positional_inputs(module: torch.nn.Module, inputs: Inputs, name: str) -> Inputs:
    """``inputs`` with keywords moved to their positions in ``forward`` (a traced graph takes positions only)."""
    if not inputs.kwargs:
        return inputs
    import inspect

    try:
        bound = inspect.signature(module.forward).bind(*inputs.args, **inputs.kwargs)
    except TypeError as e:
        raise FxtuiError(f"{name} does not take these inputs: {e}") from None
    bound.apply_defaults()
    if bound.kwargs:
        raise FxtuiError(f"{name} takes keyword-only inputs ({', '.join(bound.kwargs)}), which torch.fx cannot trace")
    return Inputs(tuple(bound.args))


def _model_stack() -> str | None:
    """The model's frames of the current stack, formatted as torch.fx's ``node.stack_trace``.

    As torch.fx does, frames before the first ``forward`` are dropped (the code that
    called the tracer); torch's and fxtui's own frames are dropped too, so the
    "where in the code" view shows the model's lines and nothing between them.
    """
    stack = []
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        stack.append(frame)
        frame = frame.f_back
    stack.reverse()
    first = next((i for i, f in enumerate(stack) if f.f_code.co_name == "forward"), None)
    if first is None:
        return None
    # Source lines are looked up (through linecache) only for the frames kept.
    user = [
        traceback.FrameSummary(f.f_code.co_filename, f.f_lineno, f.f_code.co_name)
        for f in stack[first:]
        if not _is_machinery(f.f_code.co_filename)
    ]
    return "".join(traceback.StackSummary.from_list(user).format()).strip() or None


def _caused_by(e: BaseException, original: BaseException) -> bool:
    """True when ``e`` is ``original`` or was raised while handling it (``raise ... from``)."""
    seen: set[int] = set()
    current: BaseException | None = e
    while current is not None and id(current) not in seen:
        if current is original:
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


# -- module paths ---------------------------------------------------------------------


def _module_paths(gm: torch.fx.GraphModule, root: torch.nn.Module) -> dict[str, str]:
    module_names = {n for n, _ in root.named_modules()}
    paths: dict[str, str] = {}
    for node in gm.graph.nodes:
        if node.op == "call_module":
            paths[node.name] = str(node.target)
        elif node.op in ("call_function", "call_method"):
            # torch.fx keys the stack by "path" or "path@N" for the Nth reuse of a module;
            # the value's first item is the plain path, the same for every call.
            stack = node.meta.get("nn_module_stack") or {}
            paths[node.name] = next(reversed(stack.values()))[0] if stack else ""
        elif node.op == "get_attr":
            # A parameter or buffer belongs to the module that owns it (encoder.pos_embedding
            # -> encoder); constants torch.fx adds to the root belong to the root.
            owner = str(node.target).rpartition(".")[0]
            paths[node.name] = owner if owner in module_names else ""
        else:
            paths[node.name] = ""
    return paths


def _module_classes(root: torch.nn.Module, paths: Any) -> dict[str, str]:
    classes = {"": type(root).__name__}
    for path in set(paths):
        for ancestor in module_ancestors(path):
            if ancestor not in classes:
                try:
                    classes[ancestor] = type(root.get_submodule(ancestor)).__name__
                except AttributeError:
                    classes[ancestor] = ""
    return classes


# -- failure messages -----------------------------------------------------------------


def _describe_failure(e: BaseException) -> str:
    """``data-dependent control flow at file.py:12 (`if x:`)`` or ``TypeError: ... at ...``."""
    message = " ".join(str(e).split())
    if isinstance(e, TraceError) and "iterated" in message:
        what = "a loop over a traced value"
    elif isinstance(e, TraceError) and "control flow" in message:
        what = "data-dependent control flow"
    else:
        if len(message) > 160:
            message = message[:159] + "…"
        what = f"{type(e).__name__}: {message}" if message else type(e).__name__
    frame = _model_frame(e)
    if frame is None:
        return what
    code = (frame.line or "").strip()
    return f"{what} at {_short_path(frame.filename)}:{frame.lineno}" + (f" (`{code}`)" if code else "")


def _model_frame(e: BaseException) -> traceback.FrameSummary | None:
    """The last frame of the traceback outside torch and fxtui: the model's failing line."""
    frames = traceback.extract_tb(e.__traceback__)
    for frame in reversed(frames):
        if not _is_machinery(frame.filename) and not frame.filename.startswith("<"):
            return frame
    return None


@functools.lru_cache(maxsize=4096)
def _is_machinery(filename: str) -> bool:
    """True for torch's and fxtui's own source files."""
    return os.path.abspath(filename).startswith((_TORCH_DIR, _FXTUI_DIR))


def _short_path(filename: str) -> str:
    """A file name relative to the sys.path entry holding it (torchvision/models/...) or to the cwd."""
    absolute = os.path.abspath(filename)
    bases = [os.getcwd(), *(p for p in sys.path if p)]
    best = absolute
    for base in bases:
        base = os.path.abspath(base) + os.sep
        if absolute.startswith(base) and len(absolute) - len(base) < len(best):
            best = absolute[len(base) :]
    return best


def _top_level_message(module: torch.nn.Module, name: str, e: BaseException) -> str:
    suggestion = _largest_child(module)
    hint = (
        f"; profile a part of it with --submodule {suggestion}"
        if suggestion
        else "; give fxtui a module whose forward torch.fx can trace"
    )
    return f"{name} cannot be traced: {_describe_failure(e)}{hint}"


#: Children worth suggesting for --submodule first: the usual names of a model's trunk.
_TRUNK_NAMES = ("backbone", "features", "encoder", "feature_encoder", "body", "trunk")


def _largest_child(module: torch.nn.Module) -> str | None:
    """A child to suggest for --submodule: the trunk by its usual name, else the one with the most parameters."""
    children = dict(module.named_children())
    for trunk in _TRUNK_NAMES:
        if trunk in children:
            return trunk
    best: tuple[int, str] | None = None
    for child_name, child in children.items():
        size = sum(p.numel() for p in child.parameters())
        if best is None or size > best[0]:
            best = (size, child_name)
    return best[1] if best else None
