"""A report as CSV (``--csv``): one line per node, the columns the JSON's rows have, cells a spreadsheet reads.

Each cell is one value, written the same way whatever reads it:

* a number is a number (``0.000123``, ``1.2e-05``, ``512``); ``true`` and ``false`` for a yes or no;
* a value that does not apply is an empty cell (as ``null`` in the JSON), and so is an empty list;
* a list is its items joined by ``;`` (``gradients``, ``fused_nodes``, ``fused_modules``), and a shape's
  sizes by ``×``: ``shape`` is ``1×4×16×16`` (a node that returns several tensors: ``2×16;2``), beside
  ``shape_text`` as the table shows it.

A distributed job has every rank's rows, the ``rank`` column saying whose.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from fxtui.report.data import ReportData
from fxtui.report.json_rows import row_columns


def report_csv(report: ReportData) -> str:
    """One CSV line per node (every rank's, in a distributed job), graph order, a header line first."""
    records = report.row_records()
    header = list(records[0]) if records else row_columns()
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    for record in records:
        # csv writes numbers, texts and None (an empty cell) as they should be; yes-or-no and lists need a rule
        writer.writerow([v if (v := record.get(key)).__class__ not in _RULED else cell(key, v) for key in header])
    return out.getvalue()


_RULED = (bool, list)


def cell(key: str, value: Any) -> str:
    """One JSON value as a CSV cell, by the rules above."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        return _shape_cell(value) if key == "shape" else ";".join(cell(key, item) for item in value)
    return str(value)


def _shape_cell(shape: list[Any]) -> str:
    """``1×4×16×16``; several outputs' shapes ``2×16;2``."""
    if shape and all(isinstance(part, list) for part in shape):
        return ";".join("×".join(map(str, part)) for part in shape)
    return "×".join(map(str, shape))
