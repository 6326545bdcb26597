"""A program's run figures as its header, app and JSON give them: each one the median of per-step values.

For a model (``fxtui MODEL``) fidelity is Σ node medians ÷ the uninstrumented median. For a program
(``fxtui run``) the sampled steps' ops do not add up node by node — a preempted op's median sits on a scheduler
slice — so its fidelity is the median of each counted sampled step's own ratio (its ops ÷ the unsampled median),
the statistic whose p25–p75 is printed beside it (:mod:`fxtui.jobs.step_wait`).
"""

from __future__ import annotations

import dataclasses

from fxtui.core.snapshot import RunSummary, Snapshot
from fxtui.core.step_waiting import StepWaiting


def program_figures(snapshot: Snapshot, figures: RunSummary) -> RunSummary:
    """``figures`` with a program's fidelity as the median of its per-step ratios, and the unattributed time what it
    leaves of the unsampled median; a model's figures as they are."""
    spread = snapshot.spreads.fidelity if snapshot.spreads is not None else None
    if spread is None or not snapshot.eager_median_s or lead_waiting(snapshot) is None:
        return figures  # a model's, or a file saved before the per-step figures: as it was made
    return dataclasses.replace(
        figures, fidelity=spread.median, unattributed_s=snapshot.eager_median_s * (1.0 - spread.median)
    )


def lead_waiting(snapshot: Snapshot) -> StepWaiting | None:
    """The split of the kind of step the snapshot's figures are of (None: not a program, or nothing measured)."""
    steps = snapshot.steps
    if snapshot.program is None or steps is None:
        return None
    lead = next((k for k in steps.kinds if k.kind == steps.kind), None)
    return lead.waiting if lead is not None else None
