"""The collector process's cyclic garbage collector: full passes between snapshots, and over what is new only.

Measured at 256 ranks (``tests/benchmarks/bench_collector_scale.py``: its census of the objects the garbage
collector tracks, and the full passes' time in the CPU time of their thread): the collector holds ~85,000 tracked
objects (~37,000 of them the modules' functions, types and descriptors; the rest each rank's windows, rings and
statistics, the nodes the ranks share), a count that does not grow with the steps taken. Yet CPython ran a full pass
every ten seconds or so: the intake's messages and the snapshots' rows live long enough to be promoted to the oldest
generation and die there, which meets its rule for a full pass (ten passes of the middle generation, and a quarter
as many objects promoted since the last as survived it) again and again. Every full pass walked the whole state,
stopped every thread of the collector, the intake too, and freed nothing (the state makes no garbage cycles), and
the slowest snapshots were the ones a pass landed in.

So, in the collector's process only (the program's own garbage collector is never touched; the collector beside
the program applies this after its fork):

* What lives is frozen (:func:`gc.freeze`): the modules once imported (:func:`take_over`), then, after each full
  pass, what survived it. A full pass then walks only what was made since the last one. Frozen objects are still
  freed by reference counting the moment nothing refers to them; only a cycle among them would wait, for
  :data:`WHOLE_EVERY_S`, when everything is unfrozen and walked once.
* CPython's own full passes are deferred (its third threshold :data:`DEFERRED`, ten times its default), and the
  one that is due by its own count runs in the collector's main loop right after a snapshot went out
  (:func:`collect_if_due`), the moment furthest from the next one, so that no snapshot is built across one.

Young passes are left as CPython has them: they are short, and what they free they free early.
"""

from __future__ import annotations

import gc
import time

#: Middle-generation passes between full passes CPython's own policy asks for (its default third threshold).
DUE_AFTER = 10
#: The third threshold while the collector runs: a full pass of CPython's still comes if the main loop never asks.
DEFERRED = 10 * DUE_AFTER
#: Seconds between passes over everything, the frozen objects too (a cycle among them is freed then at the latest).
WHOLE_EVERY_S = 600.0

_whole_at: float | None = None
"""When :func:`collect_if_due` last walked everything (monotonic seconds); None before :func:`take_over`."""


def take_over() -> None:
    """Called once by a collector's process as it starts (never in the program's): what the imports made is frozen,
    and full passes wait for :func:`collect_if_due`."""
    global _whole_at
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, DEFERRED)
    _whole_at = time.monotonic()


def collect_if_due(now: float | None = None) -> bool:
    """Between snapshots: the full pass CPython's own count says is due, over what is not frozen, then what
    survived it frozen; every :data:`WHOLE_EVERY_S` over everything. True when a pass ran.

    Nothing happens before :func:`take_over` (a process that did not take the collector's policy keeps CPython's).
    """
    global _whole_at
    if _whole_at is None or gc.get_count()[2] < DUE_AFTER:
        return False
    now = time.monotonic() if now is None else now
    if now - _whole_at >= WHOLE_EVERY_S:
        _whole_at = now
        gc.unfreeze()
    gc.collect()
    gc.freeze()
    return True


def release() -> None:
    """CPython's own policy again: nothing frozen, its default thresholds (for a process that stops collecting)."""
    global _whole_at
    _whole_at = None
    gc.unfreeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, DUE_AFTER)
