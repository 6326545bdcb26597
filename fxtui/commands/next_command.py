"""The line under a headless table that suggests the user's next useful command, written out to copy.

One suggestion, the one a new user most likely wants next: a model's node table leads to its hints
(what to change), a table of modules to the nodes of the slowest one, a saved profile to ``fxtui diff``
after a change, and a profile seen every way to the live app. The command is the user's own, as typed,
with the options that would repeat work or overwrite a file (``--json FILE``) left out.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fxtui.core.settings import ModelSettings, OutputSettings

if TYPE_CHECKING:
    from fxtui.report.data import ReportData


@dataclass(frozen=True)
class NextCommand:
    """A command to suggest, and why."""

    args: tuple[str, ...]
    """The command after ``fxtui``."""
    why: str

    @property
    def command(self) -> str:
        return shlex.join(["fxtui", *self.args])

    def text(self, width: int | None = None) -> str:
        """``next: COMMAND   (why)``; the reason first and the command on a line of its own when that is too wide
        for ``width``."""
        line = f"next: {self.command}   ({self.why})"
        if width is None or len(line) <= width:
            return line
        return f"next ({self.why}):\n  {self.command}"


def model_next_command(
    argv: Sequence[str], settings: ModelSettings, output: OutputSettings, report: ReportData
) -> NextCommand | None:
    """``fxtui MODEL --once``'s suggestion; None when the command line is not known."""
    if not argv:
        return None
    json_path = output.export_paths.get("json")
    if output.modules:
        slowest = next((m.path for m in sorted(report.modules, key=lambda m: -m.inclusive_s) if m.path), "")
        if slowest:
            return _line(_rewrite(argv, drop=("--modules", "--path"), add=("--path", slowest)),
                         f"the nodes of {slowest}, the slowest module")  # fmt: skip
    if not settings.hints and not output.modules:
        return _line(_rewrite(argv, drop=("--hints",), add=("--hints",)), "what to change, with estimated savings")
    if json_path:
        return _line(["diff", json_path, "AFTER.json"], "after a change saved with --json AFTER.json: what moved")
    untried = [h.what_if for h in report.hints if h.what_if and h.what_if not in {w.name for w in report.what_ifs}]
    if untried:
        return _line(_rewrite(argv, drop=("--what-if",), add=("--what-if", untried[0])),
                     f"measures what the first hint suggests, {untried[0]}")  # fmt: skip
    return _line(_rewrite(argv, drop=("--once", "--modules", "--hints", "--what-if", "--top")),
                 "the live app: every node as it runs; keys sort, filter and explain")  # fmt: skip


def program_next_command(
    argv: Sequence[str], program: Sequence[str], output: OutputSettings, command: str
) -> NextCommand | None:
    """``fxtui run --once``'s (or ``fxtui attach --once``'s) suggestion; ``program`` is ``fxtui run``'s script
    and its arguments, the end of ``argv``."""
    if not argv:
        return None
    own = list(argv[: len(argv) - len(program)]) if program else list(argv)
    json_path = output.export_paths.get("json")
    if not output.modules:
        return _line([*_rewrite(own, add=("--modules",), after=command), *program], "the same profile by module")
    if json_path and command == "run":
        return _line(["diff", json_path, "AFTER.json"], "after a change saved with --json AFTER.json: what moved")
    live = "steps as they happen" if command == "run" else "the job live; leaving never stops it"
    return _line([*_rewrite(own, drop=("--once", "--modules", "--top")), *program], f"the live app: {live}")


def _line(args: Sequence[str], why: str) -> NextCommand:
    return NextCommand(tuple(args), why)


def _rewrite(argv: Sequence[str], *, drop: Sequence[str] = (), add: Sequence[str] = (), after: str = "") -> list[str]:
    """``argv`` without the options ``drop`` names (and their values) nor any export, with ``add`` after the
    command word ``after`` (at the end when none)."""
    from fxtui.commands.parser import takes_value
    from fxtui.report.formats import FORMATS

    valued = takes_value()
    # Files fxtui writes: a suggested command never overwrites the one just written.
    exports = {flag for form in FORMATS.values() for flag in (form.option, *form.aliases)}
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        flag = arg.split("=", 1)[0]
        if flag in drop or flag in exports:
            skip = "=" not in arg and flag in valued
            continue
        out.append(arg)
    if after and after in out:
        at = out.index(after) + 1
        return [*out[:at], *add, *out[at:]]
    return [*out, *add]
