"""When the app process's garbage collector may take its time: full passes wait until keys pause.

Two costs the cyclic garbage collector puts on a large graph, measured at 50,000 nodes:

* A full pass walked every object alive, the graph's description first (a few objects
  per node): ~190 ms, three times in forty key presses. What is alive when a graph
  arrives lives as long as the session, so it is frozen (:func:`exempt_what_lives`):
  the collector leaves it out of every pass, and it is still freed by reference counting.
* A full pass still walks what the last few filters keep (their node and module sets,
  tree lines): 50–58 ms, in two of eight filters' paints, which made those keys a
  third slower. Python starts a full pass when enough objects have survived younger
  passes, whatever the user is doing. Here automatic full passes come ten times more
  rarely (:func:`defer_full_passes`) and the app runs the one that is due when the
  user pauses (:func:`collect_if_due`, from :class:`~fxtui.ui.pacing.KeysFirst`).

Young passes are left as they are: they are short, and what they free they free early.
"""

from __future__ import annotations

import gc

#: Young-generation passes between full passes Python's own policy asks for (its default threshold).
DUE_AFTER = 10
#: The same threshold while the app runs: a full pass still comes if the keys never pause.
DEFERRED = 10 * DUE_AFTER

_saved_threshold: tuple[int, int, int] | None = None


def defer_full_passes() -> None:
    """Let full passes wait for a pause in the input (:func:`collect_if_due`); undone by :func:`restore`."""
    global _saved_threshold
    threshold = gc.get_threshold()
    if _saved_threshold is None:
        _saved_threshold = threshold
    gc.set_threshold(threshold[0], threshold[1], max(threshold[2], DEFERRED))


def collect_if_due() -> bool:
    """Run a full pass if Python's own policy would have considered one by now; True when it ran."""
    if gc.get_count()[2] < DUE_AFTER:
        return False
    gc.collect()
    return True


def exempt_what_lives() -> None:
    """Leave every object alive now out of the collector's passes (they are freed when unreferenced)."""
    gc.unfreeze()
    gc.freeze()


def restore() -> None:
    """Python's own thresholds again, and nothing left out of its passes."""
    global _saved_threshold
    gc.unfreeze()
    if _saved_threshold is not None:
        gc.set_threshold(*_saved_threshold)
        _saved_threshold = None
