"""Each what-if as a change to a copy of the session's model: the variant to measure, or why it cannot apply.

A variant is a :class:`~fxtui.measure.capture.captured.CapturedModel` wherever the change keeps
the model a graph, so both sides are timed node by node and matched by node name:

* ``channels-last`` and ``int8-dynamic`` change a copy of the captured module and
  capture it again with the session's capture mode (the same names come back: the copy
  has the same module tree and code). The copy shares every parameter and buffer the change
  does not rewrite (:mod:`fxtui.measure.whatif.sharing`): a what-if costs the memory of what it
  changes, not another model;
* ``fold-bn`` rewrites a copy of the fx graph (the BatchNorm nodes are gone, the
  convolutions keep their names);
* ``threads=N`` and ``bf16`` keep the graphs and run them under a context (a thread count,
  CPU autocast). TorchDynamo guards on the autocast state, so a TorchDynamo capture is
  captured again under it.

``compile`` is a plain callable: Inductor's code has no nodes to time, so it is measured
whole. Nothing here changes the session's own model or inputs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import torch
import torch.utils._pytree as pytree
from torch import nn

from fxtui.core.captures import MODES
from fxtui.core.errors import FxtuiError, first_line
from fxtui.core.what_if_catalogue import thread_count
from fxtui.measure.capture.captured import CapturedModel, one_graph_model
from fxtui.measure.inputs import Inputs

if TYPE_CHECKING:
    from fxtui.measure.session import Session

Context = Callable[[], contextlib.AbstractContextManager[Any]]


class CannotApply(Exception):
    """The what-if does not apply to this model; the message is one sentence for the user."""


@dataclasses.dataclass
class Variant:
    """The changed model, ready to be measured against the session's."""

    title: str
    """What was done, one line."""
    inputs: Inputs
    """The inputs the changed model takes (channels-last converts the image tensors)."""
    captured: CapturedModel | None = None
    """The changed model as graphs, timed node by node; ``None`` for a whole-run-only variant."""
    call: Callable[[Inputs], Any] | None = None
    """The changed model as one call, when it is not a captured model (``compile``)."""
    context: Context = contextlib.nullcontext
    """Entered around every run of the changed model (a thread count, autocast)."""
    setup_s: float = 0.0
    """Seconds spent making it: the recapture, or ``torch.compile``'s first call."""
    module: nn.Module | None = None
    """The changed model where neither ``captured`` holds it nor ``call`` shows it (``compile`` of ``generate()``
    calls: its logits are compared)."""


def reason_not(name: str, session: Session) -> str:
    """Why ``name`` cannot apply to ``session``'s model, one sentence; ``""`` when it can (cheap: nothing runs)."""
    if session.captured.capture == "compiled":  # each step already runs the model eager and compiled, interleaved
        return f"{name} is measured on an eager or captured model; this session profiles it compiled (--compile)"
    n = thread_count(name)
    if n is not None:
        return f"the session already runs {n} intra-op threads" if n == session.graph.threads else ""
    if session.captured.training:
        return (
            f"{name} is measured on inference runs; this session profiles a training step, where only threads=N applies"
        )
    check = CHANGES[name].check
    return check(session) if check is not None else ""


def make_variant(name: str, session: Session) -> Variant:
    """The changed model for what-if ``name``; :class:`CannotApply` with one sentence when it does not apply."""
    why = reason_not(name, session)
    if why:
        raise CannotApply(why)
    n = thread_count(name)
    if n is not None:
        return _threads(session, n)
    return CHANGES[name].make(session)


# -- checks ---------------------------------------------------------------------------------


def _image_inputs(session: Session) -> list[torch.Tensor]:
    return [t for t in session.inputs.tensors() if t.dim() == 4 and t.is_floating_point()]


def _floating(session: Session) -> list[torch.Tensor]:
    root = session.captured.root
    tensors = [*root.parameters(), *root.buffers(), *session.inputs.tensors()]
    return [t for t in tensors if t.is_floating_point()]


def _linears(module: nn.Module) -> list[nn.Linear]:
    # Exactly nn.Linear: quantize_dynamic swaps by type, and subclasses (attention's output
    # projection) are kept as they are.
    return [m for m in module.modules() if type(m) is nn.Linear]


def _check_channels_last(session: Session) -> str:
    if not _image_inputs(session):
        return "channels-last changes 4-D image tensors, and none of this model's inputs is one"
    return ""


def _check_bf16(session: Session) -> str:
    floating = _floating(session)
    if not floating:
        return "bf16 changes floating-point arithmetic, and this model has no floating-point parameter or input"
    if all(t.dtype in (torch.bfloat16, torch.float16) for t in floating):
        return f"the model already computes in {str(floating[0].dtype).removeprefix('torch.')}"
    return ""


def _check_fold(session: Session) -> str:
    from fxtui.measure.whatif.fold_bn import find_conv_bn

    mode = session.captured.mode
    if not mode.whole_modules:
        keeps = ", ".join(m.name for m in MODES.values() if m.whole_modules)
        return (
            f"fold-bn rewrites call_module nodes, which only the {keeps} capture keeps; "
            f"this session was captured with {mode.name}"
        )
    if not find_conv_bn(session.gm):
        return "the model has no Conv→BatchNorm pair to fold (an eval-mode BatchNorm right after a convolution)"
    return ""


def _check_int8(session: Session) -> str:
    linears = _linears(session.captured.root)
    if not linears:
        return "int8-dynamic quantizes nn.Linear layers, and this model has none"
    if any(m.weight.dtype != torch.float32 for m in linears):
        return f"int8-dynamic quantizes float32 nn.Linear layers; this model's are {linears[0].weight.dtype}"
    return ""


# -- variants -------------------------------------------------------------------------------


def _copy(session: Session) -> nn.Module:
    """The session's model as modules of its own that share its parameters and buffers."""
    from fxtui.measure.whatif.sharing import copy_sharing_tensors

    try:
        return copy_sharing_tensors(session.captured.root)
    except Exception as e:
        raise CannotApply(f"the model cannot be copied to change it ({type(e).__name__}: {e})") from e


def recapture(session: Session, module: nn.Module, inputs: Inputs) -> CapturedModel:
    """Capture ``module`` (a changed copy of the session's) the way the session's model was captured."""
    from fxtui.measure.capture import capture_with

    captured = session.captured
    options = {"reason": captured.reason} if captured.capture == "dynamo" else {}
    try:
        if captured.renew is not None:  # the same capture's settings (generate: the tokens)
            return captured.renew(module)
        return capture_with(captured.capture, module, inputs, name=session.graph.model, **options)
    except FxtuiError as e:
        raise CannotApply(f"the changed model cannot be captured: {e}") from e


def _same_graphs(session: Session) -> CapturedModel:
    """The session's captured model as a second, independent handle: same graphs, no reference timing."""
    return session.captured.independent()


def _threads(session: Session, n: int) -> Variant:
    from fxtui.measure.analysis.cpu_setup import thread_limit

    return Variant(
        title=f"{n} intra-op thread{'s' if n != 1 else ''} instead of {session.graph.threads}",
        inputs=session.inputs,
        captured=_same_graphs(session),
        context=lambda: thread_limit(n),
    )


def _channels_last(session: Session) -> Variant:
    from fxtui.measure.whatif.sharing import replace_tensors

    started = time.perf_counter()
    model = _copy(session)
    # As Module.to(memory_format=torch.channels_last) would, but in the copy only: the 4-D weights
    # are new tensors, everything else stays shared. Converting the inputs alone (sharing every
    # weight) is not the same change: each convolution then reorders its weight on every call.
    replace_tensors(model, lambda t: t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else None)

    def nhwc(t: torch.Tensor) -> torch.Tensor:
        return t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 and t.is_floating_point() else t

    given = session.inputs
    inputs = Inputs(
        pytree.tree_map_only(torch.Tensor, nhwc, given.args),
        pytree.tree_map_only(torch.Tensor, nhwc, dict(given.kwargs)),
    )
    captured = recapture(session, model, inputs)
    count = len(_image_inputs(session))
    return Variant(
        title=f"model and {count} 4-D input{'s' if count != 1 else ''} in torch.channels_last",
        inputs=inputs,
        captured=captured,
        setup_s=time.perf_counter() - started,
    )


def _autocast() -> contextlib.AbstractContextManager[Any]:
    return torch.autocast("cpu", dtype=torch.bfloat16)


# CPU autocast rather than converting weights and inputs to bfloat16: measured here (AMD EPYC,
# AVX2 without AVX512-BF16 or AMX, torch 2.14, 2 threads), resnet18 5×3×224×224 took 229 ms in
# float32, 10.6 s converted and 6.5 s under autocast; a 4-layer TransformerEncoder (d 256,
# 4×128 tokens) 333 ms, 1.33 s converted and 335 ms under autocast, the output error alike
# (0.39% and 0.39% of the largest output; 1.07% and 1.20%). Autocast keeps the reductions and
# normalisations in float32 as PyTorch's mixed-precision lists say, leaves integer inputs alone,
# and keeps the graph: every node is compared.
def _bf16(session: Session) -> Variant:
    started = time.perf_counter()
    if not session.captured.mode.guards:
        captured = _same_graphs(session)  # autocast acts below the graph, at dispatch
    else:
        with _autocast():  # the capture guards on the autocast state: capture under it
            captured = recapture(session, _copy(session), session.inputs)
    return Variant(
        title="bfloat16 autocast (torch.autocast('cpu', dtype=torch.bfloat16)): convolutions and matmuls in "
        "bfloat16, weights and inputs unchanged",
        inputs=session.inputs,
        captured=captured,
        context=_autocast,
        setup_s=time.perf_counter() - started,
    )


def _fold_bn(session: Session) -> Variant:
    from fxtui.measure.capture.fx import positional_inputs
    from fxtui.measure.whatif.fold_bn import fuse_conv_bn

    started = time.perf_counter()
    original = session.captured
    fused, pairs = fuse_conv_bn(session.gm)
    kept = {n.name for n in fused.graph.nodes}
    captured = one_graph_model(
        fused,
        module_paths={n: p for n, p in original.module_paths.items() if n in kept},
        module_classes=dict(original.module_classes),
        root=fused,
        capture="fx",
        leaf_modules=original.leaf_modules,
    )
    part, root, name = captured.parts[0], original.root, session.graph.model
    captured.call = lambda given: part(*positional_inputs(root, given, name).args)
    n = len(pairs)
    layers = f"{n} BatchNorm layer{'s' if n != 1 else ''}"
    return Variant(
        title=f"fold {layers} into the convolution before {'each' if n != 1 else 'it'}",
        inputs=session.inputs,
        captured=captured,
        setup_s=time.perf_counter() - started,
    )


@contextlib.contextmanager
def _fast_path_off() -> Iterator[None]:
    """nn.TransformerEncoder(Layer) and nn.MultiheadAttention without their fused inference kernels."""
    before = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        torch.backends.mha.set_fastpath_enabled(before)


def _int8_dynamic(session: Session) -> Variant:
    started = time.perf_counter()
    model = _copy(session)
    count = len(_linears(model))
    # TransformerEncoderLayer's fast path hands its nn.Linear weights to one fused kernel, which takes
    # float tensors only: on the quantized copy it fails (a quantized Linear's weight is a method). The
    # copy runs with the fast path off, and the title says so.
    fast_path = any(isinstance(m, nn.TransformerEncoderLayer) for m in model.modules())
    context: Context = _fast_path_off if fast_path else contextlib.nullcontext
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao.quantization announces its move to torchao on every call
        try:
            torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8, inplace=True)
        except Exception as e:
            raise CannotApply(f"dynamic int8 quantization failed: {type(e).__name__}: {first_line(str(e))}") from e
    title = (
        f"dynamic int8 quantization of {count} nn.Linear layer{'s' if count != 1 else ''} "
        "(torch.ao.quantization.quantize_dynamic: int8 weights, activations quantized per batch)"
    )
    if fast_path:
        title += (
            "; the copy runs with nn.TransformerEncoderLayer's fast path off (its fused kernel takes float weights)"
        )
    if session.captured.mode.guards:
        # TorchDynamo cannot record a quantized Linear (its packed weights are a script object): each one
        # breaks the graph and runs outside every node, so per node the Linear layers would look gone.
        return Variant(
            title=title + "; measured whole: TorchDynamo cannot record quantized Linear layers",
            inputs=session.inputs,
            call=lambda given: given.call(model),
            context=context,
            setup_s=time.perf_counter() - started,
        )
    with warnings.catch_warnings(), context():
        warnings.simplefilter("ignore")
        captured = recapture(session, model, session.inputs)
    return Variant(
        title=title, inputs=session.inputs, captured=captured, context=context, setup_s=time.perf_counter() - started
    )


def _compile(session: Session) -> Variant:
    """The model compiled by Inductor with its kernels timed (``--compile``'s capture, without the eager runs beside):
    the whole run and each module's time (Σ of its kernels' medians) before → after."""
    from fxtui.measure.capture.compiled import capture_compiled

    model = _copy(session)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            captured = capture_compiled(model, session.inputs, name=session.graph.model, eager_beside=False)
    except FxtuiError as e:
        raise CannotApply(str(e)) from e
    except Exception as e:
        raise CannotApply(compile_failure(e)) from e
    return Variant(
        title=f"torch.compile (Inductor): the first call compiled it in {captured.seconds:.1f} s; per module, "
        "the Σ of its kernels' medians",
        inputs=session.inputs,
        captured=captured,
        setup_s=captured.seconds,
    )


@dataclasses.dataclass(frozen=True)
class Change:
    """How one what-if of :data:`fxtui.core.what_if_catalogue.CATALOGUE` is made: why it cannot apply, and the copy."""

    make: Callable[[Session], Variant]
    """The changed model (raises :class:`CannotApply` with one sentence when making it fails)."""
    check: Callable[[Session], str] | None = None
    """Why it cannot apply to a session's model, one sentence (``""``: it can); cheap, nothing runs."""


#: Every what-if by its catalogue name (``threads=N`` is made by :func:`_threads` for any N).
CHANGES: dict[str, Change] = {
    "channels-last": Change(_channels_last, _check_channels_last),
    "bf16": Change(_bf16, _check_bf16),
    "fold-bn": Change(_fold_bn, _check_fold),
    "compile": Change(_compile),
    "int8-dynamic": Change(_int8_dynamic, _check_int8),
}


def compile_failure(error: BaseException) -> str:
    """One sentence for a failed ``torch.compile``: the missing C++ compiler, or the innermost error."""
    chain = []
    seen: BaseException | None = error
    while seen is not None and seen not in chain:
        chain.append(seen)
        seen = getattr(seen, "inner_exception", None) or seen.__cause__
    if any(type(e).__name__ == "InvalidCxxCompiler" or "C++ compiler" in str(e) for e in chain):
        return (
            "torch.compile needs a working C++ compiler for CPU code, and Inductor found none (install g++ or set CXX)"
        )
    inner = chain[-1]
    return f"torch.compile failed: {type(inner).__name__}: {first_line(str(inner))}"
