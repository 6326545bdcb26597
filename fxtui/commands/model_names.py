"""The torchvision models fxtui can build by name, read from torchvision's source without importing torch.

``import torchvision`` imports torch: seconds before ``fxtui notamodel`` could say "unknown", and
``fxtui models`` would take as long. torchvision registers each builder with a decorator,
``@register_model()`` (under the function's name) or ``@register_model(name="…")``, in the files of
``torchvision/models``; reading those files finds the same names in a few milliseconds.
``tests/test_cli.py`` checks them against ``torchvision.models.list_models()``. Where the files cannot
be read (torchvision missing, or stored without its sources), :func:`model_names` says nothing and
the model is looked up the slow way, by loading it.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

_DECORATOR = re.compile(r"^@register_model\(\s*(?:name\s*=\s*)?(?:[\"'](?P<name>[\w.]+)[\"'])?\s*\)", re.MULTILINE)
_FUNCTION = re.compile(r"^def\s+(?P<name>\w+)", re.MULTILINE)

#: torchvision's sub-packages of models, and what fxtui calls each kind (as measure/targets/torchvision.py does).
_KINDS = {
    "detection": "detection",
    "segmentation": "segmentation",
    "video": "video",
    "optical_flow": "optical flow",
    "quantization": "quantized",
}
#: The order ``fxtui models`` lists the kinds in.
KIND_ORDER = ("classification", "detection", "segmentation", "video", "optical flow", "quantized")


@dataclass(frozen=True)
class ModelName:
    """A model torchvision registers: its name and its kind (``classification``, ``detection`` …)."""

    name: str
    kind: str


@functools.cache
def model_names() -> tuple[ModelName, ...]:
    """Every model torchvision registers, by name; empty when its sources cannot be read."""
    try:
        spec = importlib.util.find_spec("torchvision")
    except (ImportError, ValueError):
        return ()
    if spec is None or not spec.submodule_search_locations:
        return ()
    root = Path(next(iter(spec.submodule_search_locations))) / "models"
    found: dict[str, ModelName] = {}
    for path in sorted(root.rglob("*.py")):
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if "@register_model" not in source:
            continue
        package = path.relative_to(root).parts[0] if len(path.relative_to(root).parts) > 1 else ""
        kind = _KINDS.get(package, "classification")
        for decorator in _DECORATOR.finditer(source):
            function = _FUNCTION.search(source, decorator.end())
            name = decorator["name"] or (function["name"] if function else "")
            if name:
                found[name] = ModelName(name, kind)
    return tuple(sorted(found.values(), key=lambda m: m.name))


def unknown_model_sentence(name: str) -> str | None:
    """The sentence for a TARGET that names no model torchvision has, with the closest names; None when it names
    one, is not a plain name (``file.py:attr``, ``hf:bert``), or the names cannot be read."""
    if ":" in name or not name.strip():
        return None
    names = [m.name for m in model_names()]
    if not names or name in names:
        return None
    if name.endswith(".py") or "/" in name:
        return f"unknown model {name!r}; to load from a file write {name}:ClassOrFactory"
    if "." in name:
        return f"unknown model {name!r}; to load from a Python module write {name}:ClassOrFactory"
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    if not close:
        # Nothing spelled alike: a name that starts the same (vit → vit_b_16) is the next best guess.
        close = [n for n in names if n.startswith(name[:3].lower())][:3]
    guess = f"; did you mean {', '.join(close[:-1])} or {close[-1]}?" if len(close) > 1 else ""
    guess = guess or (f"; did you mean {close[0]}?" if close else "")
    return f"unknown model {name!r}{guess} (fxtui models lists them)"
