"""``fxtui models [PATTERN]``: the models fxtui builds by name, by kind, read without importing torch."""

from __future__ import annotations

import argparse
import fnmatch
import textwrap

from fxtui.commands.model_names import KIND_ORDER, model_names
from fxtui.commands.output import say, table_width
from fxtui.core.errors import FxtuiError

DESCRIPTION = "List the models fxtui MODEL builds by name: torchvision's, with random weights, by kind."
EPILOG = """\
Besides these names, MODEL can be hf:MODEL_TYPE (any transformers model type:
hf:bert, hf:gpt2, hf:vit, hf:llama …, from its default configuration), or your
own code: package.module:attr or path/to/file.py:attr (see fxtui model --help).

examples:
  fxtui models                  every name
  fxtui models resnet           names that contain resnet
  fxtui models 'vit_*'          names that match a glob
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``fxtui models``."""
    p.add_argument("pattern", metavar="PATTERN", nargs="?", default="", help="only names containing it (or a glob)")


def run(args: argparse.Namespace) -> int:
    """``fxtui models``; its exit status."""
    names = model_names()
    if not names:
        raise FxtuiError("torchvision is not installed (or its sources are missing): pip install torchvision")
    pattern = args.pattern
    shown = [m for m in names if _matches(m.name, pattern)] if pattern else list(names)
    if not shown:
        raise FxtuiError(f"no model name matches {pattern!r} (fxtui models lists them all)")
    width = min(table_width() or 100, 100)
    blocks = []
    for kind in KIND_ORDER:
        of_kind = [m.name for m in shown if m.kind == kind]
        if of_kind:
            body = textwrap.fill(", ".join(of_kind), width, initial_indent="  ", subsequent_indent="  ")
            blocks.append(f"{kind} ({len(of_kind)}):\n{body}")
    say("\n\n".join(blocks))
    say("\nhf:MODEL_TYPE and module:attr or file.py:attr name other models (fxtui model --help)")
    return 0


def _matches(name: str, pattern: str) -> bool:
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatchcase(name, pattern)
    return pattern.lower() in name.lower()
