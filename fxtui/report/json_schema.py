"""A report's JSON form: the schema, how each field is written into the metadata and read back, and loading.

The metadata holds every field of :class:`~fxtui.report.data.ReportData` but its tables, each
under its own name unless :data:`CODECS` says how it is written (a dataclass as a dict, the
memory summary and the spreads flattened beside the other figures, a program's steps with one
record per step). Files saved before a field existed read back with its default.
"""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fxtui.core.compilation import CompiledSummary
from fxtui.core.errors import FxtuiError
from fxtui.core.findings import AtenOp, Disturbance, Hint, MachinePeaks, MemorySummary, WhatIf
from fxtui.core.generation import GenerationSummary
from fxtui.core.nodes import GraphBreak
from fxtui.core.program_run import STEP_PHASES, KindSummary, ProgramState, RankFigures, RankSummary, StepSummary
from fxtui.core.snapshot import RunSpreads

#: Identifies fxtui's JSON files; ``version`` changes when a field changes meaning.
SCHEMA = "fxtui.report"
SCHEMA_VERSION = 1

#: Fields that are not metadata: the tables and the representative run (a trace's, not saved).
NOT_METADATA = frozenset({"rows", "modules", "timeline", "timelines"})
#: Values for required fields a very old file lacks.
REQUIRED_DEFAULTS: dict[str, Any] = {
    "model": "", "inputs": (), "dtype": "", "threads": 0, "runs": 0, "run_median_s": None, "eager_median_s": None,
}  # fmt: skip


@dataclass(frozen=True)
class _Codec:
    """How one field is written into the metadata (one key or several) and read back from it."""

    encode: Callable[[Any], dict[str, Any]]
    decode: Callable[[Mapping[str, Any]], Any]


def _one(key: str, encode: Callable[[Any], Any], decode: Callable[[Any], Any], missing: Any = None) -> _Codec:
    return _Codec(lambda v: {key: encode(v)}, lambda meta: decode(meta[key]) if meta.get(key) is not None else missing)


#: The memory summary's metadata keys (flat, beside the run's other figures) → its fields.
_MEMORY_KEYS = {
    "peak_live_bytes": "peak_live_bytes", "peak_node": "peak_node", "param_bytes": "param_bytes",
    "input_bytes": "input_bytes", "high_water_bytes": "high_water_bytes", "high_water_node": "high_water_node",
    "rss_bytes": "rss_bytes", "max_rss_bytes": "max_rss_bytes", "saved_for_backward_bytes": "saved_bytes",
    "forward_peak_bytes": "forward_peak_bytes", "backward_peak_bytes": "backward_peak_bytes",
}  # fmt: skip


def _memory_encode(memory: MemorySummary | None) -> dict[str, Any]:
    """The summary as flat metadata keys; none at all when memory was not measured (as older files)."""
    return {} if memory is None else {key: getattr(memory, name) for key, name in _MEMORY_KEYS.items()}


def _memory_decode(meta: Mapping[str, Any]) -> MemorySummary | None:
    if meta.get("peak_live_bytes") is None:
        return None
    return MemorySummary(**{name: meta[key] for key, name in _MEMORY_KEYS.items() if key in meta})


def _program_encode(program: ProgramState | None) -> dict[str, Any] | None:
    if program is None:
        return None
    return {"command": list(program.command), "pid": program.pid, "exit_code": program.exit_code,
            "running": program.running, "log": program.log, "dropped": program.dropped,
            "note": program.note}  # fmt: skip


def _program_decode(data: Mapping[str, Any]) -> ProgramState:
    return ProgramState(
        tuple(data.get("command", ())),
        pid=int(data.get("pid", 0)),
        running=bool(data.get("running", False)),  # a running job's profile, kept while it ran
        exit_code=data.get("exit_code"),
        log=str(data.get("log", "")),
        dropped=int(data.get("dropped", 0)),
        note=str(data.get("note", "")),
    )


def _steps_encode(steps: StepSummary | None) -> dict[str, Any] | None:
    """The step summary with one record per recent step: ``{"data": s, "forward": s, …, "sampled": bool}``."""
    if steps is None:
        return None
    recent = [
        {**dict(zip(STEP_PHASES, steps.recent_step(i), strict=True)), "sampled": bool(steps.recent_sampled[i])}
        for i in range(steps.recent_steps)
    ]
    return {
        "kind": steps.kind,
        "steps": steps.steps,
        "warmup": steps.warmup,
        "sampled": steps.sampled,
        "phase_median_s": dict(zip(STEP_PHASES, steps.phase_median_s, strict=False)),
        "step_median_s": steps.step_median_s,
        "sampled_median_s": steps.sampled_median_s,
        "recent": recent,
        "history_s": list(steps.history),
        "history_every": steps.history_every,
        "faults_median": steps.faults_median,
        "holds": dict(steps.holds),
        "holds_share": steps.holds_share,
        "kinds": {k.kind: {**asdict(k), "holds": dict(k.holds)} for k in steps.kinds},
    }


def _steps_decode(data: Mapping[str, Any]) -> StepSummary:
    recent = data.get("recent", [])
    medians = data.get("phase_median_s", {})
    return StepSummary(
        kind={"call": "eval"}.get(str(data.get("kind", "eval")), str(data.get("kind", "eval"))),
        steps=int(data.get("steps", 0)),
        warmup=int(data.get("warmup", 0)),
        sampled=int(data.get("sampled", 0)),
        phase_median_s=tuple(float(medians.get(p, 0.0)) for p in STEP_PHASES) if medians else (),
        step_median_s=data.get("step_median_s"),
        sampled_median_s=data.get("sampled_median_s"),
        recent=array("d", (float(r.get(p, 0.0)) for r in recent for p in STEP_PHASES)),
        recent_sampled=bytes(int(bool(r.get("sampled"))) for r in recent),
        history=array("d", (float(v) for v in data.get("history_s", []))),
        history_every=int(data.get("history_every", 1)),
        faults_median=data.get("faults_median"),
        holds=tuple((str(k), int(v)) for k, v in data.get("holds", {}).items()),
        holds_share=float(data.get("holds_share", 1.0)),
        kinds=tuple(
            KindSummary(**{**k, "holds": tuple((str(a), int(b)) for a, b in k.get("holds", {}).items())})
            for k in data.get("kinds", {}).values()
        ),
    )


def _ranks_encode(summary: RankSummary | None) -> dict[str, Any] | None:
    if summary is None:
        return None
    return {"shown": summary.shown, "straggler": summary.straggler(), "ranks": [asdict(r) for r in summary.ranks]}


def _ranks_decode(data: Mapping[str, Any]) -> RankSummary:
    figures = tuple(RankFigures(**{**r, "phase_median_s": tuple(r.get("phase_median_s", ()))}) for r in data["ranks"])
    return RankSummary(int(data.get("shown", 0)), figures)


def _generation_encode(generation: GenerationSummary | None) -> dict[str, Any]:
    """The summary under ``generation``, its headline figures beside the run's others; nothing without one."""
    if generation is None:
        return {}
    data = generation.to_dict()
    headline = ("ttft_s", "tpot_s", "tokens_per_s", "kv_cache_bytes", "decode_positions")
    return {"generation": data, **{key: data[key] for key in headline}}


def _generation_decode(meta: Mapping[str, Any]) -> GenerationSummary | None:
    data = meta.get("generation")
    return GenerationSummary.from_dict(data) if isinstance(data, Mapping) else None


def coerce(default: Any, value: Any) -> Any:
    """A metadata value as the field's type (read from its default): tuples from lists, numbers from text."""
    if isinstance(default, tuple):
        return tuple(value)
    if isinstance(default, bool):
        return bool(value)
    if isinstance(default, int):
        return int(value)
    if isinstance(default, str):
        return str(value)
    return value


CODECS: dict[str, _Codec] = {
    "peaks": _one("peaks", lambda v: asdict(v) if v else None, lambda d: MachinePeaks(**d)),
    "hints": _one("hints", lambda v: [asdict(h) for h in v], lambda v: tuple(Hint(**h) for h in v), ()),
    "aten": _one(
        "aten",
        lambda v: {name: [asdict(op) for op in ops] for name, ops in v.items()},
        lambda v: {name: tuple(AtenOp(**op) for op in ops) for name, ops in v.items()},
        {},
    ),
    "breaks": _one("graph_breaks", lambda v: [asdict(b) for b in v], lambda v: tuple(GraphBreak(**b) for b in v), ()),
    "training": _Codec(lambda v: {"training": v}, lambda meta: bool(meta.get("training", meta.get("mode") == "train"))),
    "program": _one("program", _program_encode, _program_decode),
    "steps": _one("steps", _steps_encode, _steps_decode),
    "rank_summary": _one("ranks", _ranks_encode, _ranks_decode),
    "shapes": _one(
        "shapes",
        lambda v: {name: [list(s) for s in shapes] for name, shapes in v.items()},
        lambda v: {name: tuple((str(s), int(n), float(m)) for s, n, m in shapes) for name, shapes in v.items()},
        {},
    ),
    "memory": _Codec(_memory_encode, _memory_decode),
    "spreads": _Codec(lambda v: v.to_dict(), RunSpreads.from_dict),
    "disturbance": _one("disturbance", lambda v: asdict(v) if v else None, lambda d: Disturbance(**d)),
    "generation": _Codec(_generation_encode, _generation_decode),
    "compiled": _Codec(
        lambda v: {"compiled": v.to_dict()} if v is not None else {},
        lambda meta: CompiledSummary.from_dict(meta["compiled"]) if isinstance(meta.get("compiled"), Mapping) else None,
    ),
    "what_ifs": _one(
        "what_ifs", lambda v: [w.to_dict() for w in v], lambda v: tuple(WhatIf.from_dict(w) for w in v), ()
    ),
}


# -- reading files -----------------------------------------------------------------------


def load_json(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and validate a report written by ``--json``/``--save``; FxtuiError when it is not one."""
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
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise FxtuiError(f'{p} is not an fxtui report (no "schema": "{SCHEMA}")')
    if data.get("version") != SCHEMA_VERSION:
        raise FxtuiError(
            f"{p} is an fxtui report of version {data.get('version')!r}; this fxtui reads version {SCHEMA_VERSION}"
        )
    rows = data.get("rows")
    if not isinstance(rows, list) or not all(_valid_row(r) for r in rows):
        raise FxtuiError(f"{p} is damaged: its rows are not fxtui node rows")
    if not isinstance(data.get("metadata"), dict) or not isinstance(data.get("modules"), list):
        raise FxtuiError(f"{p} is damaged: metadata or modules are missing")
    if not all(_valid_module(m) for m in data["modules"]):
        raise FxtuiError(f"{p} is damaged: its modules are not fxtui module rows")
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
