"""A report's tables as pandas frames (:meth:`fxtui.Report.to_dataframe`); pandas is not a dependency of fxtui.

The frame's columns are the JSON's row keys (:mod:`fxtui.report.json_rows`): ``name``, ``module_path``,
``median_s``, ``run_frac`` (0–1), ``shape`` (a list of sizes) … one row per node, every rank's in a
distributed job (``rank`` says whose). A value that does not apply is missing (``NaN``/``None``).

Why not ``pd.read_json("run.json")``: that call reads one table, and a report file is an object holding
three (``metadata``, ``rows``, ``modules``) of different lengths, so pandas stops with "All arrays must be
of the same length". Without fxtui, read the table you want::

    import json, pandas as pd
    with open("run.json") as f:
        saved = json.load(f)
    rows = pd.DataFrame(saved["rows"])        # or pd.json_normalize(saved, "rows")
"""

from __future__ import annotations

from typing import Any

from fxtui.core.errors import FxtuiError
from fxtui.report.data import ReportData
from fxtui.report.json_rows import module_columns, row_columns

#: The tables :func:`dataframe` makes.
TABLES = ("rows", "modules")


def dataframe(report: ReportData, table: str = "rows") -> Any:
    """``table`` (``rows``: one per node; ``modules``: one per module path) as a ``pandas.DataFrame``."""
    if table not in TABLES:
        raise FxtuiError(f"unknown table {table!r}: choose rows or modules")
    try:
        import pandas as pd
    except ImportError:
        raise FxtuiError("to_dataframe() needs pandas, which fxtui does not install: pip install pandas") from None
    if table == "rows":
        return pd.DataFrame.from_records(report.row_records(), columns=row_columns())
    return pd.DataFrame.from_records(report.module_records(), columns=module_columns())
