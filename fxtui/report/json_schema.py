"""A report file's JSON form: its schema and version, what its metadata holds, and reading it safely.

A report file is ``{"schema": "fxtui.report", "version": 2, "metadata": {…}, "rows": […], "modules": […]}``.
The metadata is the graph's fields and the snapshot's (:class:`~fxtui.core.snapshot.GraphInfo`,
:class:`~fxtui.core.snapshot.Snapshot`) side by side, each under its own name and written by the
conventions of :mod:`fxtui.report.json_values` — so a field added to either is saved and loaded with no
line here — except:

* :data:`LEFT_OUT`: live state (the session's state, its status message, what-if progress), the
  tables (written as ``rows`` and ``modules``) and what another key already says;
* :data:`CODECS`: fields written under another key or as several (the memory summary and the run
  figures' ranges flat beside the other figures, the inputs with their shapes as sizes, a failure as
  ``failures`` and ``last_error``, a program's recent steps one record each).

For tools that read it:

* ``rows``: one flat object per node — every rank's in a distributed job, each with its ``rank`` —
  its facts, statistics and rates (:mod:`fxtui.report.json_rows`); ``modules``: one per module path
  (``""`` is the root); ``metadata``: the fields above and the figures derived from them (``mode``,
  ``fidelity``, ``overhead``, ``unattributed_s``, ``phases_s``);
* a value that does not apply is ``null``; seconds end in ``_s``, bytes in ``_bytes``, fractions
  (0–1) in ``_frac``; ratios that may pass 1 (``fidelity``, ``overhead``) have plain names; a shape
  is a list of sizes (``shape``), beside its text (``shape_text``);
* pandas: ``fxtui.load(path).to_dataframe()``, or ``pd.DataFrame(json.load(f)["rows"])`` without
  fxtui (``pd.read_json(path)`` reads one table, and a report file holds three).

Files of version 1 are upgraded as they are read (:mod:`fxtui.report.json_v1`).
"""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from fxtui.core.errors import FxtuiError
from fxtui.core.findings import MemorySummary, WhatIf
from fxtui.core.generation import GenerationSummary
from fxtui.core.nodes import GraphBreak
from fxtui.core.program_run import STEP_PHASES, KindSummary, ProgramState, RankSummary, StepSummary
from fxtui.core.snapshot import RunError, RunSpreads
from fxtui.report.json_v1 import upgrade_from_v1
from fxtui.report.json_values import (
    as_float,
    decode,
    decode_fields,
    encode,
    encode_fields,
    field_types,
    missing_as_null,
)
from fxtui.report.shapes import shape_list

#: Identifies fxtui's JSON files; ``version`` changes when a field changes meaning.
SCHEMA = "fxtui.report"
SCHEMA_VERSION = 2
#: Versions this fxtui reads (older ones are upgraded as they are read).
READS_VERSIONS = (1, 2)

#: Graph and snapshot fields a report file leaves out: the tables (``rows`` and ``modules`` hold them), the
#: session's live state, and what another key says (``ranks`` in ``metadata.ranks``, the value warnings among
#: ``warnings``, the representative run that only a trace export draws).
LEFT_OUT = frozenset(
    {"graph", "state", "seq", "nodes", "modules", "message", "what_if_progress", "what_if_options", "timelines",
     "ranks", "value_warnings", "other_ranks", "other_kinds", "trace_left_out"}
)  # fmt: skip
#: Values for required fields a very old or hand-written file lacks.
REQUIRED_DEFAULTS: dict[str, Any] = {"model": "", "inputs": (), "dtype": "", "threads": 0}


@dataclass(frozen=True)
class _Codec:
    """How one field is written into the metadata (one key or several) and read back from it (None: default)."""

    encode: Callable[[Any], dict[str, Any]]
    decode: Callable[[Mapping[str, Any]], Any]


def _under(key: str, write: Callable[[Any], Any], read: Callable[[Any], Any]) -> _Codec:
    """A field written under ``key``; ``null`` reads back as the field's default."""
    return _Codec(lambda v: {key: write(v)}, lambda meta: read(meta[key]) if meta.get(key) is not None else None)


#: The memory summary's metadata keys (flat, beside the run's other figures) → its fields.
_MEMORY_KEYS = {
    "peak_live_bytes": "peak_live_bytes", "peak_node": "peak_node", "param_bytes": "param_bytes",
    "input_bytes": "input_bytes", "high_water_bytes": "high_water_bytes", "high_water_node": "high_water_node",
    "rss_bytes": "rss_bytes", "max_rss_bytes": "max_rss_bytes", "saved_for_backward_bytes": "saved_bytes",
    "forward_peak_bytes": "forward_peak_bytes", "backward_peak_bytes": "backward_peak_bytes",
}  # fmt: skip


def _memory_encode(memory: MemorySummary | None) -> dict[str, Any]:
    """The summary as flat metadata keys; none at all when memory was not measured."""
    if memory is None:
        return {}
    return {key: missing_as_null(name, getattr(memory, name)) for key, name in _MEMORY_KEYS.items()}


def _memory_decode(meta: Mapping[str, Any]) -> MemorySummary | None:
    if meta.get("peak_live_bytes") is None:
        return None
    data = {name: meta[key] for key, name in _MEMORY_KEYS.items() if key in meta}
    memory: MemorySummary = decode_fields(MemorySummary, data, peak_node="", high_water_node="")
    return memory


def _inputs_encode(inputs: tuple[str, ...]) -> dict[str, Any]:
    """The inputs as described (``1×3×224×224``, ``list[3×320×320]``) and, where each is a tensor, its sizes."""
    return {"inputs": list(inputs), "input_shapes": [shape_list(i) for i in inputs]}


def _error_encode(error: RunError | None) -> dict[str, Any]:
    return {"failures": error.runs_failed if error else 0, "last_error": error.message if error else None}


def _error_decode(meta: Mapping[str, Any]) -> RunError | None:
    failures, message = int(meta.get("failures") or 0), meta.get("last_error") or ""
    return RunError(str(message), runs_failed=failures) if failures or message else None


def _steps_encode(steps: StepSummary | None) -> dict[str, Any] | None:
    """The step summary's fields, with each phase's median by name and one record per recent step
    (``{"data": s, "forward": s, …, "sampled": bool}``)."""
    if steps is None:
        return None
    recent = [
        {**dict(zip(STEP_PHASES, encode(steps.recent_step(i)), strict=True)), "sampled": bool(steps.recent_sampled[i])}
        for i in range(steps.recent_steps)
    ]
    out = encode_fields(steps, frozenset({"recent", "recent_sampled", "history"}))
    out["phase_median_s"] = dict(zip(STEP_PHASES, encode(steps.phase_median_s), strict=False))
    out["kinds"] = [_kind_encode(kind) for kind in steps.kinds]
    out["recent"] = recent
    out["history_s"] = encode(steps.history)
    return out


#: A kind's figures kept per phase, written as objects keyed by phase.
_KIND_PHASES = ("phase_median_s", "phase_nodes_s")


def _kind_encode(kind: KindSummary) -> dict[str, Any]:
    """A kind's fields, each per-phase figure as ``{"data": s, "forward": s, …}`` (``null`` when not measured)."""
    out = encode_fields(kind, frozenset(_KIND_PHASES))
    for name in _KIND_PHASES:
        values = getattr(kind, name)
        out[name] = dict(zip(STEP_PHASES, encode(values), strict=True)) if values else None
    return out


def _kind_decode(data: Mapping[str, Any]) -> KindSummary:
    phases = {
        name: tuple(float(data[name].get(p) or 0.0) for p in STEP_PHASES) if data.get(name) else ()
        for name in _KIND_PHASES
    }
    rest = {k: v for k, v in data.items() if k not in _KIND_PHASES}
    kind: KindSummary = decode_fields(KindSummary, rest, kind="train", steps=0, **phases)
    return kind


def _steps_decode(data: Mapping[str, Any]) -> StepSummary:
    recent = data.get("recent") or []
    medians = data.get("phase_median_s") or {}
    rest = {k: v for k, v in data.items() if k not in ("recent", "phase_median_s", "history_s", "kinds")}
    steps: StepSummary = decode_fields(
        StepSummary,
        rest,
        kind="eval",
        steps=0,
        warmup=0,
        sampled=0,
        phase_median_s=tuple(float(medians.get(p) or 0.0) for p in STEP_PHASES) if medians else (),
        recent=array("d", (float(r.get(p) or 0.0) for r in recent for p in STEP_PHASES)),
        recent_sampled=bytes(int(bool(r.get("sampled"))) for r in recent),
        history=array("d", map(as_float, data.get("history_s") or [])),
        kinds=tuple(_kind_decode(k) for k in data.get("kinds") or ()),
    )
    return steps


def _ranks_encode(summary: RankSummary | None) -> dict[str, Any] | None:
    if summary is None:
        return None
    return {**encode_fields(summary), "straggler": summary.straggler() or None}


def _shapes_encode(shapes: Mapping[str, tuple[tuple[str, int, float], ...]]) -> dict[str, Any]:
    """Each node that ran at several output shapes: one record per shape, the most frequent first."""
    return {
        name: [
            {"shape": shape_list(text), "shape_text": text or None, "count": count, "median_s": encode(median)}
            for text, count, median in runs
        ]
        for name, runs in shapes.items()
    }


def _shapes_decode(data: Mapping[str, Any]) -> dict[str, tuple[tuple[str, int, float], ...]]:
    return {
        str(name): tuple((str(r.get("shape_text") or ""), int(r["count"]), as_float(r["median_s"])) for r in runs)
        for name, runs in data.items()
    }


def _generation_encode(generation: GenerationSummary | None) -> dict[str, Any]:
    """The summary under ``generation``, its headline figures beside the run's others; nothing without one."""
    if generation is None:
        return {}
    data = encode(generation)
    headline = ("ttft_s", "tpot_s", "tokens_per_s", "kv_cache_bytes", "decode_positions")
    return {"generation": data, **{key: data[key] for key in headline}}


def _what_if_encode(what_if: WhatIf) -> dict[str, Any]:
    data = encode(what_if)
    saving = data.pop("saving_pct", None)
    data["saving_frac"] = saving / 100 if saving is not None else None
    return dict(data)


CODECS: dict[str, _Codec] = {
    "inputs": _Codec(_inputs_encode, lambda meta: tuple(str(i) for i in meta.get("inputs") or ())),
    # A file written before training steps existed (or by hand) says it only in ``mode``.
    "training": _Codec(lambda v: {"training": v}, lambda meta: bool(meta.get("training", meta.get("mode") == "train"))),
    "breaks": _under("graph_breaks", encode, lambda v: tuple(decode_fields(GraphBreak, b) for b in v)),
    "memory": _Codec(_memory_encode, _memory_decode),
    "error": _Codec(_error_encode, _error_decode),
    "what_ifs": _under(
        "what_ifs", lambda v: [_what_if_encode(w) for w in v], lambda v: tuple(decode(WhatIf, w) for w in v)
    ),
    "spreads": _Codec(lambda v: encode(v.to_dict()), RunSpreads.from_dict),
    "program": _under(
        "program",
        lambda v: encode_fields(v, frozenset({"log_tail"})) if v else None,  # running: a live job's profile says so
        lambda v: decode_fields(ProgramState, v, command=(), running=False),
    ),
    "steps": _under("steps", _steps_encode, _steps_decode),
    "shapes": _under("shapes", _shapes_encode, _shapes_decode),
    "generation": _Codec(
        _generation_encode,
        lambda meta: decode(GenerationSummary, g) if isinstance(g := meta.get("generation"), Mapping) else None,
    ),
    "rank_summary": _under("ranks", _ranks_encode, lambda v: decode_fields(RankSummary, v, shown=0, ranks=())),
}


def metadata_json(record: Any) -> dict[str, Any]:
    """The fields of a graph or a snapshot as metadata keys (all but :data:`LEFT_OUT`, through :data:`CODECS`)."""
    out: dict[str, Any] = {}
    for f in fields(record):
        if f.name in LEFT_OUT:
            continue
        value = getattr(record, f.name)
        codec = CODECS.get(f.name)
        if codec is not None:
            out.update(codec.encode(value))
        else:
            out[f.name] = encode(missing_as_null(f.name, value))
    return out


def fields_from_metadata(kind: type, meta: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of ``kind`` (the graph or the snapshot) the metadata gives, ready for its constructor:
    a key that is missing or ``null`` leaves the field its default."""
    given: dict[str, Any] = {}
    types = field_types(kind)
    for f in fields(kind):
        if f.name in LEFT_OUT:
            continue
        codec = CODECS.get(f.name)
        value = codec.decode(meta) if codec is not None else decode(types[f.name], meta.get(f.name))
        if value is not None:
            given[f.name] = value
        elif f.name in REQUIRED_DEFAULTS:
            given[f.name] = REQUIRED_DEFAULTS[f.name]
    return given


# -- reading files -----------------------------------------------------------------------


def load_json(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and validate a report written by ``--json``/``--save`` (any version this fxtui reads, upgraded to
    the current one); FxtuiError when it is not one."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FxtuiError(f"{p} does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise FxtuiError(f"cannot read {p}: {getattr(e, 'strerror', None) or e}") from None
    except json.JSONDecodeError as e:
        raise FxtuiError(f"{p} is not valid JSON (line {e.lineno}: {e.msg})") from None
    except RecursionError:
        raise FxtuiError(f"{p} is not an fxtui report (nested too deeply to read)") from None
    return checked(data, str(p))


def checked(data: Any, name: str) -> dict[str, Any]:
    """``data`` (a parsed report file called ``name``) validated and upgraded to the current version."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise FxtuiError(f'{name} is not an fxtui report (no "schema": "{SCHEMA}")')
    version = data.get("version")
    if version not in READS_VERSIONS or isinstance(version, bool):
        raise FxtuiError(
            f"{name} is an fxtui report of version {version!r}; this fxtui reads versions "
            f"{', '.join(map(str, READS_VERSIONS))}"
        )
    rows = data.get("rows")
    if not isinstance(rows, list) or not all(_valid_row(r) for r in rows):
        raise FxtuiError(f"{name} is damaged: its rows are not fxtui node rows")
    if not isinstance(data.get("metadata"), dict) or not isinstance(data.get("modules"), list):
        raise FxtuiError(f"{name} is damaged: metadata or modules are missing")
    if not all(_valid_module(m) for m in data["modules"]):
        raise FxtuiError(f"{name} is damaged: its modules are not fxtui module rows")
    if version == 1:
        try:
            return upgrade_from_v1(data)
        except (TypeError, ValueError, KeyError, AttributeError) as e:
            raise FxtuiError(f"{name} is damaged: {e}") from None
    return data


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _valid_module(row: object) -> bool:
    return isinstance(row, dict) and isinstance(row.get("path"), str) and _is_number(row.get("inclusive_s"))


def _valid_row(row: object) -> bool:
    return (
        isinstance(row, dict)
        and isinstance(row.get("name"), str)
        and isinstance(row.get("module_path"), str)
        and _is_number(row.get("median_s"))
    )
