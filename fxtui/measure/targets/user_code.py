"""``package.module:attr`` and ``path/to/file.py:attr`` TARGETs: the user's own code.

``attr`` is an ``nn.Module`` subclass (built with no arguments), a module instance, or a
factory called with no arguments that returns a module, ``(module, args)`` or
``(module, args, kwargs)``. A ``file.py`` is executed as Python code.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import itertools
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from fxtui.core.errors import FxtuiError, exception_text
from fxtui.measure.inputs import Inputs

_file_counter = itertools.count()


def shortened(text: str, limit: int = 80) -> str:
    """``text`` as a sentence can quote it: cut in the middle, with its length, when longer than ``limit``."""
    if len(text) <= limit:
        return text
    return f"{text[: limit // 2]}…{text[-limit // 4 :]} ({len(text):,} characters)"


def load_attr_target(target: str) -> tuple[torch.nn.Module, Inputs | None, str]:
    """Import or execute the code TARGET names and build its module (and example inputs, when it gives them)."""
    if target.count(":") > 1:
        raise FxtuiError(f"cannot read the target {target!r}: write package.module:attr or path/file.py:attr")
    where, _, attr = target.partition(":")
    where, attr = where.strip(), attr.strip()
    if not where or not attr:
        raise FxtuiError(
            f"cannot read the target {target!r}: both the module and the attribute are needed, "
            "as in package.module:attr or path/file.py:attr"
        )
    if not all(part.isidentifier() for part in attr.split(".")):
        raise FxtuiError(f"cannot read the target {target!r}: {attr!r} is not a Python attribute name")
    is_file = where.endswith(".py") or "/" in where or os.sep in where
    if is_file:
        path = Path(where).expanduser()
        name = f"{shortened(path.name)}:{attr}"
        with _on_sys_path(path.absolute().parent):
            py_module = _exec_file(path)
            obj = _get_attr(py_module, attr, where)
            module, inputs = _instantiate(obj, name)
    else:
        name = f"{where}:{attr}"
        with _on_sys_path(Path.cwd()):
            py_module = _import(where)
            obj = _get_attr(py_module, attr, where)
            module, inputs = _instantiate(obj, name)
    return module, inputs, name


@contextmanager
def _on_sys_path(directory: Path) -> Iterator[None]:
    # A model file usually imports its neighbours, and `fxtui pkg.mod:x` run from a
    # project should find `pkg` there, as `python -m` would. Only for the loading itself:
    # modules imported now stay imported.
    entry = str(directory)
    added = entry not in sys.path
    if added:
        sys.path.insert(0, entry)
    try:
        yield
    finally:
        if added and entry in sys.path:
            sys.path.remove(entry)


def _exec_file(path: Path) -> Any:
    try:
        exists, is_file = path.exists(), path.is_file()
    except OSError as e:  # a name too long for the file system, a path through a file …
        raise FxtuiError(f"cannot read {shortened(str(path))}: {e.strerror or e}") from None
    if not exists:
        raise FxtuiError(f"no such file: {path}")
    if not is_file:
        raise FxtuiError(f"{path} is not a file")
    # A unique name: two files both called model.py must not share a sys.modules entry.
    stem = re.sub(r"\W", "_", path.stem)
    module_name = f"_fxtui_target_{next(_file_counter)}_{stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise FxtuiError(f"cannot load {path} as Python code")
    py_module = importlib.util.module_from_spec(spec)
    # Registered before running so dataclasses, pickling and typing inside the file can find it.
    sys.modules[module_name] = py_module
    try:
        spec.loader.exec_module(py_module)
    except (Exception, SystemExit) as e:
        del sys.modules[module_name]
        raise FxtuiError(f"running {path} failed with {exception_text(e)}") from e
    return py_module


def _import(module_name: str) -> Any:
    if not all(part.isidentifier() for part in module_name.split(".")):
        raise FxtuiError(f"{module_name!r} is not a Python module name; for a file write path/file.py:attr")
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and (module_name == e.name or module_name.startswith(e.name + ".")):
            raise FxtuiError(f"no module named {e.name!r} (is it installed, or on PYTHONPATH?)") from e
        raise FxtuiError(f"importing {module_name} failed with {exception_text(e)}") from e
    except (Exception, SystemExit) as e:
        raise FxtuiError(f"importing {module_name} failed with {exception_text(e)}") from e


def _get_attr(py_module: Any, attr: str, where: str) -> Any:
    obj = py_module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise FxtuiError(f"{where} has no attribute {attr!r}") from None
    return obj


def _instantiate(obj: Any, name: str) -> tuple[torch.nn.Module, Inputs | None]:
    if isinstance(obj, torch.nn.Module):
        return obj, None
    if not callable(obj):
        raise FxtuiError(
            f"{name} is a {type(obj).__name__}, not an nn.Module, a Module class or a factory returning one"
        )
    what = "building" if inspect.isclass(obj) else "the factory"
    try:
        result = obj()
    except (Exception, SystemExit) as e:
        raise FxtuiError(f"{what} {name} raised {exception_text(e)}") from e
    inputs: Inputs | None = None
    if isinstance(result, tuple) and len(result) in (2, 3) and isinstance(result[0], torch.nn.Module):
        result, example, *rest = result
        # A tuple is the positional inputs; anything else is the one input.
        args = tuple(example) if isinstance(example, tuple) else (example,)
        kwargs = rest[0] if rest else {}
        if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
            raise FxtuiError(f"{name} returned keyword inputs as a {type(kwargs).__name__}, not a dict of names")
        inputs = Inputs(args, kwargs)
    if not isinstance(result, torch.nn.Module):
        raise FxtuiError(
            f"{name} returned a {type(result).__name__}, not an nn.Module, a (module, args) pair "
            "or a (module, args, kwargs) triple"
        )
    return result, inputs
