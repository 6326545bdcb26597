"""What the per-op timer writes while it records a step: one typed record per event, in the order they happened.

The recorder (:mod:`fxtui.ops.recorder`) writes them and the namer (:mod:`fxtui.ops.namer`) reads
them; nothing else looks inside. Each kind of event is a named tuple of its own, so the reader
dispatches on the type (``type(r) is OpCall``) and reads fields by name. The hot path, one record
per ATen op, builds them with ``tuple.__new__`` (:func:`make`): a C call, as cheap as a tuple
literal, where the class's own ``__new__`` would add a Python frame to every op.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class OpCall(NamedTuple):
    """One ATen op: its overload, the clock around its own call, the autograd node running it, its output."""

    op: Any
    """The ``OpOverload`` (``aten.convolution.default``)."""
    t0: int
    t1: int
    grad_fn: Any
    """The autograd node whose backward runs this op (None in forward)."""
    shape: Any
    """The output tensor's ``torch.Size`` (None for other outputs)."""
    inputs: tuple[str, ...] | None = None
    """Each input described (shape, dtype, strides), on the steps that describe new nodes."""
    source: str | None = None
    """The user's line the op comes from, on the steps that describe new nodes."""
    flow: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    """Outside every module: the ids of its input tensors and of its output (which root's output it consumes)."""


class ModuleEnter(NamedTuple):
    """A module's call begins."""

    module: Any
    t: int
    seq: int
    """The autograd sequence-number counter: nodes made from here on belong to this module's stretch."""
    compiled: bool = False
    """A compiled module: it runs without the dispatch mode (its kernels are timed as :class:`KernelCall`)."""
    inputs: tuple[int, ...] = ()
    """An outermost module's call: the ids of the tensors it is given (a loss module given a model's output)."""


class ModuleExit(NamedTuple):
    """A module's call ends."""

    module: Any
    t: int
    seq: int
    compiled: bool = False
    outputs: tuple[int, ...] = ()
    """An outermost module's: the ids of the tensors it returned (the ops that consume them are its loss)."""


class PhaseEnter(NamedTuple):
    """A phase of the step begins (``optimizer``, ``backward``, ``data``, ``closure``, ``prefill``, ``decode``)."""

    phase: str
    t: int
    owner: Any = None
    """Who runs it: the optimizer, or a :class:`Named` function (``clip_grad_norm_``)."""


class PhaseExit(NamedTuple):
    """The innermost phase ends."""

    phase: str
    t: int


class KernelCall(NamedTuple):
    """One kernel of the program's compiled code (:mod:`fxtui.ops.kernels`)."""

    kernel: Any
    """What it computes and where it comes from (``RunKernel``)."""
    t0: int
    t1: int
    grad_fn: Any


class CompiledCall(NamedTuple):
    """One call of a compiled graph's wrapper, kernels included."""

    t0: int
    t1: int
    grad_fn: Any


class Named:
    """Names the owner of a phase that is a function, not an object (``clip_grad_norm_``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


#: An op's output shape that was not read (the native timer's rows): the namer gives it its node's known shape.
UNKNOWN_SHAPE: Any = type("UnknownShape", (), {"__repr__": lambda self: "UNKNOWN_SHAPE"})()

Record = OpCall | ModuleEnter | ModuleExit | PhaseEnter | PhaseExit | KernelCall | CompiledCall

#: Builds a record without a Python frame, every field given: ``make(OpCall, (op, t0, t1, grad_fn, shape, None, None,
#: None))``.
make = tuple.__new__
