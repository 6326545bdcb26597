"""The ``fxtui`` command: parse arguments, build engine objects, then open the app or print a report.

This is the only module that imports both the engine and the UI. Torch and
Textual are imported only once it is known which of them is needed.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from fxtui.commands.options import (
    add_export_options,
    add_table_options,
    column_keys,
    count_type,
    filter_spec,
    output_exports,
)
from fxtui.commands.output import say
from fxtui.core.captures import CHOICES as CAPTURE_CHOICES
from fxtui.core.captures import MODES as CAPTURE_MODES
from fxtui.core.compilation import COMPILE_MODES
from fxtui.core.errors import FxtuiError
from fxtui.core.settings import ModelSettings, OutputSettings, Target, parse_hf_config, parse_shape

EXIT_USAGE = 2
EXIT_INTERNAL = 1

_EPILOG = """\
TARGET is a torchvision model name (resnet18, mobilenet_v3_small, …), or
hf:MODEL_TYPE (hf:bert, hf:gpt2, hf:vit: a transformers model from its default
configuration, random weights), or package.module:attr, or path/to/file.py:attr,
where attr is an nn.Module class, an instance, or a factory returning a module,
(module, args) or (module, args, kwargs).
A file.py TARGET is executed as Python code: only name files you trust.

On a terminal fxtui opens the live app; with --once, or when stdout is not a
terminal, it profiles --runs runs and prints a table.

fxtui diff BEFORE.json AFTER.json compares two runs saved with --save.
"""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one sentence and exit status 2."""

    def error(self, message: str) -> NoReturn:
        raise FxtuiError(f"{message} (see fxtui --help)")


def _shape(text: str) -> tuple[int, ...]:
    try:
        return parse_shape(text)
    except FxtuiError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _thread_list(text: str) -> tuple[int, ...]:
    parse = count_type("--threads", 1)
    values = tuple(parse(part) for part in text.split(",") if part.strip())
    if not values:
        raise argparse.ArgumentTypeError(f"--threads takes numbers like 2 or 1,2, not {text!r}")
    return values


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for ``fxtui TARGET``."""
    p = _Parser(
        prog="fxtui",
        description="Profile a PyTorch model node by node with torch.fx, live in the terminal.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("target", metavar="TARGET", help="model to profile (see below)")
    g = p.add_argument_group("model and inputs")
    g.add_argument(
        "--input-shape",
        action="append",
        type=_shape,
        metavar="SHAPE",
        help="shape of one input, e.g. 5,3,224,224 (repeat for several inputs)",
    )
    g.add_argument("--dtype", help="input and parameter dtype: float32 (default), float64, bfloat16, float16")
    g.add_argument("--submodule", metavar="PATH", help="profile only this submodule, e.g. backbone")
    g.add_argument(
        "--capture",
        choices=CAPTURE_CHOICES,
        default="auto",
        help="how the model becomes timed nodes: "
        + "; ".join(f"{m.name}: {m.how}" for m in CAPTURE_MODES.values() if m.choosable)
        + "; auto: fx, then dynamo when the model cannot be traced (default)",
    )
    g.add_argument(
        "--train",
        action="store_true",
        help="profile a whole training step: forward, loss, backward and optimizer, per node",
    )
    g.add_argument(
        "--optimizer",
        choices=("sgd", "adamw"),
        default="sgd",
        help="with --train: the optimizer whose step is timed (default sgd)",
    )
    g.add_argument(
        "--generate",
        type=count_type("--generate", 1),
        metavar="N",
        help="profile generate() calls of N new tokens (greedy, fixed length) of a causal language model: "
        "the prefill and the decode steps per node and module, time to first token, time per token, the KV cache",
    )
    g.add_argument(
        "--compile",
        action="store_true",
        help="compile the model with Inductor (torch.compile) and time every kernel, charged to the modules "
        "of the nodes it fuses, each module's eager time measured beside it",
    )
    g.add_argument(
        "--compile-mode",
        choices=COMPILE_MODES,
        default="default",
        help="with --compile: Inductor's mode (default: default)",
    )
    g.add_argument(
        "--hf-config",
        metavar="KEY=VALUE,…",
        help="for hf: targets, change configuration values first, e.g. num_hidden_layers=2",
    )
    g.add_argument(
        "--threads",
        type=_thread_list,
        metavar="N[,N…]",
        help="torch intra-op threads; more than one (1,2): profile at the first, measure each other count "
        "against it as a what-if (threads=N)",
    )
    g.add_argument(
        "--keep-disturbed",
        action="store_true",
        help="keep steps that other processes disturbed in the statistics (default: leave them out, "
        "never more than half, and say how many)",
    )
    g.add_argument(
        "--malloc",
        choices=("keep", "glibc"),
        default="keep",
        help="keep: freed memory stays in the process, so no node pays page faults for buffers the "
        "allocator gave back (default); glibc: measure with glibc's own policy",
    )
    r = p.add_argument_group("runs (headless)")
    r.add_argument("--once", action="store_true", help="profile --runs runs, print a table, exit (no app)")
    r.add_argument("--runs", type=count_type("--runs", 1), default=30, metavar="N", help="profiled runs (default 30)")
    r.add_argument(
        "--warmup", type=count_type("--warmup", 0), default=3, metavar="N", help="runs before timing starts (default 3)"
    )
    add_table_options(p)
    x = p.add_argument_group("explain (headless)")
    x.add_argument(
        "--aten",
        type=count_type("--aten", 1),
        nargs="?",
        const=5,
        metavar="N",
        help="which aten operators the top N nodes of the table run (default 5)",
    )
    x.add_argument(
        "--hints",
        action="store_true",
        help="suggestions with evidence and estimated savings; the Conv-BN fold is measured (what-if fold-bn)",
    )
    x.add_argument(
        "--what-if",
        metavar="NAME[,NAME…]",
        help="apply each change to a copy of the model and measure it against the original, runs interleaved "
        "(at most 20 pairs, fewer with a smaller --runs): channels-last, bf16 (CPU autocast), fold-bn, "
        "threads=N, compile, int8-dynamic",
    )
    add_export_options(p)
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def build_diff_parser() -> argparse.ArgumentParser:
    """The argument parser for ``fxtui diff BEFORE AFTER``."""
    p = _Parser(prog="fxtui diff", description="Compare two runs saved with --save (or --json).")
    p.add_argument("before", metavar="BEFORE", help="the earlier run's JSON")
    p.add_argument("after", metavar="AFTER", help="the later run's JSON")
    p.add_argument("--top", type=count_type("--top", 0), default=20, metavar="N", help="nodes to show (0: all)")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        if argv[:1] == ["diff"]:
            return _diff(build_diff_parser().parse_args(argv[1:]))
        if argv[:1] == ["run"]:
            from fxtui.commands import run as run_command

            return run_command.main(argv[1:])
        if argv[:1] == ["attach"]:
            from fxtui.commands import attach as attach_command

            return attach_command.main(argv[1:])
        args = build_parser().parse_args(argv)
        settings, output = model_settings(args), output_settings(args)
        if args.once or not sys.stdout.isatty():
            from fxtui.commands import model_headless as headless

            return headless.run(settings, output)
        return _live(settings, output)
    except FxtuiError as e:
        if debug:
            traceback.print_exc()
        say(f"fxtui: {e}", sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        say("fxtui: interrupted", sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (fxtui … | head): not an error. Point stdout at
        # /dev/null so the interpreter's final flush does not complain either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:  # a bug in fxtui rather than in the user's input
        if debug:
            traceback.print_exc()
        say(f"fxtui: internal error {type(e).__name__}: {e} (run with --debug for details)", sys.stderr)
        return EXIT_INTERNAL


def _target(args: argparse.Namespace) -> Target:
    if args.compile_mode != "default" and not args.compile:
        raise FxtuiError(f"--compile-mode {args.compile_mode} is Inductor's mode for --compile: add --compile")
    shapes = tuple(args.input_shape) if args.input_shape else None
    return Target(
        args.target,
        input_shapes=shapes,
        dtype=args.dtype,
        submodule=args.submodule,
        capture=args.capture,
        hf_config=parse_hf_config(args.hf_config) if args.hf_config else (),
        train=args.train,
        optimizer=args.optimizer,
        generate=args.generate or 0,
        compile=args.compile,
        compile_mode=args.compile_mode,
    )


def model_settings(args: argparse.Namespace) -> ModelSettings:
    """What ``args`` ask of the profile, as one immutable value."""
    from fxtui.core.columns import MEMORY
    from fxtui.core.what_if_catalogue import parse_what_ifs

    names = parse_what_ifs(args.what_if) if args.what_if else ()
    names += tuple(f"threads={n}" for n in (args.threads or ())[1:])
    columns = column_keys(args)
    # A memory column or sort asks for the memory pass as --memory does.
    memory = args.memory or bool({*columns, args.sort} & {*MEMORY, "saved"})
    exporting = bool(output_exports(args))
    return ModelSettings(
        target=_target(args),
        threads=tuple(args.threads or ()),
        runs=args.runs,
        warmup=args.warmup,
        malloc=args.malloc,
        keep_disturbed=args.keep_disturbed,
        memory=memory,
        what_ifs=tuple(dict.fromkeys(names)),
        hints=args.hints,
        aten=args.aten,
        # FLOPs, bytes, source lines and the machine's peaks cost about a second more; only
        # when the output shows them.
        analyse=exporting or args.hints or bool(set(columns) - {"mean", "min", "max", "iqr"}),
    )


def output_settings(args: argparse.Namespace) -> OutputSettings:
    """How ``args`` ask the headless command to show the profile."""
    from fxtui.core.columns import MEMORY

    columns = column_keys(args)
    if args.memory or {*columns, args.sort} & {*MEMORY, "saved"}:
        wanted = (*MEMORY, "saved") if args.train else MEMORY
        columns += tuple(c for c in wanted if c not in columns)
    return OutputSettings(
        sort=args.sort,
        top=args.top,
        spec=filter_spec(args),
        modules=args.modules,
        columns=columns,
        exports=output_exports(args),
    )


def _diff(args: argparse.Namespace) -> int:
    from fxtui.report.diff import diff_files

    diff = diff_files(args.before, args.after)
    if not (sys.stdout.isatty() and sys.stdin.isatty()):
        from fxtui.report.findings_text import diff_table

        say(diff_table(diff, top=args.top or None))
        return 0
    # On a terminal the comparison opens as an app; the UI is imported only then.
    from fxtui.ui.diff_app import DiffApp

    DiffApp(diff, title=f"fxtui diff {args.before} {args.after}").run()
    return 0


def _live(settings: ModelSettings, output: OutputSettings) -> int:
    from fxtui.commands.model_app import run_app

    return run_app(settings)
