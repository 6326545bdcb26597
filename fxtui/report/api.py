"""The Python API's :class:`Report`: a profile's data (:class:`~fxtui.report.data.ReportData`) with text and files.

The data, its JSON form and loading are torch-free and live in :mod:`fxtui.report.data`;
this class adds the conveniences that print it (:mod:`fxtui.report.text`) and write it
(:mod:`fxtui.report.export`), so ``fxtui.profile(...)`` returns one object that does both.
"""

from __future__ import annotations

from typing import Any

from fxtui.core.filters import FilterSpec
from fxtui.report import export
from fxtui.report import text as render
from fxtui.report.data import ReportData


class Report(ReportData):
    """The result of a profile: rows, modules and figures (:class:`ReportData`), printable and exportable."""

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
        """The report as JSON text."""
        return export.report_json(self)

    def to_csv(self) -> str:
        """One CSV line per node, graph order, with a header line."""
        return export.report_csv(self)

    def to_chrome_trace(self) -> dict[str, Any]:
        """One representative run as nested spans (module → node) in the Chrome trace event format."""
        return export.chrome_trace(self)

    def to_dataframe(self) -> Any:
        """The node rows as a ``pandas.DataFrame`` (one column per saved field); needs pandas installed."""
        return export.dataframe(self)
