"""Turn the command line's TARGET into a module and example inputs.

TARGET takes three forms:

* a torchvision model name (``resnet18``), built with random weights;
* ``package.module:attr``, imported;
* ``path/to/file.py:attr``, executed as a fresh module.

``attr`` is an ``nn.Module`` subclass (built with no arguments), a module instance,
or a factory called with no arguments that returns a module or a
``(module, example_inputs)`` pair.

Nothing here downloads anything: torchvision builders get ``weights=None`` and, where
they take one, ``weights_backbone=None``.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import itertools
import os
import re
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from fxtui.engine.errors import FxtuiError

#: Accepted ``--dtype`` spellings and the torch dtype each means.
DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float": torch.float32,
    "fp32": torch.float32,
    "float16": torch.float16,
    "half": torch.float16,
    "fp16": torch.float16,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float64": torch.float64,
    "double": torch.float64,
    "fp64": torch.float64,
}

#: Segmentation models are fully convolutional and accept any size. Their weights
#: metadata says 520, but at 520 a dilated ResNet-101 takes seconds per run on a CPU,
#: and the profiler reruns the model continuously: 224 exercises the same operators
#: about five times faster. ``--input-shape 1,3,520,520`` restores the reference size.
SEGMENTATION_SIDE = 224
#: Detection models resize their images internally (GeneralizedRCNNTransform), so the
#: input size mostly affects the preprocessing; 320 is the size of the cheapest models.
DETECTION_SIDE = 320
#: Video classifiers take clips of this many frames (MViT requires exactly 16).
VIDEO_FRAMES = 16

_SEED = 0
_file_counter = itertools.count()


@dataclass
class LoadedModel:
    """A module ready to trace and the positional inputs to run it with."""

    module: torch.nn.Module
    """The model (or the ``--submodule`` part of it), in eval mode, on the CPU."""
    inputs: tuple[Any, ...]
    """Positional example inputs: tensors, or lists of image tensors for detection models."""
    name: str
    """Display name: ``resnet18``, ``pkg.mod:make``, ``model.py:Net``; ``.backbone`` appended for a submodule."""
    input_desc: tuple[str, ...]
    """One description per input, e.g. ``1×3×224×224`` or ``list[3×320×320]``."""
    dtype: str
    """Canonical dtype name of the module's floating point parameters and inputs, e.g. ``float32``."""
    kind: str = "module"
    """What was loaded: ``classification``, ``segmentation``, ``detection``, ``video``,
    ``optical_flow`` for torchvision models, ``module`` otherwise."""


def parse_dtype(name: str) -> tuple[str, torch.dtype]:
    """The canonical name (``float16``) and torch dtype for a ``--dtype`` spelling."""
    dtype = DTYPES.get(name.strip().lower())
    if dtype is None:
        raise FxtuiError(f"unknown dtype {name!r}; choose one of float32, float16, bfloat16, float64")
    return str(dtype).removeprefix("torch."), dtype


def describe_value(value: Any) -> str:
    """A short description of an input: ``1×3×224×224``, ``list[3×320×320]``, ``int``."""
    if isinstance(value, torch.Tensor):
        return "×".join(str(s) for s in value.shape) if value.dim() else "scalar"
    if isinstance(value, (list, tuple)):
        kind = "list" if isinstance(value, list) else "tuple"
        return f"{kind}[{', '.join(describe_value(v) for v in value)}]"
    if isinstance(value, dict):
        return "dict[" + ", ".join(f"{k}: {describe_value(v)}" for k, v in value.items()) + "]"
    if isinstance(value, (bool, int, float)) or value is None:
        return repr(value)
    return type(value).__name__


def load_target(
    target: str,
    *,
    input_shapes: Sequence[tuple[int, ...]] | None = None,
    dtype: str | None = None,
    submodule: str | None = None,
) -> LoadedModel:
    """Build the module TARGET names and example inputs for it.

    ``input_shapes`` (one per positional input) replaces the default inputs with
    ``torch.randn`` tensors, or random integers in the range of a factory's integer
    example input in the same position; for torchvision detection models each shape is one image
    (``3×H×W``, or ``N×3×H×W`` for N images). ``dtype`` converts the module and inputs.
    ``submodule`` selects a part of the model by its path (``backbone``,
    ``layer1.0``); unless shapes are given, its inputs are captured from one eager
    run of the whole model. Every problem the user can fix raises :class:`FxtuiError`.
    """
    explicit = parse_dtype(dtype) if dtype else None
    shapes = [tuple(s) for s in input_shapes] if input_shapes else None
    if not target.strip():
        raise FxtuiError("name a model to profile, e.g. resnet18, package.module:attr or model.py:attr")
    # Seeded so the random weights (and so the timings' inputs) are the same each run.
    torch.manual_seed(_SEED)
    if ":" in target:
        module, inputs, name = _load_attr_target(target)
        kind = "module"
    else:
        module, inputs, kind = _load_torchvision(target)
        name = target
    if explicit is not None:
        module = module.to(device="cpu", dtype=explicit[1]).eval()
        if inputs is not None:
            inputs = tuple(_convert(v, explicit[1]) for v in inputs)
    else:
        # Without --dtype the model keeps its own (a float16 or mixed model stays so);
        # generated inputs take the dtype of its first floating point parameter.
        module = module.to(device="cpu").eval()
    torch_dtype = explicit[1] if explicit else _own_dtype(module)
    dtype_name = str(torch_dtype).removeprefix("torch.")

    if submodule:
        module, inputs = _select_submodule(module, inputs, submodule, name, capture=shapes is None)
        name = f"{name}.{submodule}"
        kind = "module"

    if shapes is not None:
        inputs = _inputs_from_shapes(
            module, shapes, torch_dtype, name, detection=kind == "detection", examples=inputs or ()
        )
    elif inputs is None:
        raise FxtuiError(f"{name} comes without example inputs; give their shapes with --input-shape, e.g. 1,3,224,224")
    return LoadedModel(
        module=module,
        inputs=inputs,
        name=name,
        input_desc=tuple(describe_value(v) for v in inputs),
        dtype=dtype_name,
        kind=kind,
    )


# -- torchvision -----------------------------------------------------------------


def _load_torchvision(name: str) -> tuple[torch.nn.Module, tuple[Any, ...], str]:
    import torchvision.models as tvm

    names = tvm.list_models()
    if name not in names:
        hint = ""
        if name.endswith(".py") or "/" in name:
            hint = f"; to load from a file write {name}:ClassOrFactory"
        elif "." in name:
            hint = f"; to load from a Python module write {name}:ClassOrFactory"
        else:
            close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
            if close:
                listed = ", ".join(close[:-1]) + " or " + close[-1] if len(close) > 1 else close[0]
                hint = f"; did you mean {listed}?"
        raise FxtuiError(f"unknown model {name!r}{hint}")
    builder = tvm.get_model_builder(name)
    kwargs: dict[str, Any] = {"weights": None}
    # Detection and segmentation builders fetch ImageNet backbone weights unless told not to.
    if "weights_backbone" in inspect.signature(builder).parameters:
        kwargs["weights_backbone"] = None
    with warnings.catch_warnings():
        # torchvision warns about its own defaults (e.g. init_weights for GoogLeNet);
        # nothing the user can act on.
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", FutureWarning)
        module = tvm.get_model(name, **kwargs)
    kind = _torchvision_kind(builder.__module__)
    return module, _torchvision_inputs(name, module, kind), kind


def _torchvision_kind(builder_module: str) -> str:
    for kind in ("detection", "segmentation", "video", "optical_flow"):
        if builder_module.startswith(f"torchvision.models.{kind}"):
            return kind
    return "classification"


def _torchvision_inputs(name: str, module: torch.nn.Module, kind: str) -> tuple[Any, ...]:
    gen = torch.Generator().manual_seed(_SEED)
    if kind == "detection":
        return ([torch.randn(3, DETECTION_SIDE, DETECTION_SIDE, generator=gen)],)
    if kind == "segmentation":
        return (torch.randn(1, 3, SEGMENTATION_SIDE, SEGMENTATION_SIDE, generator=gen),)
    if kind == "optical_flow":
        # RAFT needs sides that are multiples of 8; its weights metadata gives the smallest size it supports.
        h, w = (-(-s // 8) * 8 for s in _weights_meta(name).get("min_size", (128, 128)))
        return (torch.randn(1, 3, h, w, generator=gen), torch.randn(1, 3, h, w, generator=gen))
    h, w = _image_size(name, module)
    if kind == "video":
        return (torch.randn(1, 3, VIDEO_FRAMES, h, w, generator=gen),)
    return (torch.randn(1, 3, h, w, generator=gen),)


def _first_weights(name: str) -> Any:
    import torchvision.models as tvm

    try:
        return next(iter(tvm.get_model_weights(name)))
    except (ValueError, StopIteration):
        return None


def _weights_meta(name: str) -> dict[str, Any]:
    weights = _first_weights(name)
    return dict(weights.meta) if weights is not None else {}


def _image_size(name: str, module: torch.nn.Module) -> tuple[int, int]:
    # A vision transformer built without weights has a fixed size of its own, which can
    # differ from its first weights' (vit_h_14's weights are for 518, the random model 224).
    size = getattr(module, "image_size", None)
    if isinstance(size, int):
        return size, size
    weights = _first_weights(name)
    if weights is not None:
        crop = getattr(weights.transforms(), "crop_size", None)
        if crop:
            return (crop[0], crop[-1])
        min_size = weights.meta.get("min_size")
        if min_size:
            return (max(min_size[0], 224), max(min_size[1], 224))
    return 224, 224


# -- package.module:attr and file.py:attr ------------------------------------------


def _load_attr_target(target: str) -> tuple[torch.nn.Module, tuple[Any, ...] | None, str]:
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
        name = f"{path.name}:{attr}"
        with _on_sys_path(path.resolve().parent):
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
    if not path.exists():
        raise FxtuiError(f"no such file: {path}")
    if not path.is_file():
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
        raise FxtuiError(f"running {path} failed with {_exception_text(e)}") from e
    return py_module


def _import(module_name: str) -> Any:
    if not all(part.isidentifier() for part in module_name.split(".")):
        raise FxtuiError(f"{module_name!r} is not a Python module name; for a file write path/file.py:attr")
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and (module_name == e.name or module_name.startswith(e.name + ".")):
            raise FxtuiError(f"no module named {e.name!r} (is it installed, or on PYTHONPATH?)") from e
        raise FxtuiError(f"importing {module_name} failed with {_exception_text(e)}") from e
    except (Exception, SystemExit) as e:
        raise FxtuiError(f"importing {module_name} failed with {_exception_text(e)}") from e


def _get_attr(py_module: Any, attr: str, where: str) -> Any:
    obj = py_module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise FxtuiError(f"{where} has no attribute {attr!r}") from None
    return obj


def _instantiate(obj: Any, name: str) -> tuple[torch.nn.Module, tuple[Any, ...] | None]:
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
        raise FxtuiError(f"{what} {name} raised {_exception_text(e)}") from e
    inputs: tuple[Any, ...] | None = None
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], torch.nn.Module):
        result, example = result
        # A tuple is the positional inputs; anything else is the one input.
        inputs = tuple(example) if isinstance(example, tuple) else (example,)
    if not isinstance(result, torch.nn.Module):
        raise FxtuiError(
            f"{name} returned a {type(result).__name__}, not an nn.Module or a (module, example_inputs) pair"
        )
    return result, inputs


# -- inputs ------------------------------------------------------------------------


def _own_dtype(module: torch.nn.Module) -> torch.dtype:
    """The dtype of the module's first floating point parameter or buffer (float32 when it has none)."""
    for tensor in (*module.parameters(), *module.buffers()):
        if tensor.is_floating_point():
            return tensor.dtype
    return torch.float32


def _convert(value: Any, dtype: torch.dtype) -> Any:
    """Move tensors to the CPU and floating point ones to ``dtype``, through lists, tuples and dicts."""
    if isinstance(value, torch.Tensor):
        value = value.cpu()
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, (list, tuple)):
        return type(value)(_convert(v, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _convert(v, dtype) for k, v in value.items()}
    return value


def _inputs_from_shapes(
    module: torch.nn.Module,
    shapes: list[tuple[int, ...]],
    dtype: torch.dtype,
    name: str,
    *,
    detection: bool,
    examples: Sequence[Any] = (),
) -> tuple[Any, ...]:
    """Random inputs of the given shapes: like the example input in the same position where
    there is one (token ids stay integers in their range), else floating point ``dtype``."""
    gen = torch.Generator().manual_seed(_SEED)
    if detection:
        # Detection models take one list of 3×H×W images; N×3×H×W means N images.
        images: list[torch.Tensor] = []
        for shape in shapes:
            if len(shape) == 4:
                images.extend(torch.randn(shape, generator=gen).to(dtype).unbind(0))
            elif len(shape) == 3:
                images.append(torch.randn(shape, generator=gen).to(dtype))
            else:
                raise FxtuiError(f"{name} takes 3×H×W images; cannot use the shape {'×'.join(map(str, shape))}")
        return (images,)
    low, high = _positional_arity(module)
    if len(shapes) < low or (high is not None and len(shapes) > high):
        expected = str(low) if low == high else f"{low} to {high}" if high is not None else f"at least {low}"
        raise FxtuiError(
            f"{name} takes {expected} positional input{'s' if expected != '1' else ''}, "
            f"but {len(shapes)} --input-shape {'was' if len(shapes) == 1 else 'were'} given"
        )
    return tuple(
        _random_like(examples[i] if i < len(examples) else None, shape, dtype, gen) for i, shape in enumerate(shapes)
    )


def _random_like(example: Any, shape: tuple[int, ...], dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    """A random tensor of ``shape`` with the dtype and, for integers, the value range of ``example``.

    An embedding's indices must stay integers below its table size, a mask stays
    boolean; anything else (or no example) is ``randn`` in ``dtype``.
    """
    if not isinstance(example, torch.Tensor) or example.is_floating_point() or example.is_complex():
        return torch.randn(shape, generator=gen).to(dtype)
    if example.dtype is torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    low, high = (int(example.min()), int(example.max()) + 1) if example.numel() else (0, 2)
    return torch.randint(low, high, shape, generator=gen).to(example.dtype)


def _positional_arity(module: torch.nn.Module) -> tuple[int, int | None]:
    """How many positional inputs ``module.forward`` needs, and at most takes (None: no limit)."""
    try:
        params = inspect.signature(module.forward).parameters.values()
    except (TypeError, ValueError):
        return 0, None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = sum(1 for p in positional if p.default is p.empty)
    unlimited = any(p.kind is p.VAR_POSITIONAL for p in params)
    return required, None if unlimited else len(positional)


# -- --submodule --------------------------------------------------------------------


class _Captured(Exception):
    """Raised by the capture hook to stop the full model once the submodule's inputs are known."""


def _select_submodule(
    module: torch.nn.Module, inputs: tuple[Any, ...] | None, path: str, name: str, *, capture: bool
) -> tuple[torch.nn.Module, tuple[Any, ...] | None]:
    try:
        sub = module.get_submodule(path)
    except AttributeError:
        raise FxtuiError(f"{name} has no submodule {path!r}; {_child_hint(module, path)}") from None
    if not capture:
        return sub, None
    if inputs is None:
        raise FxtuiError(
            f"{name} comes without example inputs to capture {path}'s from; give its shapes with --input-shape"
        )
    return sub, _capture_inputs(module, sub, inputs, path, name)


def _child_hint(module: torch.nn.Module, path: str) -> str:
    """Name a few valid paths: the children of the deepest part of ``path`` that exists."""
    parent_path = path
    while True:
        parent_path = parent_path.rpartition(".")[0]
        try:
            parent = module.get_submodule(parent_path)
            break
        except AttributeError:
            continue
    children = [f"{parent_path}.{n}" if parent_path else n for n, _ in parent.named_children()]
    if not children:
        return f"{parent_path or 'it'} has no submodules"
    shown = ", ".join(children[:8]) + (", …" if len(children) > 8 else "")
    return f"try one of {shown}"


def _capture_inputs(
    module: torch.nn.Module, sub: torch.nn.Module, inputs: tuple[Any, ...], path: str, name: str
) -> tuple[Any, ...]:
    """Run ``module`` eagerly once and return the positional arguments ``sub`` is first called with."""
    captured: list[tuple[Any, ...]] = []

    def hook(_: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if kwargs:
            # The traced graph takes positional inputs only: place keywords by the signature.
            bound = inspect.signature(sub.forward).bind(*args, **kwargs)
            if bound.kwargs:
                raise FxtuiError(f"{path} is called with keyword-only arguments; give --input-shape instead")
            args = bound.args
        captured.append(tuple(args))
        raise _Captured

    handle = sub.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        with torch.inference_mode():
            module(*inputs)
    except _Captured:
        pass
    except FxtuiError:
        raise
    except Exception as e:
        raise FxtuiError(f"running {name} to capture the inputs of {path} failed with {_exception_text(e)}") from e
    finally:
        handle.remove()
    if not captured:
        raise FxtuiError(f"{name} never calls {path} on its example inputs; give its shapes with --input-shape")
    # Cloned outside inference mode: inference tensors would fail in any later run that
    # is not itself under inference_mode (parameters still require grad).
    return tuple(_clone(v) for v in captured[0])


def _clone(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_clone(v) for v in value)
    if isinstance(value, dict):
        return type(value)((k, _clone(v)) for k, v in value.items())
    return value


def _exception_text(e: BaseException) -> str:
    """``ValueError: message`` on one line."""
    message = " ".join(str(e).split())
    if len(message) > 200:
        message = message[:199] + "…"
    return f"{type(e).__name__}: {message}" if message else type(e).__name__
