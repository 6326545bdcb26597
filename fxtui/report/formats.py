"""The kinds of file a report can be written as: their options and help, and where each one's writer lives.

Light on purpose: the commands build their ``--json``, ``--csv`` … options from :data:`FORMATS` before a program
starts (``fxtui run``'s fixed cost), so a format's writer is imported only when a file of it is written.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fxtui.report.data import ReportData


@dataclass(frozen=True)
class ExportFormat:
    """One kind of file a report can be written as."""

    option: str
    """The command-line option that asks for it (``--json``)."""
    writer: str
    """Where the function that renders a report as the file's text lives: ``module:function``."""
    help: str = ""
    """What ``--help`` says of it."""
    needs_timeline: bool = False
    """It needs one representative run recorded (the Chrome trace)."""
    aliases: tuple[str, ...] = ()
    """Other options that ask for it (``--save``)."""

    @property
    def render(self) -> Callable[[ReportData], str]:
        """The report as the file's text (the writer's module imported on first use)."""
        module, name = self.writer.split(":")
        render: Callable[[ReportData], str] = getattr(importlib.import_module(module), name)
        return render


#: Every export format, by the name the Python API and ``--OPTION FILE`` use: one line each (the format's own
#: file renders it).
FORMATS: dict[str, ExportFormat] = {
    "json": ExportFormat(
        "--json",
        "fxtui.report.export:report_json",
        "rows, modules and metadata as versioned JSON (fxtui.load reads it back; compare two with fxtui diff)",
        aliases=("--save",),
    ),
    "csv": ExportFormat(
        "--csv", "fxtui.report.csv_table:report_csv", "one line per node (every rank's), cells a spreadsheet reads"
    ),
    "chrome_trace": ExportFormat(
        "--chrome-trace",
        "fxtui.report.chrome_trace:trace_json",
        "one representative run for Perfetto / chrome://tracing",
        needs_timeline=True,
    ),
    "speedscope": ExportFormat(
        "--speedscope",
        "fxtui.report.speedscope:speedscope_json",
        "a flame graph of the time by module and node, for www.speedscope.app",
    ),
    "folded": ExportFormat(
        "--folded",
        "fxtui.report.folded:folded_text",
        "the same as folded stacks (ns) for flamegraph.pl, speedscope and others",
    ),
}
