"""A program's profile printed (``fxtui run --once``, ``fxtui attach --once``, and after either's app): the
header, the table within the terminal's width, the exports, and the next command to try."""

from __future__ import annotations

import sys

from fxtui.commands.next_command import NextCommand
from fxtui.commands.output import say, table_width, write_exports
from fxtui.core.settings import OutputSettings
from fxtui.core.snapshot import Snapshot
from fxtui.report.data import ReportData


def print_snapshot(snapshot: Snapshot, output: OutputSettings, next_command: NextCommand | None = None) -> None:
    """The header and the table of a program's profile, then the exports (``wrote …``) and ``next_command``."""
    from fxtui.report.api import Report

    print_report(Report.from_snapshot(snapshot), output, next_command)


def print_report(report: ReportData, output: OutputSettings, next_command: NextCommand | None = None) -> None:
    """A report's header and table (a program's last profile saved to a file too), then the exports and
    ``next_command`` (:func:`~fxtui.commands.next_command.program_next_command`)."""
    from fxtui.report.text import header, module_table, table

    width = table_width()
    sys.stdout.flush()
    say("\n" + header(report, width=width) + "\n")
    if report.rows:
        top = output.top or None
        if output.modules:
            say(module_table(report, top=top, path=output.spec.path, width=width))
        else:
            say(table(report, sort=output.sort, top=top, spec=output.spec, columns=output.columns, width=width))
    write_exports(report, output.export_paths)
    if next_command is not None:
        say("\n" + next_command.text(width))
