"""How far behind the program a collector takes its steps, and what it leaves out while it is behind.

A step's message says when the step began and how long it took (``start_ns``, ``wall_ns``: the clock of
``time.perf_counter_ns``, one clock for every process of a machine); the collector takes it some time after the
step ended: the agent's gathering (:data:`~fxtui.agent.sender.GATHER_S`), the socket, and whatever queue the
collector has not read yet. That lag is what a viewer's figures are late by. On a machine whose cores are taken by
other work, a collector of hundreds of ranks gets a fraction of a core and the lag grows: the agents' queues fill and
they drop steps. So beyond :data:`SHED_S` the collector takes no sampled step's ops (each ~1,000 op records; a
step's wall time and phases are still taken: every step counts), until it is back within :data:`CAUGHT_UP_S`, and
the view says how far behind it was and what it left out.

Only the steps of agents on the collector's own machine are timed (another machine's clock is another clock).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

from fxtui.wire.agent_messages import Step

#: Seconds behind the program beyond which the collector leaves sampled steps' ops out.
SHED_S = 2.0
#: Seconds behind the program within which it takes them again.
CAUGHT_UP_S = 0.5
#: Seconds behind the program worth a word in the view.
SAY_S = 1.0
#: Seconds between a viewer's snapshots, at least, while behind.
BEHIND_SNAPSHOT_S = 1.0
#: Seconds of intake over which "behind" is the worst lag seen (one message is one rank's; a backlog is every
#: rank's at once).
SPAN_S = 1.0


class IntakeLag:
    """The lag of the steps taken, and the sampled steps whose ops were left out because of it."""

    def __init__(self, clock: Callable[[], int] = time.perf_counter_ns, host: str | None = None) -> None:
        self._clock = clock
        self.host = socket.gethostname() if host is None else host
        self.behind_s = 0.0
        """The worst lag over the latest one or two :data:`SPAN_S` of intake (seconds)."""
        self.worst_s = 0.0
        """The worst lag so far."""
        self.shedding = False
        """Beyond :data:`SHED_S` and not yet back within :data:`CAUGHT_UP_S`: sampled steps' ops are left out."""
        self.shed = 0
        """Sampled steps whose ops were left out while behind."""
        self.timed = 0
        """Steps whose lag was read."""
        self._span_at = 0
        self._span_worst = 0.0
        self._last_worst = 0.0

    def note(self, step: Step, host: str | None) -> None:
        """``step`` taken now, from an agent on ``host`` (None: not known yet)."""
        if step.start_ns <= 0 or host != self.host:
            return
        now = self._clock()
        lag = max(0.0, (now - step.start_ns - step.wall_ns) / 1e9)
        self.timed += 1
        self.worst_s = max(self.worst_s, lag)
        if now - self._span_at >= SPAN_S * 1e9:  # a new span: the last one's worst still counts until it ends
            last = self._span_worst if now - self._span_at < 2 * SPAN_S * 1e9 else 0.0
            self._span_at, self._last_worst, self._span_worst = now, last, lag
        else:
            self._span_worst = max(self._span_worst, lag)
        self.behind_s = max(self._last_worst, self._span_worst)
        if self.shedding and self.behind_s <= CAUGHT_UP_S:  # a whole span within: one quick rank is not a catch-up
            self.shedding = False
        elif not self.shedding and self.behind_s > SHED_S:
            self.shedding = True

    def leaves_out(self) -> bool:
        """Whether a sampled step taken now has its ops left out (counted in :attr:`shed` when so)."""
        if self.shedding:
            self.shed += 1
        return self.shedding

    def snapshot_every(self, seconds: float) -> float:
        """Seconds between a viewer's snapshots: ``seconds``, or while behind at least :data:`BEHIND_SNAPSHOT_S`
        (a snapshot of hundreds of ranks costs ~0.1 s of the CPU the steps are waiting for)."""
        return max(seconds, BEHIND_SNAPSHOT_S) if self.shedding else seconds

    def sentence(self) -> str:
        """What the view says: how far behind the collector is, what it left out ("" when nothing worth a word)."""
        steps = f"{self.shed:,} sampled step" + ("s" if self.shed != 1 else "")
        left = f"; it left out the ops of {steps} while behind" if self.shed else ""
        if self.behind_s >= SAY_S:
            doing = "leaves out sampled steps' ops until it catches up" if self.shedding else "takes every step"
            return (f"the collector is {self.behind_s:.1f} s behind the program (it has less CPU than the job's "
                    f"messages need): it {doing}{left}")  # fmt: skip
        if self.shed:
            return f"the collector was up to {self.worst_s:.1f} s behind the program{left}"
        return ""
