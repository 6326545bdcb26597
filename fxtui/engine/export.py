"""Reports as files: JSON (and loading it back), CSV, the Chrome trace; every write atomic.

Exports are written whole or not at all: to a temporary file beside the target, then
renamed over it. :func:`load_json` validates a saved report before anything reads it.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fxtui.core.errors import FxtuiError
from fxtui.core.nodes import module_ancestors

if TYPE_CHECKING:
    from fxtui.engine.report import Report

#: Identifies fxtui's JSON files; ``version`` changes when a field changes meaning.
SCHEMA = "fxtui.report"
SCHEMA_VERSION = 1
#: The CSV's columns, in order: a node's facts, its statistics, then its rates.
CSV_COLUMNS = (
    "name", "op", "target", "type_name", "module_path", "shape", "dtype", "median_s", "mean_s", "p90_s", "min_s",
    "max_s", "iqr_s", "count", "pct", "noisy", "index", "unsteady", "flops", "bytes_moved", "params", "gflops_s",
    "gbytes_s", "intensity", "bound", "roofline_fraction", "source", "forward_source", "graph", "calls", "phase",
    "output_bytes", "alloc_bytes", "live_bytes", "saved_bytes", "page_faults",
)  # fmt: skip


def report_dict(report: Report) -> dict[str, Any]:
    """Everything in ``report`` as JSON-ready data, with the schema's name and version."""
    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "metadata": report.metadata(),
        "rows": [r.to_dict() for r in report.rows],
        "modules": [m.to_dict() for m in report.modules],
    }


def report_json(report: Report) -> str:
    """``report`` as JSON text."""
    return json.dumps(report_dict(report), indent=1, allow_nan=False, default=_json_default)


def report_csv(report: Report) -> str:
    """One CSV line per node, graph order, with a header line."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for r in report.rows:
        row = r.to_dict()
        writer.writerow([row.get(c) for c in CSV_COLUMNS])
    return out.getvalue()


def chrome_trace(report: Report) -> dict[str, Any]:
    """One representative run as nested spans (module → node) in the Chrome trace event format."""
    if not report.timeline:
        raise FxtuiError("this report has no recorded run to export as a trace")
    paths = {r.name: r.module_path for r in report.rows}
    phases = {r.name: r.info.phase for r in report.rows}
    ops = {r.name: (r.info.op, r.info.target) for r in report.rows}
    events: list[dict[str, Any]] = []
    open_spans: list[tuple[str, float]] = []  # (module path, start) from the root's children down
    end = 0.0

    def close_until(keep: int) -> None:
        while len(open_spans) > keep:
            path, start = open_spans.pop()
            if path.startswith(_PHASE):  # a training step's forward or backward pass around its modules
                events.append(_span(path[len(_PHASE) :], "phase", start, end - start, {}))
            else:
                events.append(_span(path.rpartition(".")[2] or path, "module", start, end - start, {"path": path}))

    for name, start, dur in report.timeline:
        phase = phases.get(name, "")
        chain = ([_PHASE + phase] if phase else []) + module_ancestors(paths.get(name, ""))[1:]
        common = 0
        while common < min(len(chain), len(open_spans)) and open_spans[common][0] == chain[common]:
            common += 1
        close_until(common)
        for path in chain[common:]:
            open_spans.append((path, start))
        op, target = ops.get(name, ("", ""))
        events.append(_span(name, op, start, dur, {"target": target, "module": paths.get(name, "")}))
        end = max(end, start + dur)
    close_until(0)
    events.insert(0, {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": f"fxtui {report.model}"}})
    return {"traceEvents": events, "displayTimeUnit": "ms"}


#: Marks a phase among the open spans of :func:`chrome_trace` (module paths never start with it).
_PHASE = "\x00"


def _span(name: str, cat: str, start: float, dur: float, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "cat": cat, "ph": "X", "ts": start * 1e6, "dur": dur * 1e6, "pid": 1, "tid": 1, "args": args}


def _json_default(value: Any) -> Any:
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def check_writable(path: str | os.PathLike[str]) -> Path:
    """Fail early, in one sentence, when ``path`` cannot be written (before any profiling)."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise FxtuiError(f"cannot write {p}: it is a directory")
    if not parent.is_dir():
        raise FxtuiError(f"cannot write {p}: the directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise FxtuiError(f"cannot write {p}: the directory {parent} is not writable")
    if p.exists() and not os.access(p, os.W_OK):
        raise FxtuiError(f"cannot write {p}: the file is not writable")
    return p


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (temporary file, then rename)."""
    p = check_writable(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent if str(p.parent) else ".")
    try:
        # mkstemp makes the file private (0600); an export should get the mode any new
        # file gets here, or keep the mode of the file it replaces.
        os.fchmod(fd, p.stat().st_mode & 0o7777 if p.exists() else 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise FxtuiError(f"cannot write {p}: {e.strerror or e}") from e
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def export(
    report: Report, *, json_path: str | None = None, csv_path: str | None = None, trace_path: str | None = None
) -> list[str]:
    """Write the requested exports; returns the paths written."""
    written = []
    if json_path:
        write_atomic(json_path, report_json(report))
        written.append(json_path)
    if csv_path:
        write_atomic(csv_path, report_csv(report))
        written.append(csv_path)
    if trace_path:
        write_atomic(trace_path, json.dumps(chrome_trace(report)))
        written.append(trace_path)
    return written


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
