"""A report's tables as JSON records: one object per node row and per module row, and back.

A node row is one flat object: the node's facts, its statistics, its rates and the ``noisy`` and
``unsteady`` flags, each under the name its field has (:mod:`fxtui.report.json_values` says which
are renamed: ``run_frac`` is the node's median over the profiled run's, 0–1). Its shape is twice
there: ``shape`` as sizes (a list of ints, a list of those for a tuple of tensors, ``null`` for
anything else) and ``shape_text`` as the table shows it. A module row is its fields.

A field that does not apply to this profile is ``null``: the rank columns outside a distributed job,
a module's forward and backward time outside a training step or a program, its prefill and decode time outside a
generation (:data:`APPLIES_ONLY`). Reading back, ``null`` or a missing key is the field's default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from fxtui.core.nodes import NodeInfo, NodeStats
from fxtui.core.rows import ModuleRow, NodeRow, Rates
from fxtui.report.json_values import decode_fields, encode_fields, json_key
from fxtui.report.shapes import shape_list, shape_text

#: Fields of a row or a module row that apply only to some profiles: each names what it applies to
#: (``distributed``: a job of several ranks; ``phases``: a training step, or a program profiled as it ran,
#: whose nodes carry their phase; ``generating``: ``generate()`` calls; ``program``: a program profiled as
#: it ran); elsewhere it is written ``null``.
APPLIES_ONLY: dict[str, str] = {
    "rank": "distributed",
    "rank_min_s": "distributed",
    "rank_max_s": "distributed",
    "slowest_rank": "distributed",
    "node": "distributed",
    "calls_per_step": "program",
    "forward_s": "phases",
    "backward_s": "phases",
    "prefill_s": "generating",
    "decode_s": "generating",
}

#: Node facts a saved row leaves out: the UI's sparkline samples and text only the live app shows.
_NOT_SAVED = frozenset({"recent", "node_text", "module_repr", "input_shapes"})
#: Required facts and statistics a row saved by an older fxtui (or written by hand) may lack.
_INFO_DEFAULTS = {"node_text": "", "index": 0, "op": "", "target": "", "type_name": ""}
_STATS_DEFAULTS = {"count": 0, "mean_s": 0.0, "p90_s": 0.0, "min_s": 0.0, "max_s": 0.0, "iqr_s": 0.0, "pct": 0.0}
_MODULE_DEFAULTS = {"class_name": "", "self_s": 0.0, "pct": 0.0, "nodes": 0, "leaf_fallback": False}


def node_row_json(row: NodeRow, applies: frozenset[str]) -> dict[str, Any]:
    """One node row as a flat JSON object; fields that do not apply to this profile (``applies``) are null."""
    out: dict[str, Any] = {}
    for key, value in encode_fields(row.info, _NOT_SAVED).items():
        if key == "shape":
            out["shape"] = shape_list(row.info.shape)
            out["shape_text"] = row.info.shape or None
        else:
            out[key] = value
    out.update(encode_fields(row.stats, frozenset({"recent"})))
    out.update(encode_fields(row.rates))
    out["noisy"] = row.stats.noisy
    out["unsteady"] = row.stats.unsteady
    return _not_applying(out, applies)


def node_row_from_json(data: Mapping[str, Any]) -> NodeRow:
    """The row :func:`node_row_json` wrote (or an older or smaller one)."""
    shape = data.get("shape_text")
    if shape is None:
        listed = data.get("shape")
        shape = listed if isinstance(listed, str) else shape_text(listed) if isinstance(listed, list) else ""
    info = decode_fields(NodeInfo, {**data, "shape": shape}, **_INFO_DEFAULTS)
    stats = decode_fields(NodeStats, data, **_STATS_DEFAULTS)
    return NodeRow(info, stats, decode_fields(Rates, data))


def module_row_json(row: ModuleRow, applies: frozenset[str]) -> dict[str, Any]:
    """One module row as a JSON object; fields that do not apply to this profile are null."""
    return _not_applying(encode_fields(row), applies)


def module_row_from_json(data: Mapping[str, Any]) -> ModuleRow:
    """The module row :func:`module_row_json` wrote (or an older or smaller one)."""
    row: ModuleRow = decode_fields(ModuleRow, data, **_MODULE_DEFAULTS)
    return row


def row_columns() -> list[str]:
    """Every key a node row has, in order (a CSV's header when there are no rows)."""
    keys: list[str] = []
    for kind, left_out in ((NodeInfo, _NOT_SAVED), (NodeStats, frozenset({"recent"})), (Rates, frozenset())):
        for f in fields(kind):
            if f.name in left_out:
                continue
            keys += ["shape", "shape_text"] if f.name == "shape" else [json_key(kind, f.name)]
    return [*keys, "noisy", "unsteady"]


def module_columns() -> list[str]:
    """Every key a module row has, in order."""
    return [json_key(ModuleRow, f.name) for f in fields(ModuleRow)]


def _not_applying(out: dict[str, Any], applies: frozenset[str]) -> dict[str, Any]:
    for key, needs in APPLIES_ONLY.items():
        if key in out and needs not in applies:
            out[key] = None
    return out
