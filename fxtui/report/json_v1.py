"""Reading report files of version 1 (fxtui before shapes were sizes and shares fractions): each upgraded to
version 2 as it is read, so one reader serves both.

Version 1 wrote percents (``pct`` 0–100, a hint's ``saving_pct``) where version 2 writes fractions
(``run_frac`` 0–1, ``saving_frac``), a shape as its display text (``"2×16"``) where version 2 writes
sizes beside the text, a few shares under plain names (``share``, ``median_lost``) and a node's other
shapes as ``[text, count, median]`` triples; its steps of kind ``call`` are ``eval`` now. Missing values
it wrote as ``""``, ``-1`` or ``0.0`` read back as those same defaults, so they need no upgrade.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fxtui.report.shapes import shape_list


def upgrade_from_v1(data: Mapping[str, Any]) -> dict[str, Any]:
    """A version-1 report (validated) as the version-2 report that says the same."""
    meta = dict(data["metadata"])
    if isinstance(meta.get("hints"), list):
        meta["hints"] = [_percent_to_frac(h, "saving_pct", "saving_frac") for h in meta["hints"]]
    if isinstance(meta.get("aten"), Mapping):
        meta["aten"] = {name: [_renamed(op, "share", "node_frac") for op in ops] for name, ops in meta["aten"].items()}
    if isinstance(meta.get("disturbance"), Mapping):
        disturbance = meta["disturbance"]
        for key in ("median_lost", "worst_lost", "median_display"):
            disturbance = _renamed(disturbance, key, f"{key}_frac")
        meta["disturbance"] = disturbance
    if isinstance(meta.get("steps"), Mapping) and meta["steps"].get("kind") == "call":
        meta["steps"] = {**meta["steps"], "kind": "eval"}  # calls of the outermost module are evaluation calls now
    if isinstance(meta.get("shapes"), Mapping):
        meta["shapes"] = {
            name: [{"shape": shape_list(str(s)), "shape_text": s, "count": n, "median_s": m} for s, n, m in runs]
            for name, runs in meta["shapes"].items()
        }
    return {
        **data,
        "version": 2,
        "metadata": meta,
        "rows": [_row(r) for r in data["rows"]],
        "modules": [_percent_to_frac(m, "pct", "run_frac") for m in data["modules"]],
    }


def _row(row: Mapping[str, Any]) -> dict[str, Any]:
    out = _renamed(_percent_to_frac(row, "pct", "run_frac"), "roofline_fraction", "roofline_frac")
    shape = out.get("shape")
    if isinstance(shape, str):
        out["shape_text"] = shape
        out["shape"] = shape_list(shape)
    return out


def _renamed(record: Any, old: str, new: str) -> Any:
    if not isinstance(record, Mapping) or old not in record:
        return record
    return {(new if k == old else k): v for k, v in record.items()}


def _percent_to_frac(record: Any, old: str, new: str) -> Any:
    out = _renamed(record, old, new)
    if isinstance(out, dict) and isinstance(out.get(new), (int, float)) and not isinstance(out[new], bool):
        out[new] = out[new] / 100
    return out
