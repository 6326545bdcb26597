"""What a viewer can ask of a running profile: small typed commands (the CLI's commands are :mod:`fxtui.commands`).

The UI sends one with ``source.send(Pause())``; a live session drains them between runs
(:mod:`fxtui.measure.live`), a child process receives them pickled over its pipe
(:mod:`fxtui.measure.child`, :mod:`fxtui.jobs.daemon`). Adding a command is a class here and a case in the loop.
Torch-free, so the UI can import it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pause:
    """Stop rerunning until :class:`Resume`; the statistics stay."""


@dataclass(frozen=True)
class Resume:
    """Continue rerunning."""


@dataclass(frozen=True)
class Reset:
    """Forget the statistics so far (shown at once, between runs)."""


@dataclass(frozen=True)
class Stop:
    """End the session after the current run."""


@dataclass(frozen=True)
class StopProgram:
    """``fxtui run``: stop the profiled program as Ctrl+C would (then SIGTERM, then SIGKILL); its last profile
    stays. A viewer that only leaves sends :class:`Stop` instead: the program goes on."""


@dataclass(frozen=True)
class ShowRank:
    """A distributed job: show ``rank``'s figures (every rank stays compared beside them)."""

    rank: int


@dataclass(frozen=True)
class ShowKind:
    """``fxtui run``: show the figures of ``kind``'s steps (``train``, ``eval``, ``generate``)."""

    kind: str


@dataclass(frozen=True)
class Explain:
    """Find the aten operators inside ``node``; later snapshots carry them in ``aten``."""

    node: str


@dataclass(frozen=True)
class RequestHints:
    """Compute suggestions from the statistics so far; later snapshots carry them in ``hints``."""


@dataclass(frozen=True)
class MeasureWhatIfs:
    """Apply each of ``names`` (``channels-last``, ``threads=1`` …) to a copy of the model and measure it
    against the original, between runs; later snapshots carry the progress and the results in ``what_ifs``."""

    names: tuple[str, ...]


#: Every command a viewer sends.
ViewerCommand = (
    Pause | Resume | Reset | Stop | StopProgram | ShowRank | ShowKind | Explain | RequestHints | MeasureWhatIfs
)
