"""The run figures of a program's ``generate()`` calls, on the definitions their header lines use.

A prefill node's time is per call and a decode node's per token (:mod:`fxtui.core.generation`), so
Σ node medians is the time of *the prompt and one token*, not of a whole call. The figures of the
``generate`` kind are counted in that unit — the uninstrumented time to first token plus the mean
decode step (the profiled calls' for the profiled median) — so that the JSON's fidelity, each row's
share and the prefill and decode lines describe the same calls the same way. The calls' own wall
times stay in the ``call`` line.
"""

from __future__ import annotations

import dataclasses

from fxtui.core.generation import GenerationSummary
from fxtui.core.program_run import KindSummary
from fxtui.core.snapshot import RunSpreads


def generation_medians(generation: GenerationSummary) -> tuple[float | None, float | None]:
    """(profiled, uninstrumented) time of the prompt and one token: the ``run`` and ``eager`` medians of the kind."""
    profiled = None
    if generation.profiled_ttft_s is not None:
        profiled = generation.profiled_ttft_s + (generation.profiled_tpot_mean_s or 0.0)
    return profiled, generation.unit_s


def generation_spreads() -> RunSpreads:
    """No range beside the figures: each call's own would be of a whole call, not of the figures' unit (the calls'
    own ranges are in the generation's summary: its time to first token's)."""
    return RunSpreads()


def generation_kind(summary: KindSummary, generation: GenerationSummary | None, node_time_s: float) -> KindSummary:
    """The ``generate`` kind's summary with its fidelity on the figures' unit (None before it is known)."""
    unit = generation.unit_s if generation is not None else None
    return dataclasses.replace(summary, fidelity=node_time_s / unit if unit and summary.sampled else None)
