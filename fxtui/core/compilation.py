"""A compiled model as data: what compiling cost, and each module's eager time beside its compiled time.

Torch-free, for the app, the reports and ``fxtui diff``. With ``--compile`` the rows are the
kernels and extern calls of the model compiled by Inductor (:mod:`fxtui.measure.capture.compiled`);
each row carries the source nodes it fuses and is charged to their modules' common ancestor.
Beside them, every step also runs the model eagerly, uninstrumented and with its ATen ops timed,
so each module's eager time (Σ of its ops' medians) is measured in the same session as its
compiled time (Σ of its kernels' medians).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from fxtui.core.nodes import ModuleInfo, NodeInfo, module_ancestors
from fxtui.core.units import format_ratio, format_seconds

#: Modes ``--compile-mode`` offers: Inductor's, less those that need a GPU (CUDA graphs).
COMPILE_MODES = ("default", "max-autotune-no-cudagraphs")


@dataclass(frozen=True, slots=True)
class CompiledSummary:
    """What compiling the model cost and what the eager model measured beside it (seconds)."""

    mode: str = "default"
    """Inductor's mode (``torch.compile(mode=…)``)."""
    compile_s: float = 0.0
    """Wall time of the first compiled call: TorchDynamo, AOTAutograd, Inductor and the C++ builds."""
    graphs: int = 0
    """Graphs Inductor compiled for the model."""
    kernels: int = 0
    """Kernels Inductor generated (C++ loops, fused or not) in them."""
    externs: int = 0
    """Calls of existing kernels (``extern_kernels.convolution``, ``addmm``, ATen fallbacks)."""
    eager_s: float | None = None
    """Median wall time of the eager model, uninstrumented, interleaved with the compiled runs."""
    eager_modules: Mapping[str, float] = field(default_factory=dict)
    """Module path → Σ of the eager model's ATen op medians in its subtree (inclusive)."""
    root_reason: str = ""
    """Why some compiled time is charged to the root and not to a named module, when some is."""
    recompiles: tuple[str, ...] = ()
    """Why TorchDynamo compiled again after the capture (the latest few): its guard's failure and the user's line.
    A recompiled graph runs untimed, in the unattributed remainder."""

    def eager_of(self, path: str) -> float | None:
        """The module's eager time, or None where the eager run has no op in it."""
        return self.eager_modules.get(path)

    def lines(self, compiled_s: float | None, fidelity: float | None, overhead: float | None) -> list[str]:
        """The header's lines: the compile, the runs compiled against eager, the kernel timings' fidelity."""
        graphs = f"{self.graphs} graph{'s' if self.graphs != 1 else ''}"
        kernels = f"{self.kernels + self.externs} kernels ({self.kernels} generated, {self.externs} extern calls)"
        ratio = compiled_s / self.eager_s if compiled_s and self.eager_s else None
        return [
            f"compiled   Inductor ({self.mode}) in {format_seconds(self.compile_s)}: {graphs}, {kernels}",
            f"vs eager   {format_seconds(self.eager_s)} eager median → {format_seconds(compiled_s)} compiled median "
            f"(×{format_ratio(ratio)}), uninstrumented runs interleaved",
            f"kernels    fidelity {format_ratio(fidelity)} (Σ kernel medians ÷ uninstrumented compiled run), "
            f"overhead {format_ratio(overhead)} (timed ÷ untimed compiled run)",
            *([f"root       {self.root_reason}"] if self.root_reason else []),
            *(f"recompile  {reason}" for reason in self.recompiles),
        ]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        out = asdict(self)
        out["eager_modules"] = dict(self.eager_modules)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CompiledSummary:
        """The summary :meth:`to_dict` wrote (fields a file lacks keep their defaults)."""
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        if "recompiles" in known:
            known["recompiles"] = tuple(str(r) for r in known["recompiles"])
        if "eager_modules" in known:
            known["eager_modules"] = {str(k): float(v) for k, v in dict(known["eager_modules"]).items()}
        return cls(**known)


def module_comparison(path: str, eager_s: float | None, compiled_s: float, fused: tuple[str, ...] = ()) -> str:
    """``layer3: 4.1 ms eager → 1.9 ms compiled (×0.46)``; a module with no kernel of its own,
    ``maxpool: 11.1 ms eager → fused into (root)`` (``fused``: :func:`fused_into`)."""
    name = path or "(root)"
    if not eager_s:
        return f"{name}: {format_seconds(compiled_s)} compiled (no eager op)"
    if not compiled_s:
        return f"{name}: {format_seconds(eager_s)} eager → {fused_text(fused)}"
    ratio = compiled_s / eager_s
    return f"{name}: {format_seconds(eager_s)} eager → {format_seconds(compiled_s)} compiled (×{ratio:.2f})"


def fused_into(module: ModuleInfo, nodes: Mapping[str, NodeInfo]) -> tuple[str, ...]:
    """The modules whose kernels compute some of ``module``'s source nodes while charged above it, graph order.

    For a module Inductor fused whole into its ancestors' kernels (resnet18's ``maxpool``, fused with ``bn1``
    and ``relu`` into a kernel of the root), where its eager work went. ``nodes``: the graph's nodes by name.
    """
    return tuple(dict.fromkeys(nodes[name].module_path for name in module.fused if name in nodes))


def fused_text(fused: tuple[str, ...], most: int | None = None) -> str:
    """Where a module with no kernel of its own has its work: ``fused into (root)``, ``fused into layer1, layer1.0``
    (``most`` names at most that many, then ``+1``); ``no kernel`` when no kernel computes any of it (its ops were
    views, or compiling removed them)."""
    if not fused:
        return "no kernel"
    named = ", ".join(path or "(root)" for path in fused[:most])
    more = f" +{len(fused) - most}" if most is not None and len(fused) > most else ""
    return f"fused into {named}{more}"


def kernel_type(label: str) -> str:
    """A kernel row's type: ``fused`` (``bn+relu (fused)``), ``kernel`` (``conv (kernel)``), else the label itself
    (an extern call's operation, ``convolution``)."""
    return "fused" if label.endswith(" (fused)") else "kernel" if label.endswith(" (kernel)") else label


def kernel_text(kernel: str, fused_nodes: tuple[str, ...]) -> str:
    """A kernel row's node text: ``cpp_fused_relu_3  ← layer1.0.bn1 · batch_norm, layer1.0 · relu``."""
    return f"{kernel}  ← " + ", ".join(fused_nodes)


def common_ancestor(paths: list[str] | tuple[str, ...]) -> str:
    """The deepest module path that holds every one of ``paths`` (``""``: the root)."""
    if not paths:
        return ""
    chains = [module_ancestors(p) for p in paths]
    common = ""
    for level in zip(*chains, strict=False):
        if all(p == level[0] for p in level):
            common = level[0]
        else:
            break
    return common


def even_split(fused_modules: tuple[str, ...], median_s: float) -> dict[str, float]:
    """A kernel's time split evenly over its fused source nodes, summed per module (the detail pane's split)."""
    if not fused_modules:
        return {}
    share = median_s / len(fused_modules)
    out: dict[str, float] = {}
    for path in fused_modules:
        out[path] = out.get(path, 0.0) + share
    return out
