"""How often the agent samples the steps of one kind: warm-up, the first samples, then a pace set by their cost.

One :class:`Pace` per kind of step (training steps, evaluation calls, ``generate()`` calls), so the
pace of sampling is learnt only from steps of the kind it paces: a program whose evaluation calls
take 60 ms and whose training steps take 840 ms samples each at its own rate.

* **Warm-up.** The first steps of a kind are left out of every figure (the allocator, thread pools
  and oneDNN warming up): ``warmup`` of them, or fewer when they are long — a kind is warm once a
  step of it took :data:`WARM_S` or more (a training step of a second is warm after one), and a
  ``generate()`` call, which runs the model many times, is warm after one call. A program with three
  long steps or three ``generate()`` calls still gets sampled steps.
* **The first samples** come one in :data:`FIRST_EVERY` steps (the very next step after the warm-up
  first), so figures show soon; the first sampled step also notes new nodes' inputs and source
  lines (its ops' times count: they are read around each op's own call; its wall time does not).
* **Then the budget sets the pace**: N = (sampled ÷ unsampled step − 1) ÷ budget, at least
  :data:`MIN_EVERY`, at most :data:`MAX_EVERY` (``every`` fixes it instead). A sampled step's cost
  is its wall time and what the agent does after it ends, resolving its ops to nodes and sending
  them (:meth:`Pace.after`): time the program loses all the same, between its steps.

Why one in two at most, and not one in five as the first samples: the native timer's sampled step
costs 1–9% more than an unsampled one, so a 2% budget allows a sample every one to five steps, and
one in five left most of them untaken where a sample is cheap (a char-level GPT: 39 of its 195
training steps sampled at one in five, 76 now, at the same whole-program cost). Every other step
stays unsampled, so the unsampled median (the step line, the fidelity's base, the pace itself) is
always measured.
"""

from __future__ import annotations

import math
import statistics
from collections import deque

from fxtui.wire.agent_contract import AgentOptions

#: Sample at most one step in this many, once the budget sets the pace.
MIN_EVERY = 2
#: The first samples, before the budget sets the pace: one step in this many, whatever they cost.
FIRST_EVERY = 5
#: And at least one in this many (a model whose per-op cost is large still gets figures).
MAX_EVERY = 200
#: Sampled steps taken one in :data:`FIRST_EVERY` before the budget sets the pace: figures soon, in every run.
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
        self._every = options.every or FIRST_EVERY
        self._next = 0 if self.warm else -1
        self._plain: deque[int] = deque(maxlen=64)
        self._ratios: deque[float] = deque(maxlen=16)
        self._ratio_of = -1
        """The index of the sampled step whose ratio is the latest in ``_ratios`` (what :meth:`after` adds to)."""
        self._base = 0.0
        """The unsampled median that ratio was taken against (ns)."""
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
        self._base = statistics.median(self._plain)
        self._ratios.append(wall_ns / self._base)
        self._ratio_of = index
        self._repace(index)
        return True

    def after(self, index: int, extra_ns: int) -> None:
        """The sampled step ``index`` cost ``extra_ns`` more after it ended (its ops resolved and sent): counted in
        its ratio, so that the budget holds what the program loses to sampling, not the steps' walls alone."""
        if extra_ns <= 0 or index != self._ratio_of or not self._ratios or self._base <= 0:
            return
        self._ratios[-1] += extra_ns / self._base
        self._repace(index)

    def _repace(self, index: int) -> None:
        """Once the first samples are in, the pace their median cost allows, counted from sampled step ``index``."""
        if len(self._ratios) < FIRST_SAMPLES:
            return
        extra = max(0.0, statistics.median(self._ratios) - 1.0)
        every = math.ceil(extra / self.options.budget - 1e-9)  # 0.1 ÷ 0.02 is 5, not 5.000000000000004
        self._every = min(MAX_EVERY, max(MIN_EVERY, every))
        self._next = index + self._every
