"""What the eager capture found, as torch-free data: its nodes and its outermost modules.

Made in the profiled program (:mod:`fxtui.ops.recorder`), sent to the collector
(:mod:`fxtui.agent.sender`), which names and shows them without importing torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

#: One op's time in a sampled step, from the namer (:meth:`~fxtui.ops.namer.OpNamer.resolve`) through the agent's
#: :class:`~fxtui.wire.agent_messages.Step` to the collector's window: ``(node id, nanoseconds, its output's shape as
#: text, the clock when it began)``. A plain tuple by measurement: a NamedTuple took 8× as long to make (0.22 µs
#: against 0.03 µs an op, in the step's resolution on the program's thread) and pickled 30% larger.
OpTime: TypeAlias = tuple[int, int, str, int]


@dataclass(frozen=True, slots=True)
class EagerNode:
    """One node the eager capture found: where it runs and what it is, torch-free (it crosses processes)."""

    id: int
    root: int
    """Which outermost module it runs under (the order they were first called); -1: outside every module."""
    module_path: str
    """The module's path inside its root (``""``: the root itself); for optimizer ops, the optimizer's class."""
    phase: str
    label: str
    """``convolution``, ``∇convolution_backward``, ``<compiled>``."""
    occurrence: int
    """1 for the first op of this label in its module and phase in a step, 2 for the second …"""
    target: str
    """``aten.convolution``."""
    shape: str = ""
    inputs: tuple[str, ...] = ()
    """Each input's shape, dtype and strides (or its value), once described."""
    source: str = ""
    """The user's line the op comes from, once described."""
    kernel: str = ""
    """A kernel of compiled code: Inductor's name for it (``cpp_fused_…``, ``extern_kernels.convolution``)."""
    fused_nodes: tuple[str, ...] = ()
    """A kernel's source operations, each named by its module (``block1.bn · batch_norm``)."""
    fused_modules: tuple[str, ...] = ()
    """The module path (in the node's root) of each of :attr:`fused_nodes`."""


@dataclass(frozen=True, slots=True)
class RootModule:
    """An outermost module: its class and the class of every module below it (by path)."""

    index: int
    class_name: str
    classes: dict[str, str]
    loss: bool = False
    """A loss module (``nn.CrossEntropyLoss``): a root of its own, never the one steps are counted by."""
