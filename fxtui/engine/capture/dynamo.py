"""The ``dynamo`` capture: TorchDynamo hands fxtui's own backend every graph it captures.

``torch.compile(model, backend=…)`` runs the model's Python under TorchDynamo, which
records runs of torch operations into FX graphs and hands each one to the backend. This
backend keeps the graph and returns its :class:`~fxtui.engine.capture.program.GraphPart`,
so that every later call of the compiled model runs the graph through whatever the part's
executor is at that moment. Where TorchDynamo cannot follow the code (a ``.item()``
feeding a branch, an operator whose output shape depends on the data) it breaks the model
into several graphs with ordinary Python between them; that Python, and TorchDynamo's
guard checks, stay outside every node and are part of the unattributed remainder.

Nodes are named after their module and operation (``encoder.layer.0.attention.self.query
· linear``) instead of TorchDynamo's local variable names, so the same model gives the
same names in every session and ``fxtui diff`` can match them.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
import traceback
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import torch
import torch.fx

from fxtui.engine.capture.names import describe_target
from fxtui.engine.capture.program import GraphPart, Program
from fxtui.engine.errors import FxtuiError, NodeError
from fxtui.engine.inputs import Inputs
from fxtui.engine.model import GraphBreak, module_ancestors

#: Runs of the model during capture: the first compiles; the second compiles what the first
#: could not know yet (a resume function guarded on a value the first run produced).
CAPTURE_RUNS = 2
#: TorchDynamo stops compiling a function after this many variants (its default is 8): each
#: fxtui session compiles the model anew with a backend of its own, and a process that profiles
#: the same model class several times (the Python API, tests) must not run out.
RECOMPILE_LIMIT = 256


def capture_dynamo(module: torch.nn.Module, inputs: Inputs, *, name: str = "model", reason: str = "") -> Program:
    """Capture ``module`` with TorchDynamo into a program of one graph per captured region.

    Runs the model :data:`CAPTURE_RUNS` times under ``torch.inference_mode()`` (the mode
    the session runs it in, so TorchDynamo's guards hold). Raises :class:`FxtuiError` when
    the model fails, naming the user's line.
    """
    import torch._dynamo

    started = time.perf_counter()
    program = Program(capture="dynamo", root=module, call=lambda given: None, reason=reason)
    namer = _Namer(module)
    breaks: list[GraphBreak] = []
    sealed = False

    def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Any:
        if sealed:
            program.late_graphs += 1
            return gm.forward
        why = getattr(gm, "compile_subgraph_reason", None)
        if why is not None and getattr(why, "graph_break", False):
            breaks.append(GraphBreak(_first_line(str(why.reason)), _user_line(getattr(why, "user_stack", None) or [])))
        part = GraphPart(gm, namer.name_graph(gm, program), program.node_count, len(program.parts))
        program.parts.append(part)
        return part

    _raise_recompile_limit(torch._dynamo.config)
    # The analysis passes run the compiled model under torch's FLOP counter, whose module
    # tracker registers global hooks for the moment; torch.compile warns about them on each call.
    warnings.filterwarnings("ignore", message=r"Using `torch.compile\(module\)` when there are global hooks")
    with _quiet_dynamo():
        compiled = torch.compile(module, backend=backend, dynamic=False)

    def call(given: Inputs) -> Any:
        return given.call(compiled)

    program.call = call
    with _quiet_dynamo(), torch.inference_mode():
        for _ in range(CAPTURE_RUNS):
            try:
                program.run(inputs.fresh())
            except NodeError:
                raise
            except Exception as e:
                if type(e).__module__.startswith("torch._dynamo"):
                    raise FxtuiError(f"{name} cannot be captured with TorchDynamo: {_failure(e)}") from e
                # The model's own error (TorchDynamo re-raises it from the user's frame).
                raise FxtuiError(f"the model does not run on these inputs: {_failure(e)}") from e
    sealed = True
    program.warm_runs = CAPTURE_RUNS
    if not program.parts:
        raise FxtuiError(
            f"TorchDynamo captured no graph of {name}: its forward runs no torch operation TorchDynamo can record"
        )
    program.module_paths = namer.paths
    program.module_classes = namer.classes
    program.breaks = tuple(breaks)
    program.seconds = time.perf_counter() - started
    return program


def _raise_recompile_limit(config: Any) -> None:
    for attr in ("recompile_limit", "cache_size_limit"):
        if hasattr(config, attr) and getattr(config, attr) < RECOMPILE_LIMIT:
            setattr(config, attr, RECOMPILE_LIMIT)


@contextlib.contextmanager
def _quiet_dynamo() -> Iterator[None]:
    """Keep TorchDynamo's graph-break warnings off the terminal: fxtui reports the breaks itself."""
    logger = logging.getLogger("torch._dynamo")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            # torch.compile warns about global module hooks (torch's own FLOP counter leaves one
            # registered); fxtui calls the compiled model once per run, so nothing fires twice.
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("ignore", FutureWarning)  # deprecations inside torch and torchvision
            yield
    finally:
        logger.setLevel(level)


# -- names ---------------------------------------------------------------------------------

_PARAM = re.compile(r"_(?:parameters|buffers)_(?P<attr>.+?)_?$")
_INPUT = re.compile(r"^[lLgG]_(?:kwargs_|args_)?(?P<name>.+?)_?$")


class _Namer:
    """Stable display names and module paths for the nodes of every graph of one program."""

    def __init__(self, root: torch.nn.Module) -> None:
        self.root = root
        self.known = {n for n, _ in root.named_modules()}
        self.paths: dict[str, str] = {}
        self.classes: dict[str, str] = {"": type(root).__name__}
        self._used: dict[str, int] = {}

    def name_graph(self, gm: torch.fx.GraphModule, program: Program) -> list[str]:
        names = []
        for node in gm.graph.nodes:
            path, cls = self._module_of(node)
            label = self._label(gm, node)
            base = f"{path} · {label}" if path else label
            count = self._used.get(base, 0) + 1
            self._used[base] = count
            name = base if count == 1 else f"{base} #{count}"
            names.append(name)
            self.paths[name] = path
            self._add_class(path, cls)
        return names

    def _module_of(self, node: torch.fx.Node) -> tuple[str, str]:
        stack = node.meta.get("nn_module_stack") or {}
        if not stack:
            return "", ""
        source, cls = next(reversed(stack.values()))
        path = module_path(str(source))
        if path not in self.known:
            return "", ""
        return path, getattr(cls, "__name__", str(cls))

    def _add_class(self, path: str, cls: str) -> None:
        if path not in self.classes:
            self.classes[path] = cls or _class_of(self.root, path)
        for ancestor in module_ancestors(path):
            self.classes.setdefault(ancestor, _class_of(self.root, ancestor))

    @staticmethod
    def _label(gm: torch.fx.GraphModule, node: torch.fx.Node) -> str:
        if node.op == "placeholder":
            found = _PARAM.search(node.name)
            if found:
                return found.group("attr")
            found = _INPUT.match(node.name)
            return found.group("name") if found else str(node.target)
        if node.op == "get_attr":
            return str(node.target).rpartition(".")[2]
        if node.op == "output":
            return "output"
        return describe_target(gm, node)[1]


def module_path(source: str) -> str:
    """TorchDynamo's source of a module as a plain path: ``L['self'].layer[0].conv1`` → ``layer.0.conv1``."""
    path = re.sub(r"\._modules\[['\"]([^'\"]+)['\"]\]", r".\1", source)
    path = re.sub(r"^L\[['\"]self['\"]\]\.?", "", path)
    path = re.sub(r"\[['\"]?([^'\"\]]+)['\"]?\]", r".\1", path)
    return path.strip(".")


def _class_of(root: torch.nn.Module, path: str) -> str:
    try:
        return type(root.get_submodule(path)).__name__
    except AttributeError:
        return ""


# -- failures ------------------------------------------------------------------------------


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0].strip()


def _user_line(stack: Sequence[traceback.FrameSummary]) -> str:
    """The innermost frame of a TorchDynamo user stack, as ``file.py:12  code``."""
    from fxtui.engine.analysis.source import short_path

    if not stack:
        return ""
    frame = stack[-1]
    return f"{short_path(frame.filename)}:{frame.lineno}  {(frame.line or '').strip()}".rstrip()


def _failure(e: BaseException) -> str:
    """One line: the exception and the user's line it came from (TorchDynamo re-raises with the user frame)."""
    from fxtui.engine.capture.fx import _model_frame, _short_path

    message = _first_line(str(e)) or type(e).__name__
    if len(message) > 200:
        message = message[:199] + "…"
    frame = _model_frame(e)
    where = f" at {_short_path(frame.filename)}:{frame.lineno} (`{(frame.line or '').strip()}`)" if frame else ""
    return f"{type(e).__name__}: {message}{where}"
