"""The what-ifs the user asked the session to measure, and which answers have arrived.

A what-if is measured in the engine between runs; its result comes back in a later snapshot.
:class:`WhatIfRequests` keeps what is still waiting (and, per name, the serial its answer must
exceed: a later measurement of the same name replaces an earlier result), sends the requests,
and, as each snapshot arrives, says which of them it answers. The main screen mirrors
:attr:`WhatIfRequests.waiting` in a reactive that the status line and the hint and what-if
screens follow; everything else about asking lives here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from fxtui.core.findings import WhatIf
from fxtui.core.snapshot import Snapshot
from fxtui.wire.viewer_commands import MeasureWhatIfs, ViewerCommand


def requests(snapshot: Snapshot | None, names: Iterable[str], waiting: frozenset[str]) -> dict[str, int]:
    """The what-ifs among ``names`` to ask for (those not waiting already), each with the serial its answer
    must exceed: that of its latest result so far (0 for none)."""
    latest = {w.name: w.serial for w in snapshot.what_ifs} if snapshot is not None else {}
    return {n: latest.get(n, 0) for n in dict.fromkeys(names) if n not in waiting}


def answers(snapshot: Snapshot, waiting: frozenset[str], asked_after: dict[str, int]) -> list[WhatIf]:
    """The results in ``snapshot`` that answer a what-if still ``waiting``: measured after it was asked for."""
    return [w for w in snapshot.what_ifs if w.name in waiting and w.serial > asked_after.get(w.name, 0)]


class WhatIfRequests:
    """What-ifs asked for and not answered yet; ``changed`` hears every new set of waiting names."""

    def __init__(self, send: Callable[[ViewerCommand], None], changed: Callable[[frozenset[str]], None]) -> None:
        self._send = send
        self._changed = changed
        self.waiting: frozenset[str] = frozenset()
        self.asked_after: dict[str, int] = {}
        """What-if name → the serial of its latest result when it was asked for: a later serial answers."""

    def measure(self, snapshot: Snapshot | None, names: Iterable[str]) -> None:
        """Ask the session to measure ``names`` (those not waiting already); results arrive in later snapshots."""
        asked = requests(snapshot, names, self.waiting)
        if asked:
            self.asked_after.update(asked)
            self._set(self.waiting | set(asked))
            self._send(MeasureWhatIfs(tuple(asked)))

    def measured(self, snapshot: Snapshot | None, name: str) -> bool:
        """True when ``snapshot`` holds a measured result of what-if ``name``."""
        return snapshot is not None and any(w.name == name and w.measured for w in snapshot.what_ifs)

    def collect(self, snapshot: Snapshot) -> list[WhatIf]:
        """The results ``snapshot`` brings for what-ifs still waiting; they wait no longer."""
        arrived = answers(snapshot, self.waiting, self.asked_after)
        if arrived:
            self._set(self.waiting - {w.name for w in arrived})
        return arrived

    def progress(self, snapshot: Snapshot | None) -> str:
        """What the status line says: the engine's progress (``what-if bf16: pair 3 of 20``), or what is queued."""
        if snapshot is not None and snapshot.what_if_progress:
            return snapshot.what_if_progress
        return f"what-if queued: {', '.join(sorted(self.waiting))}" if self.waiting else ""

    def _set(self, waiting: frozenset[str]) -> None:
        self.waiting = waiting
        self._changed(waiting)
