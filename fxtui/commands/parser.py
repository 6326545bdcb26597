"""The ``fxtui`` command line: one parser, a subcommand per command, options before or after the command word.

``fxtui MODEL`` is the command without a word (``fxtui resnet18 --once``); the others are named:
``run``, ``attach``, ``diff``, ``models``, and ``help``. Each command is one file of this folder,
named in :data:`COMMANDS` by its module path (``tests/test_layering.py`` checks that each resolves);
each adds its own options (``add_arguments``) and runs from the parsed arguments (``run``). This
module imports none of them until it parses, and none of them imports this one.

Options may come before the command word (``fxtui --once run train.py``): they are moved after it,
so each command's parser reads all of its options. Everything after ``fxtui run``'s script (or
``-m MODULE``) is the program's own, never fxtui's.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NoReturn

from fxtui.commands.usage import UsageError, help_hint


@dataclass(frozen=True)
class Command:
    """One command of ``fxtui``: what the overview says of it and where its code is."""

    name: str
    """The command word (``run``); ``model`` is the command without a word, ``fxtui MODEL``."""
    module: str
    """The module that adds its options (``add_arguments(parser)``) and runs it (``run(args) -> int``)."""
    usage: str
    """How it is called, as its own help shows it."""
    synopsis: str
    """How it is called, short, as the overview shows it."""
    summary: str
    """What it does, in one line."""
    example: str
    """A command line a user can type as is."""


#: Every command, in the order the overview lists them.
COMMANDS: tuple[Command, ...] = (
    Command(
        "model",
        "fxtui.commands.model",
        "fxtui MODEL [OPTIONS]",
        "fxtui MODEL",
        "profile a model node by node (fxtui models lists names)",
        "fxtui resnet18 --once",
    ),
    Command(
        "run",
        "fxtui.commands.run",
        "fxtui run [OPTIONS] SCRIPT [ARGS…]",
        "fxtui run SCRIPT",
        "profile your own program as it runs, unchanged",
        "fxtui run train.py --epochs 1",
    ),
    Command(
        "attach",
        "fxtui.commands.attach",
        "fxtui attach [OPTIONS] [JOB]",
        "fxtui attach [JOB]",
        "watch a job of fxtui run's; leaving never stops it",
        "fxtui attach --once",
    ),
    Command(
        "diff",
        "fxtui.commands.diff_command",
        "fxtui diff [OPTIONS] BEFORE AFTER",
        "fxtui diff A B",
        "compare two profiles saved with --json",
        "fxtui diff before.json after.json",
    ),
    Command(
        "models",
        "fxtui.commands.models",
        "fxtui models [PATTERN]",
        "fxtui models",
        "list the models fxtui builds by name",
        "fxtui models resnet",
    ),
)
BY_NAME = {c.name: c for c in COMMANDS}
#: Words that are not commands of their own: the overview (``fxtui help [COMMAND]``) and the version.
HELP, VERSION = "help", "version"


class _Parser(argparse.ArgumentParser):
    """An argument parser whose mistakes are one sentence that points at its command's help (exit status 2)."""

    command = ""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} ({help_hint(self.command)})")


@dataclass(frozen=True)
class Invocation:
    """What the command line asks for: a command and its parsed arguments, or the overview or the version."""

    command: str
    """A name of :data:`COMMANDS`, :data:`HELP` or :data:`VERSION`."""
    args: argparse.Namespace
    """The command's options (``help``: ``topic``, the command whose help to show)."""

    def runner(self) -> Callable[[argparse.Namespace], int]:
        """The command's ``run(args)``."""
        run: Callable[[argparse.Namespace], int] = importlib.import_module(BY_NAME[self.command].module).run
        return run


def command_parser(name: str) -> argparse.ArgumentParser:
    """The parser of one command (``fxtui run``'s options, without the program)."""
    command = BY_NAME[name]
    module = importlib.import_module(command.module)
    p = _Parser(
        prog="fxtui" if name == "model" else f"fxtui {name}",
        usage=getattr(module, "USAGE", command.usage),
        description=module.DESCRIPTION,
        epilog=getattr(module, "EPILOG", None),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.command = name
    module.add_arguments(p)
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def parse(argv: Sequence[str]) -> Invocation:
    """Read the command line; :class:`UsageError` for a mistake, ``SystemExit(0)`` after ``--help``.

    The arguments keep the command line as typed (``args.argv``), for the next command a table suggests.
    """
    invocation = _parse(list(argv))
    invocation.args.argv = list(argv)
    return invocation


def _parse(argv: list[str]) -> Invocation:
    at = _command_word(argv)
    before, word, after = (argv[:at], argv[at], argv[at + 1 :]) if at is not None else (argv, "", [])
    if word == VERSION or (word not in BY_NAME and word != HELP and _asks(before, "-V", "--version")):
        return Invocation(VERSION, argparse.Namespace())
    if word == HELP:
        topic = next((a for a in after if not a.startswith("-")), "")
        if topic and topic not in BY_NAME:
            raise UsageError(f"no command {topic!r}; the commands are {', '.join(BY_NAME)} ({help_hint('')})")
        return Invocation(HELP, argparse.Namespace(topic=topic))
    if not word:
        if not argv or _asks(before, "-h", "--help"):
            return Invocation(HELP, argparse.Namespace(topic=""))
        raise UsageError(f"name a model to profile or a command: fxtui resnet18, fxtui run train.py ({help_hint('')})")
    if word not in BY_NAME:  # fxtui MODEL: the model is the first argument that is not an option
        return Invocation("model", command_parser("model").parse_args(argv))
    parser = command_parser(word)
    if word != "run":
        return Invocation(word, parser.parse_args([*before, *after]))
    own, program = split_program(after, parser)
    args = parser.parse_args([*before, *own])
    args.program = program
    return Invocation(word, args)


def split_program(argv: Sequence[str], parser: argparse.ArgumentParser) -> tuple[list[str], list[str]]:
    """``fxtui run``'s own options, and the program: from the first argument that is not an option of fxtui
    run's (or ``-m``, or after ``--``) on."""
    valued = _takes_value([parser])
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return list(argv[:i]), list(argv[i + 1 :])
        if arg == "-m" or not arg.startswith("-") or arg == "-":
            return list(argv[:i]), list(argv[i:])
        i += 2 if arg in valued else 1
    return list(argv), []


def overview() -> str:
    """``fxtui --help``: every command, one line each and an example (within 80 columns)."""
    lines = [
        "usage: fxtui MODEL [OPTIONS]",
        "       fxtui COMMAND [OPTIONS] …",
        "",
        "Profile PyTorch models and programs node by node, live in the terminal.",
        "",
        "commands:",
    ]
    for c in COMMANDS:
        lines += [f"  {c.synopsis:<21}{c.summary}", f"  {'':<21}  {c.example}"]
    lines += [
        f"  {'fxtui help [COMMAND]':<21}this overview, or one command's options",
        f"  {'':<21}  fxtui help run   (or: fxtui run --help)",
        "",
        "options:",
        f"  {'-h, --help':<21}this overview",
        f"  {'-V, --version':<21}fxtui's version, and torch's",
        "",
        "On a terminal fxtui MODEL and fxtui run open the live app; with --once, or when",
        "stdout is not a terminal, they print a table. Options may come before or after",
        "the command word: fxtui --once run train.py.",
    ]
    return "\n".join(lines)


def help_text(topic: str) -> str:
    """``fxtui help [COMMAND]``: the overview, or one command's help."""
    return command_parser(topic).format_help() if topic else overview() + "\n"


def version_text() -> str:
    """``fxtui --version``: fxtui's version, and torch's when installed (read from its metadata: no import)."""
    from importlib import metadata

    line = f"fxtui {importlib.import_module('fxtui').__version__}"
    try:
        return f"{line} (torch {metadata.version('torch')})"
    except metadata.PackageNotFoundError:
        return f"{line} (torch not installed)"


def takes_value() -> set[str]:
    """Every option of every command that takes a value in the next argument (``--top 5``)."""
    return _takes_value([command_parser(name) for name in BY_NAME])


def _command_word(argv: Sequence[str]) -> int | None:
    """The index of the first argument that is not an option (nor an option's value); None when there is none."""
    if argv and (not argv[0].startswith("-") or argv[0] == "-"):
        # The usual command line (fxtui run train.py): the command word comes first. Knowing which options take a
        # value needs every command's parser, each command's module imported: time before fxtui run's program
        # starts, and of no use here.
        return 0
    parsers = [command_parser(name) for name in BY_NAME]
    valued = _takes_value(parsers)
    optional_value = {
        flag for p in parsers for action in p._actions if action.nargs == "?" for flag in action.option_strings
    }
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return None
        if not arg.startswith("-") or arg == "-":
            return i
        if arg in valued:
            i += 2
        elif arg in optional_value and i + 1 < len(argv) and argv[i + 1].isdigit():
            i += 2  # --aten 3
        else:
            i += 1
    return None


def _takes_value(parsers: Sequence[argparse.ArgumentParser]) -> set[str]:
    """The options of ``parsers`` that take a value in the next argument (``--top 5``; not ``--top=5``)."""
    return {
        flag for p in parsers for action in p._actions if action.nargs not in (0, "?") for flag in action.option_strings
    }


def _asks(args: Sequence[str], *flags: str) -> bool:
    return any(a in flags for a in args)
