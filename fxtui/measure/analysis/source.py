"""Where a node comes from in the user's code.

``torch.fx`` records, for each node, the Python stack at the moment tracing
created it (when the tracer's ``record_stack_traces`` is on). The frame a user
wants is the innermost one in their model's code: below it are only torch's own
tracing and module-call frames.
"""

from __future__ import annotations

import inspect
import os
import re
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>[^\n]+)\n(?P<code>[^\n]*)')
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
# fxtui's own tracer sits between the user's code and torch.fx; its frames are never the answer.
_FXTUI_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
_PACKAGE_DIRS = ("site-packages", "dist-packages")


@dataclass(frozen=True, slots=True)
class SourceLocation:
    """A place in the model's source: the call that created a node, and for a
    ``call_module`` node the class and definition of the module's ``forward``."""

    file: str
    line: int
    code: str
    """The source line, stripped."""
    function: str = ""
    module_class: str = ""
    forward_file: str = ""
    forward_line: int = 0

    def __str__(self) -> str:
        return f"{short_path(self.file)}:{self.line}  {self.code}".rstrip()

    @property
    def forward(self) -> str:
        """``"torchvision/models/resnet.py:87 BasicBlock.forward"``, or ``""`` when unknown."""
        if not self.forward_file:
            return ""
        return f"{short_path(self.forward_file)}:{self.forward_line} {self.module_class}.forward"


def source_of(node: torch.fx.Node, root: torch.nn.Module | None = None) -> SourceLocation | None:
    """The innermost frame of ``node.stack_trace`` outside torch itself.

    For a ``call_module`` node the result also names the module's class and where
    its ``forward`` is defined; ``root`` is the module the graph was traced from
    (default: the graph's owning module). Returns ``None`` when the tracer did not
    record stack traces, or recorded only torch frames — and then, for a
    ``call_module`` node, a location pointing at the module's ``forward`` if it
    can be found.
    """
    frame = _user_frame(node.stack_trace or "")
    cls, fwd_file, fwd_line = _forward_of(node, root)
    if frame is None:
        if not fwd_file:
            return None
        return SourceLocation(fwd_file, fwd_line, f"def forward  # {cls}", "forward", cls, fwd_file, fwd_line)
    file, line, func, code = frame
    return SourceLocation(file, line, code, func, cls, fwd_file, fwd_line)


def sources_of(gm: torch.fx.GraphModule, root: torch.nn.Module | None = None) -> dict[str, SourceLocation]:
    """:func:`source_of` for every node that has a location, keyed by node name."""
    out = {}
    for node in gm.graph.nodes:
        loc = source_of(node, root if root is not None else gm)
        if loc is not None:
            out[node.name] = loc
    return out


def captured_sources(captured: Any) -> dict[str, SourceLocation]:
    """:func:`source_of` for every node of every graph of a captured model, keyed by display name."""
    root = captured.root if captured.capture == "fx" else None
    out = {}
    for part in captured.parts:
        for node, name in zip(part.gm.graph.nodes, part.names, strict=True):
            loc = source_of(node, root if root is not None else part.gm)
            if loc is not None:
                out[name] = loc
    return out


def short_path(path: str) -> str:
    """Shorten a path for display: drop everything up to ``site-packages/``, or the
    current directory for files under it."""
    parts = path.replace("\\", "/").split("/")
    for marker in _PACKAGE_DIRS:
        if marker in parts:
            return "/".join(parts[len(parts) - parts[::-1].index(marker) :])
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if rel.startswith("..") else rel


def _user_frame(stack_trace: str) -> tuple[str, int, str, str] | None:
    """The last frame (innermost: FX lists outermost first) not inside torch or fxtui."""
    found = None
    for m in _FRAME.finditer(stack_trace):
        file = m.group("file")
        # "<eval_with_key>" and the like are generated code with no file to show.
        if file.startswith("<") or os.path.abspath(file).startswith((_TORCH_DIR, _FXTUI_DIR)):
            continue
        found = (file, int(m.group("line")), m.group("func").strip(), m.group("code").strip())
    return found


def _forward_of(node: torch.fx.Node, root: torch.nn.Module | None) -> tuple[str, str, int]:
    if node.op != "call_module":
        return "", "", 0
    owner = root if root is not None else node.graph.owning_module
    if owner is None:
        return "", "", 0
    try:
        mod = owner.get_submodule(str(node.target))
    except AttributeError:
        return "", "", 0
    cls = type(mod)
    try:
        forward = inspect.unwrap(cls.forward)
        file = inspect.getsourcefile(forward) or ""
        _, line = inspect.getsourcelines(forward)
    except (OSError, TypeError):  # built in C, or defined in a REPL
        return cls.__name__, "", 0
    return cls.__name__, file, line
