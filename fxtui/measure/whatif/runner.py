"""Run what-ifs against a session, one after the other; say which apply to it."""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from fxtui.core.errors import first_line
from fxtui.core.findings import WhatIf, WhatIfOption
from fxtui.core.what_if_catalogue import CATALOGUE, describe
from fxtui.measure.analysis.cpu_setup import usable_cores
from fxtui.measure.whatif.changes import CannotApply, make_variant, reason_not
from fxtui.measure.whatif.measure import BUDGET_S, MAX_PAIRS, Cancelled, measure
from fxtui.measure.whatif.rss import PeakRss

if TYPE_CHECKING:
    from fxtui.measure.session import Session


def run_what_ifs(
    session: Session,
    names: Sequence[str],
    *,
    pairs: int = MAX_PAIRS,
    budget_s: float = BUDGET_S,
    progress: Callable[[str], None] = lambda message: None,
    done: Callable[[WhatIf], None] = lambda result: None,
    cancelled: Callable[[], bool] = lambda: False,
) -> tuple[WhatIf, ...]:
    """Measure each of ``names`` (checked by :func:`~fxtui.measure.whatif.parse_what_ifs`) against ``session``.

    A what-if that cannot apply, or whose changed model fails, is a result with ``error``
    set, and the others still run. ``progress`` receives one line per step
    (``what-if channels-last: pair 7 of 20``); ``done`` each result as it is ready. When
    ``cancelled()`` turns true the run ends between two pairs, with the results so far.
    Each result's ``serial`` continues ``session.what_if_count``.
    """
    results: list[WhatIf] = []
    for name in names:
        if cancelled():
            break
        progress(f"what-if {name}: applying the change")
        try:
            result = _one(session, name, pairs, budget_s, progress, cancelled)
        except Cancelled:
            break
        session.what_if_count += 1
        result = dataclasses.replace(result, serial=session.what_if_count)
        session.what_ifs[name] = result
        results.append(result)
        done(result)
    return tuple(results)


def _one(
    session: Session,
    name: str,
    pairs: int,
    budget_s: float,
    progress: Callable[[str], None],
    cancelled: Callable[[], bool],
) -> WhatIf:
    """One what-if, measured, or a result saying in one sentence why not (never an exception but Cancelled).

    The result carries the process's resident memory before the what-if and its peak meanwhile. The
    changed copy lives only in here: it is gone (and its memory free for the session's runs) once
    this returns.
    """
    rss = PeakRss().start()

    def look(message: str) -> None:
        rss.look()
        progress(message)

    result = _attempt(session, name, pairs, budget_s, look, cancelled)
    gc.collect()  # the copy and both sides' sessions hold cycles (graph modules, interpreters)
    return dataclasses.replace(result, rss_before_bytes=rss.before, peak_rss_bytes=rss.peak())


def _attempt(
    session: Session,
    name: str,
    pairs: int,
    budget_s: float,
    progress: Callable[[str], None],
    cancelled: Callable[[], bool],
) -> WhatIf:
    try:
        if name == "compile" and session.captured.notes is not None:  # generate() calls: the forward compiled
            from fxtui.measure.whatif.on_generate import compile_generate

            variant = compile_generate(session)
        else:
            variant = make_variant(name, session)
    except CannotApply as e:
        return WhatIf(name, describe(name), error=str(e))
    except Exception as e:  # a change fxtui did not foresee failing: the other what-ifs still run
        return WhatIf(name, describe(name), error=f"the change failed: {type(e).__name__}: {first_line(str(e))}")
    try:
        return measure(session, name, variant, pairs=pairs, budget_s=budget_s, progress=progress, cancelled=cancelled)
    except Cancelled:
        raise
    except Exception as e:
        return WhatIf(name, variant.title, error=f"measuring failed: {type(e).__name__}: {first_line(str(e))}")


def what_if_options(session: Session) -> tuple[WhatIfOption, ...]:
    """Every what-if as it stands for ``session``: the fixed ones, and thread counts worth trying.

    Thread counts offered: one thread, and as many as the cores this process may use,
    each unless it is the session's own.
    """
    options = [
        WhatIfOption(name, describe(name), reason_not(name, session)) for name in CATALOGUE if name != "threads=N"
    ]
    current = session.graph.threads
    cores = usable_cores()
    counts = sorted({1, cores} - {current}) or [current + 1]
    at = next(i for i, o in enumerate(options) if o.name == "fold-bn") + 1
    threads = [
        WhatIfOption(f"threads={n}", describe(f"threads={n}"), reason_not(f"threads={n}", session)) for n in counts
    ]
    return (*options[:at], *threads, *options[at:])
