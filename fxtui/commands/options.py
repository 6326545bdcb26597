"""Command-line options shared by the commands: the table, the filters, the exports, and their checks.

Each option is defined here once; each command adds the groups that apply to it (a program's table
offers no FX op types and no memory pass) and reads them back into the same settings
(:class:`~fxtui.core.settings.OutputSettings`).
"""

from __future__ import annotations

import argparse

from fxtui.core.columns import check_extra, sort_column
from fxtui.core.errors import FxtuiError
from fxtui.core.filters import FilterSpec, parse_ops, parse_phases, parse_types
from fxtui.core.settings import OutputSettings


def count_type(name: str, minimum: int) -> type:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} takes a whole number, not {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{name} must be at least {minimum}, not {value}")
        return value

    parse.__name__ = name
    return parse  # type: ignore[return-value]


#: The keys ``--sort`` takes for a model's table and for a program's.
MODEL_SORT_KEYS = "median (default), mean, p90, max, pct, iqr, calls, name, path, order, output, alloc, live"
PROGRAM_SORT_KEYS = "median (default), mean, p90, max, pct, iqr, calls, name, path, order"
#: The extra columns a program's table can show: its nodes are ATen ops timed as they run, with no FLOPs or memory.
PROGRAM_EXTRA = ("mean", "min", "max", "iqr", "source")


def add_table_options(p: argparse.ArgumentParser, *, program: bool = False) -> None:
    """The headless table's options; ``program``: as ``fxtui run`` and ``fxtui attach`` have them, else as
    ``fxtui MODEL`` has them. Each help says only what applies to that command."""
    t = p.add_argument_group("table")
    t.add_argument("--sort", default="median", metavar="KEY", help=PROGRAM_SORT_KEYS if program else MODEL_SORT_KEYS)
    t.add_argument("--top", type=count_type("--top", 0), default=20, metavar="N", help="rows to show (0: all)")
    if not program:  # a program's rows are all ATen calls: the FX op type tells none apart
        t.add_argument("--op", metavar="OPS", help="only these FX op types, e.g. call_module,call_function")
    t.add_argument("--path", metavar="GLOB", help="only module paths matching this glob or substring")
    if program:
        t.add_argument("--type", metavar="OPS", help="only these ATen ops, e.g. addmm,mm or aten.addmm")
        t.add_argument(
            "--phase", metavar="PHASES", help="only these phases of a step, e.g. backward or forward,optimizer"
        )
    else:
        t.add_argument("--type", metavar="TYPES", help="only these targets, e.g. Conv2d,add")
        t.add_argument(
            "--phase", metavar="PHASES", help="with --train or --generate: only these phases, e.g. backward or decode"
        )
    t.add_argument(
        "--modules", action="store_true", help="a table of module paths (inclusive and self time) instead of nodes"
    )
    t.add_argument(
        "--columns",
        metavar="COLS",
        help="extra columns: "
        + (
            ", ".join(PROGRAM_EXTRA)
            if program
            else "flops, gflops, gbps, intensity, bound, roofline, params, mean, min, max, iqr, source, output, "
            "alloc, live, saved"
        ),
    )
    if not program:
        t.add_argument(
            "--memory",
            action="store_true",
            help="memory per node (output, allocated, live after) and the peak, measured in one run before timing "
            "(the app always measures it: m shows it)",
        )


def add_export_options(p: argparse.ArgumentParser) -> None:
    """The export options (``fxtui TARGET``, ``fxtui run`` and ``fxtui attach`` share them): one per format."""
    from fxtui.report.formats import FORMATS  # light: no writer imported

    e = p.add_argument_group("export (written whole or not at all)")
    for name, form in FORMATS.items():
        e.add_argument(form.option, *form.aliases, dest=name, metavar="FILE", help=form.help)


def filter_spec(args: argparse.Namespace, phases_ok: bool = False) -> FilterSpec:
    """The filter ``--op``, ``--path``, ``--type`` and ``--phase`` ask for (``phases_ok``: whatever the capture)."""
    try:
        ops = parse_ops(args.op) if getattr(args, "op", None) else frozenset()
    except ValueError as e:
        raise FxtuiError(f"--op: {e}") from None
    try:
        phases = parse_phases(args.phase) if args.phase else frozenset()
    except ValueError as e:
        raise FxtuiError(f"--phase: {e}") from None
    if phases and not (phases_ok or args.train or getattr(args, "generate", None)):
        raise FxtuiError("--phase filters the phases of a training step or a generation: add --train or --generate")
    types = parse_types(args.type) if args.type else frozenset()
    return FilterSpec(ops=ops, path=args.path or "", types=types, phases=phases)


def output_exports(args: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    """(format, path) of every export asked for, in :data:`~fxtui.report.formats.FORMATS` order."""
    from fxtui.report.formats import FORMATS

    return tuple((name, path) for name in FORMATS if (path := getattr(args, name, None)))


def column_keys(args: argparse.Namespace) -> tuple[str, ...]:
    """The keys ``--columns`` names, in order."""
    return tuple(c.strip() for c in (args.columns or "").split(",") if c.strip())


def add_kind_option(p: argparse.ArgumentParser) -> None:
    """``fxtui run`` and ``fxtui attach``: which kind of step's nodes the table shows."""
    from fxtui.core.step_kinds import STEP_KINDS

    p.add_argument(
        "--kind",
        choices=STEP_KINDS,
        default="",
        help="the nodes of which kind of step: train (training steps), eval (evaluation calls), generate "
        "(generate() calls); default: training when the program trains",
    )


def program_output(args: argparse.Namespace) -> OutputSettings:
    """How ``fxtui run`` and ``fxtui attach`` show a program's profile (every phase may be filtered)."""
    columns = column_keys(args)
    unknown = [c for c in columns if c not in PROGRAM_EXTRA]
    if unknown:
        raise FxtuiError(f"--columns: a program's table has no column {unknown[0]!r}; choose from "
                         f"{', '.join(PROGRAM_EXTRA)}")  # fmt: skip
    return OutputSettings(
        sort=args.sort,
        top=args.top,
        spec=filter_spec(args, phases_ok=True),
        modules=args.modules,
        columns=columns,
        exports=output_exports(args),
        kind=getattr(args, "kind", ""),
    )


def check_output(output: OutputSettings) -> None:
    """Everything the user could have mistyped in how to show the profile, checked before any work starts."""
    sort_column(output.sort)
    check_extra(output.columns)
    if any(output.export_paths.values()):  # the writers' module is imported only when a file is asked for
        from fxtui.report.export import check_exports

        check_exports(output.export_paths)
