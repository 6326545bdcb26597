"""The capture modes as facts: what each is called, what it can do, what its figures mean.

A capture mode turns what the user runs into nodes that know their module path and phase
(:mod:`fxtui.measure.capture` does the capturing, one file per mode). Everything else — the
command line's ``--capture`` choices, the headless header, the app's status line, and every
"does this apply?" question (can ``fold-bn`` rewrite this model? must a what-if capture it
again?) — reads the mode's :class:`CaptureMode` here instead of testing its name. Adding a
mode is a file in :mod:`fxtui.measure.capture` and one entry in :data:`MODES` (and its line in
the engine's registry).
"""

from __future__ import annotations

from dataclasses import dataclass

from fxtui.core.errors import FxtuiError


@dataclass(frozen=True)
class CaptureMode:
    """One way of turning a model (or a program) into timed nodes."""

    name: str
    """What ``--capture`` and saved reports call it: ``fx``, ``dynamo`` …"""
    title: str
    """How the status line names it: ``torch.fx``, ``TorchDynamo``."""
    how: str
    """What it does, for the headless header and ``--help``."""
    glue: str
    """What the unattributed remainder (the uninstrumented run no node accounts for) is under this mode."""
    choosable: bool = True
    """Offered by ``--capture`` (a training step is chosen with ``--train`` instead)."""
    whole_modules: bool = False
    """Submodules can be nodes of their own (``call_module``), so a change can rewrite them (``fold-bn``)."""
    guards: bool = False
    """The captured code is guarded on global state (TorchDynamo): a what-if that changes that state (autocast)
    must capture the model again under it."""
    splits: bool = False
    """The model may become several graphs with Python between them (graph breaks)."""
    graphs: bool = True
    """Nodes come from FX graphs, which the analysis passes (FLOPs, memory, aten, source lines) walk."""
    training: bool = False
    """A run is a training step: forward, backward and the optimizer."""


#: Every capture mode, by name.
MODES: dict[str, CaptureMode] = {
    m.name: m
    for m in (
        CaptureMode(
            "fx",
            "torch.fx",
            "torch.fx symbolic tracing, one graph",
            "Python glue between ops",
            whole_modules=True,
        ),
        CaptureMode(
            "dynamo",
            "TorchDynamo",
            "TorchDynamo: fxtui's torch.compile backend keeps every graph it captures",
            "Python between graphs and TorchDynamo's guard checks",
            guards=True,
            splits=True,
        ),
        CaptureMode(
            "train",
            "TorchDynamo+AOTAutograd",
            "TorchDynamo and AOTAutograd: a training step's forward, backward and optimizer graphs",
            "Python between graphs (the loss call, autograd's engine, TorchDynamo's guard checks)",
            choosable=False,
            guards=True,
            splits=True,
            training=True,
        ),
        CaptureMode(
            "eager",
            "eager ATen ops",
            "every ATen operator timed as it runs (a dispatch mode), charged to its module; nothing traced",
            "the program's own Python between ops (its loop, data loading code, logging, waits such as .item())",
            graphs=False,
        ),
        CaptureMode(
            "compiled",
            "Inductor kernels",
            "the model compiled by Inductor (torch.compile): every kernel and extern call of a run timed, charged to "
            "the modules of the source nodes it fuses; the eager model measured beside it",
            "the compiled wrapper's own Python between kernels (allocations, checks) and TorchDynamo's guards",
            choosable=False,
            guards=True,
            splits=True,
            graphs=False,
        ),
        CaptureMode(
            "generate",
            "generate() per ATen op",
            "one generate() call per run: every ATen operator timed as it runs (a dispatch mode), charged to its "
            "module and to the prefill or a decode step; nothing traced",
            "the generation loop's own Python between ops (each step's inputs, the stopping check)",
            choosable=False,
            graphs=False,
        ),
    )
}

#: What ``--capture`` accepts: ``auto`` (fx, then TorchDynamo when fx cannot trace) and each choosable mode.
CHOICES: tuple[str, ...] = ("auto", *(name for name, mode in MODES.items() if mode.choosable))


def capture_mode(name: str) -> CaptureMode:
    """The mode called ``name``; :class:`FxtuiError` naming the choices for an unknown one."""
    mode = MODES.get(name)
    if mode is None:
        raise FxtuiError(f"unknown capture {name!r}; choose one of {', '.join(CHOICES)}")
    return mode
