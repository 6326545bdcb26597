"""How often the agent samples the steps of one kind: warm-up, the first samples, then a pace set by their cost.

One :class:`Pace` per kind of step (training steps, evaluation calls, ``generate()`` calls), so the
pace of sampling is learnt only from steps of the kind it paces: a program whose evaluation calls
take 60 ms and whose training steps take 840 ms samples each at its own rate.

* **Warm-up.** The first steps of a kind are left out of every figure (the allocator, thread pools
  and oneDNN warming up): ``warmup`` of them, or fewer when they are long — a kind is warm once a
  step of it took :data:`WARM_S` or more (a training step of a second is warm after one), and a
  ``generate()`` call, which runs the model many times, is warm after one call. A program with three
  long steps or three ``generate()`` calls still gets sampled steps.
* **The first samples** come one in :data:`MIN_EVERY` steps (the very next step after the warm-up
  first), so figures show soon; the first sampled step also notes new nodes' inputs and source
  lines (its ops' times count: they are read around each op's own call; its wall time does not).
* **Then the budget sets the pace**: N = (sampled ÷ unsampled step − 1) ÷ budget, at least
  :data:`MIN_EVERY`, at most :data:`MAX_EVERY` (``every`` fixes it instead).
"""

from __future__ import annotations

import math
import statistics
from collections import deque

from fxtui.wire.agent_contract import AgentOptions

#: Sample at most one step in this many.
MIN_EVERY = 5
#: And at least one in this many (a model whose per-op cost is large still gets figures).
MAX_EVERY = 200
#: Sampled steps taken one in :data:`MIN_EVERY` before the budget sets the pace: figures soon, in every run.
FIRST_SAMPLES = 8
#: A kind whose step took this long is warm after it (nanoseconds).
WARM_NS = 1_000_000_000
#: Kinds whose first step is their only warm-up: one call runs the model many times.
WARM_AFTER_ONE = frozenset({"generate"})


class Pace:
    """Which steps of one kind are warm-up, which are sampled, and how that pace adapts."""

    def __init__(self, kind: str, options: AgentOptions) -> None:
        self.kind = kind
        self.options = options
        self.index = 0
        """The next step's index (0: the kind's first)."""
        self.warm = options.warmup == 0
        self._every = options.every or MIN_EVERY
        self._next = 0 if self.warm else -1
        self._plain: deque[int] = deque(maxlen=64)
        self._ratios: deque[float] = deque(maxlen=16)
        self.restarted = False
        """Set by :meth:`restart` until the next step says so."""

    def open(self) -> tuple[int, bool]:
        """A step of this kind begins: its index, and whether it is sampled."""
        index = self.index
        self.index += 1
        sampled = self.warm and index >= self._next >= 0
        if sampled:
            self._next = index + self._every
        return index, sampled

    def restart(self) -> None:
        """The kind's steps change (a new optimizer closes them): warm up again."""
        self.warm = self.options.warmup == 0
        self._next = self.index if self.warm else -1
        self.restarted = True
        self._plain.clear()
        self._ratios.clear()

    def close(self, index: int, wall_ns: int, sampled: bool, describing: bool) -> bool:
        """A step ended; whether it was warm (counted in the figures). Learns the pace from it."""
        if not self.warm:
            done = index + 1
            if done >= self.options.warmup or wall_ns >= WARM_NS or (self.kind in WARM_AFTER_ONE and done >= 1):
                self.warm = True
                self._next = self.index  # the next step opened is the first sampled
            return False
        if describing:
            return True  # slower for noting inputs and source lines: teaches nothing about the pace
        if not sampled:
            self._plain.append(wall_ns)
            return True
        if self.options.every or len(self._plain) < 3:
            return True
        self._ratios.append(wall_ns / statistics.median(self._plain))
        if len(self._ratios) >= FIRST_SAMPLES:
            extra = max(0.0, statistics.median(self._ratios) - 1.0)
            self._every = min(MAX_EVERY, max(MIN_EVERY, math.ceil(extra / self.options.budget)))
            self._next = index + self._every
        return True
