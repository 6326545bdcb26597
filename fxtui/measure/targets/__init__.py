"""Turn the command line's TARGET into a module and example inputs.

TARGET takes four forms:

* a torchvision model name (``resnet18``), built with random weights (:mod:`.torchvision`);
* ``hf:MODEL_TYPE`` (``hf:bert``), a transformers model from its default configuration (:mod:`.hf`);
* ``package.module:attr``, imported, and ``path/to/file.py:attr``, executed (:mod:`.user_code`).

Nothing here downloads anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from fxtui.core.errors import FxtuiError
from fxtui.measure.inputs import Inputs
from fxtui.measure.memory_limit import check_inputs_fit
from fxtui.measure.targets.default_inputs import SEED, convert, inputs_from_shapes, own_dtype

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


@dataclass
class LoadedModel:
    """A module ready to capture and the inputs to run it with."""

    module: torch.nn.Module
    """The model (or the ``--submodule`` part of it), in eval mode, on the CPU."""
    inputs: Inputs
    """Example inputs: tensors, lists of image tensors for detection models, keywords for transformers."""
    name: str
    """Display name: ``resnet18``, ``hf:bert``, ``model.py:Net``; ``.backbone`` appended for a submodule."""
    dtype: str
    """Canonical dtype name of the module's floating point parameters and inputs, e.g. ``float32``."""
    kind: str = "module"
    """What was loaded: ``classification``, ``segmentation``, ``detection``, ``video``,
    ``optical_flow`` for torchvision models, ``transformers``, ``module`` otherwise."""
    input_hint: str = ""
    """For inputs fxtui made up (a transformers model's): what was given and what else the model takes,
    added to the sentence when they do not run it."""

    @property
    def input_desc(self) -> tuple[str, ...]:
        """One description per input, e.g. ``1×3×224×224`` or ``input_ids: 1×128``."""
        return self.inputs.describe()


def parse_dtype(name: str) -> tuple[str, torch.dtype]:
    """The canonical name (``float16``) and torch dtype for a ``--dtype`` spelling."""
    dtype = DTYPES.get(name.strip().lower())
    if dtype is None:
        raise FxtuiError(f"unknown dtype {name!r}; choose one of float32, float16, bfloat16, float64")
    return str(dtype).removeprefix("torch."), dtype


def load_target(
    target: str,
    *,
    input_shapes: Sequence[tuple[int, ...]] | None = None,
    dtype: str | None = None,
    submodule: str | None = None,
    hf_config: Sequence[tuple[str, str]] = (),
    causal_lm: bool = False,
) -> LoadedModel:
    """Build the module TARGET names and example inputs for it.

    ``input_shapes`` (one per positional input) replaces the default inputs with
    ``torch.randn`` tensors, or random integers in the range of a factory's integer
    example input in the same position; for torchvision detection models each shape is one image
    (``3×H×W``, or ``N×3×H×W`` for N images); for ``hf:`` models the one shape is the token
    ids' (or the image's). ``dtype`` converts the module and inputs; ``causal_lm`` builds an
    ``hf:`` model with its language-model head (``AutoModelForCausalLM``, for ``--generate``). ``submodule`` selects a
    part of the model by its path (``backbone``, ``layer1.0``); unless shapes are given, its
    inputs are captured from one eager run of the whole model. Every problem the user can
    fix raises :class:`FxtuiError`.
    """
    from fxtui.measure.targets import hf
    from fxtui.measure.targets.hf_inputs import input_hint
    from fxtui.measure.targets.submodule import select_submodule
    from fxtui.measure.targets.torchvision import load_torchvision
    from fxtui.measure.targets.user_code import load_attr_target

    explicit = parse_dtype(dtype) if dtype else None
    shapes = [tuple(s) for s in input_shapes] if input_shapes else None
    if not target.strip():
        raise FxtuiError("name a model to profile, e.g. resnet18, hf:bert, package.module:attr or model.py:attr")
    if hf_config and not target.startswith(hf.PREFIX):
        raise FxtuiError("--hf-config applies to hf: targets only")
    # Seeded so the random weights (and so the timings' inputs) are the same each run.
    torch.manual_seed(SEED)
    inputs: Inputs | None
    hint = ""
    if target.startswith(hf.PREFIX):
        if shapes is not None and len(shapes) != 1:
            raise FxtuiError(f"{target} takes one --input-shape (its token ids' or image's), not {len(shapes)}")
        if shapes is not None:
            check_inputs_fit(shapes, itemsize=8, dtype="token ids (int64)")  # an image takes less
        module, inputs = hf.load_hf(
            target[len(hf.PREFIX) :].strip(), hf_config, shapes[0] if shapes else None, causal_lm=causal_lm
        )
        name, kind = target, "transformers"
        hint = input_hint(module, name, inputs)
        shapes = None  # applied to the default inputs already
    elif ":" in target:
        module, inputs, name = load_attr_target(target)
        kind = "module"
    else:
        module, args, kind = load_torchvision(target)
        inputs, name = Inputs(args), target
    if explicit is not None:
        module = module.to(device="cpu", dtype=explicit[1]).eval()
        if inputs is not None:
            inputs = Inputs(convert(inputs.args, explicit[1]), convert(dict(inputs.kwargs), explicit[1]))
    else:
        # Without --dtype the model keeps its own (a float16 or mixed model stays so);
        # generated inputs take the dtype of its first floating point parameter.
        module = module.to(device="cpu").eval()
    torch_dtype = explicit[1] if explicit else own_dtype(module)

    if submodule:
        module, inputs = select_submodule(module, inputs, submodule, name, capture=shapes is None)
        name = f"{name}.{submodule}"
        kind = "module"

    if shapes is not None:
        # Before a byte is allocated: a 40 GB input ended in the allocator's own error, an input that fits the
        # machine but not the container in a kill (137) without a word.
        check_inputs_fit(shapes, itemsize=torch_dtype.itemsize, dtype=str(torch_dtype).removeprefix("torch."))
        inputs = Inputs(
            inputs_from_shapes(
                module, shapes, torch_dtype, name, detection=kind == "detection", examples=inputs.args if inputs else ()
            )
        )
    elif inputs is None:
        raise FxtuiError(f"{name} comes without example inputs; give their shapes with --input-shape, e.g. 1,3,224,224")
    return LoadedModel(
        module=module,
        inputs=inputs,
        name=name,
        dtype=str(torch_dtype).removeprefix("torch."),
        kind=kind,
        input_hint=hint if not submodule else "",
    )
