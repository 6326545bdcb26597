"""A profile's results, row by row: each node's facts, statistics and rates; each module's totals.

What reports, exports and ``fxtui diff`` work with (:mod:`fxtui.report.data`). A row reads
every field of its parts as its own (``row.op``, ``row.p90_s``) and writes itself as one flat
JSON mapping, which it reads back from files saved before a field existed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from fxtui.core.nodes import NodeInfo, NodeStats


@dataclass(frozen=True, slots=True)
class Rates:
    """What a node achieved at its median, from its work: rates and its place on the roofline."""

    gflops_s: float | None = None
    """Achieved GFLOP/s."""
    gbytes_s: float | None = None
    """Achieved GB/s (bytes read plus written)."""
    intensity: float | None = None
    """FLOPs per byte."""
    bound: str = ""
    """``compute-bound`` or ``memory-bound`` against this machine's measured peaks."""
    roofline_fraction: float | None = None
    """Achieved share of what the roofline allows at this intensity."""


#: Fields a saved row leaves out: the UI's sparkline samples and text only the live app shows.
_NOT_SAVED = frozenset({"recent", "node_text", "module_repr", "input_shapes"})


@dataclass(frozen=True, slots=True)
class NodeRow:
    """One node in a result: its facts, its statistics and the rates derived from both."""

    info: NodeInfo
    stats: NodeStats
    rates: Rates = Rates()

    @property
    def name(self) -> str:
        """The node's stable display name."""
        return self.info.name

    @property
    def module_path(self) -> str:
        """Path of the module the node runs in (``""``: the root)."""
        return self.info.module_path

    @property
    def median_s(self) -> float:
        """Median time of one run of the node, seconds."""
        return self.stats.median_s

    def __getattr__(self, name: str) -> Any:
        """Every field of the node's facts, statistics and rates reads as the row's own: ``row.op``,
        ``row.shape``, ``row.p90_s``, ``row.count``, ``row.pct``, ``row.gflops_s`` …"""
        if name in ("info", "stats", "rates"):  # not set yet (while unpickling): no parts to read through
            raise AttributeError(name)
        for part in (self.info, self.stats, self.rates):
            if name in _FIELDS[type(part)]:
                return getattr(part, name)
        raise AttributeError(f"'NodeRow' object has no attribute {name!r}")

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *(name for names in _FIELDS.values() for name in names)})

    def to_dict(self) -> dict[str, Any]:
        """One flat JSON-ready mapping: facts, statistics, ``noisy``/``unsteady`` and rates."""
        out: dict[str, Any] = {}
        for part in (self.info, self.stats, self.rates):
            out.update({f.name: getattr(part, f.name) for f in fields(part) if f.name not in _NOT_SAVED})
        out["noisy"] = self.stats.noisy
        out["unsteady"] = self.stats.unsteady
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NodeRow:
        """The row :meth:`to_dict` wrote (also from files saved before a field existed)."""
        info = _build(NodeInfo, data, node_text="", index=0, op="", target="", type_name="")
        return cls(
            info=replace(
                info,
                gradients=tuple(info.gradients),
                fused_nodes=tuple(info.fused_nodes),
                fused_modules=tuple(info.fused_modules),
            ),
            stats=_build(NodeStats, data, count=0, mean_s=0.0, p90_s=0.0, min_s=0.0, max_s=0.0, iqr_s=0.0, pct=0.0),
            rates=_build(Rates, data),
        )


@dataclass(frozen=True, slots=True)
class ModuleRow:
    """Time attributed to one module path (``""`` is the root) in a result."""

    path: str
    class_name: str
    inclusive_s: float
    self_s: float
    pct: float
    nodes: int
    leaf_fallback: bool
    flops: float | None = None
    """FLOPs of the subtree in one run."""
    gflops_s: float | None = None
    """Subtree FLOPs over its inclusive time."""
    forward_s: float = 0.0
    """In a training step: inclusive time of the subtree's forward nodes."""
    backward_s: float = 0.0
    """In a training step: inclusive time of the backward nodes charged to the subtree."""
    prefill_s: float = 0.0
    """In a ``generate()`` call: inclusive time of the subtree's prefill nodes (per call)."""
    decode_s: float = 0.0
    """In a ``generate()`` call: inclusive time of the subtree's decode nodes (per token)."""
    output_bytes: int | None = None
    """Output bytes of the subtree's nodes in one run (None when memory was not measured)."""
    alloc_bytes: int | None = None
    """Bytes allocated by the subtree's nodes in one run."""
    peak_live_bytes: int | None = None
    """The most activation bytes alive right after any node of the subtree."""
    saved_bytes: int | None = None
    """In a training step: bytes the subtree's forward nodes save for backward."""
    eager_s: float | None = None
    """With ``--compile``: the module's eager time (Σ of its eager ATen op medians), measured in the same session."""
    compiled_s: float | None = None
    """With ``--compile``: the module's compiled time (Σ of the medians of the kernels charged to its subtree);
    0 for a module with no kernel of its own (:attr:`fused_into` says where its work went)."""
    fused_into: tuple[str, ...] = ()
    """With ``--compile``: the modules above it whose kernels compute some of its source nodes (``""``: the root)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModuleRow:
        """The row :meth:`to_dict` wrote."""
        row: ModuleRow = _build(cls, data, class_name="", self_s=0.0, pct=0.0, nodes=0, leaf_fallback=False)
        return replace(row, fused_into=tuple(row.fused_into))  # a JSON list


#: The fields a :class:`NodeRow` reads through from its parts.
_FIELDS: dict[type, frozenset[str]] = {
    kind: frozenset(f.name for f in fields(kind)) | ({"noisy", "unsteady"} if kind is NodeStats else set())
    for kind in (NodeInfo, NodeStats, Rates)
}


def _build(kind: Any, data: Mapping[str, Any], **defaults: Any) -> Any:
    """``kind`` from the keys of ``data`` that are its fields; ``defaults`` for required ones an old file lacks."""
    given = {f.name: data[f.name] for f in fields(kind) if f.name in data and f.name not in _NOT_SAVED}
    return kind(**{**defaults, **given})
