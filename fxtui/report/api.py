"""The Python API's :class:`Report`: a profile's data (:class:`~fxtui.report.data.ReportData`) with text and files.

The data, its JSON form and loading are torch-free and live in :mod:`fxtui.report.data`;
this class adds the conveniences that print it (:mod:`fxtui.report.text`) and write it
(:mod:`fxtui.report.export` and the format files), so ``fxtui.profile(...)`` and
``fxtui.load(path)`` return one object that does both.
"""

from __future__ import annotations

from typing import Any

from fxtui.core.filters import FilterSpec
from fxtui.report import text as render
from fxtui.report.chrome_trace import chrome_trace
from fxtui.report.csv_table import report_csv
from fxtui.report.data import ReportData
from fxtui.report.dataframe import dataframe
from fxtui.report.export import report_json
from fxtui.report.folded import folded_text
from fxtui.report.speedscope import speedscope_profile


class Report(ReportData):
    """The result of a profile: rows, modules and figures (:class:`ReportData`), printable and exportable.

    ``fxtui.profile(model, x)`` makes one; ``fxtui.load("run.json")`` reads one back from a file that
    ``--json``/``--save`` (or :meth:`to_json`) wrote.
    """

    def header(self) -> str:
        """The lines above the table (:func:`fxtui.report.text.header`)."""
        return render.header(self)

    def table(
        self, sort: str = "median", top: int | None = 20, spec: FilterSpec | None = None, columns: tuple[str, ...] = ()
    ) -> str:
        """The node table (:func:`fxtui.report.text.table`); ``columns`` adds any of
        :data:`fxtui.core.columns.EXTRA`."""
        return render.table(self, sort=sort, top=top, spec=spec, columns=columns)

    def module_table(self, top: int | None = 20, path: str = "") -> str:
        """Module paths by inclusive time (:func:`fxtui.report.text.module_table`)."""
        return render.module_table(self, top=top, path=path)

    def __str__(self) -> str:
        return self.header() + "\n\n" + self.table()

    def to_json(self) -> str:
        """The report as JSON text (what ``--json`` writes; :mod:`fxtui.report.json_schema` describes it)."""
        return report_json(self)

    def to_csv(self) -> str:
        """One CSV line per node (every rank's), graph order, with a header line (:mod:`fxtui.report.csv_table`)."""
        return report_csv(self)

    def to_chrome_trace(self) -> dict[str, Any]:
        """One representative run as nested spans (module → node) in the Chrome trace event format."""
        return chrome_trace(self)

    def to_speedscope(self) -> dict[str, Any]:
        """The time by module and node as a speedscope profile (a flame graph: :mod:`fxtui.report.speedscope`)."""
        return speedscope_profile(self)

    def to_folded(self) -> str:
        """The same as folded stacks, weights in nanoseconds (``flamegraph.pl``: :mod:`fxtui.report.folded`)."""
        return folded_text(self)

    def to_dataframe(self, table: str = "rows") -> Any:
        """A table as a ``pandas.DataFrame``: ``rows`` (one per node, every rank's; the JSON's row keys as
        columns) or ``modules`` (one per module path). Needs pandas, which fxtui does not install::

            report = fxtui.load("run.json")
            rows = report.to_dataframe()
            rows.groupby("module_path")["median_s"].sum().nlargest(5)

        :class:`~fxtui.core.errors.FxtuiError` says so in one sentence when pandas is missing.
        """
        return dataframe(self, table)
