"""``fxtui diff BEFORE AFTER``: compare two profiles saved with ``--json``, as an app on a terminal or a table."""

from __future__ import annotations

import argparse
import sys

from fxtui.commands.options import count_type
from fxtui.commands.output import say, table_width

DESCRIPTION = "Compare two profiles saved with --json (or --save): what got faster, what got slower."
EPILOG = """\
On a terminal the comparison opens as an app; otherwise (a pipe, a file) it
prints the totals, then the nodes and modules by how much they changed.

examples:
  fxtui resnet18 --once --json before.json
  fxtui resnet18 --once --json after.json --threads 4
  fxtui diff before.json after.json
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``fxtui diff``."""
    p.add_argument("before", metavar="BEFORE", help="the earlier profile's JSON")
    p.add_argument("after", metavar="AFTER", help="the later profile's JSON")
    p.add_argument("--top", type=count_type("--top", 0), default=20, metavar="N", help="nodes to show (0: all)")


def run(args: argparse.Namespace) -> int:
    """``fxtui diff``; its exit status."""
    from fxtui.report.diff import diff_files

    diff = diff_files(args.before, args.after)
    if not (sys.stdout.isatty() and sys.stdin.isatty()):
        from fxtui.report.findings_text import diff_table

        say(diff_table(diff, top=args.top or None, width=table_width()))
        return 0
    # On a terminal the comparison opens as an app; the UI is imported only then.
    from fxtui.ui.diff_app import DiffApp

    DiffApp(diff, title=f"fxtui diff {args.before} {args.after}").run()
    return 0
