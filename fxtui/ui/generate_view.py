"""What the module tree shows of a ``generate()`` call: each module's share of the prefill and of a decode step.

A generation's nodes are in the prefill (times per call) or a decode step (per token), so a
module's two totals cannot be added: the tree shows both shares on the module's line
(``P 20.1% D 45.3%``), each of its phase's profiled time; with the phase filter (``p``) on one
phase the tree shows that phase's times and shares alone, as for any other filter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from fxtui.core.rollup import PHASE_CODES
from fxtui.core.snapshot import Snapshot
from fxtui.ui.view_filter import FilteredTotals, Shown, tree_totals


class PhaseShares:
    """Each module's share of the prefill and of a decode step (percent), summed when a line asks."""

    def __init__(
        self, prefill: Mapping[str, float], decode: Mapping[str, float], prefill_s: float | None, decode_s: float | None
    ) -> None:
        self.prefill, self.decode = prefill, decode
        self.prefill_s, self.decode_s = prefill_s, decode_s

    def shares(self, path: str) -> tuple[float | None, float | None]:
        """``(prefill %, decode %)`` of module ``path``."""
        p = 100.0 * self.prefill.get(path, 0.0) / self.prefill_s if self.prefill_s else None
        d = 100.0 * self.decode.get(path, 0.0) / self.decode_s if self.decode_s else None
        return p, d


def tree_numbers(snapshot: Snapshot, shown: Shown) -> dict[str, Any]:
    """What :meth:`~fxtui.ui.widgets.module_tree.ModuleTree.update_numbers` takes for ``snapshot`` under ``shown``."""
    graph, generation = snapshot.graph, snapshot.generation
    totals, backward = tree_totals(snapshot, shown)
    numbers: dict[str, Any] = {"totals": totals, "stats": snapshot.nodes, "run_s": snapshot.run_median_s or 0.0}
    if snapshot.compiled is not None:  # a compiled model: each module's eager time beside its compiled time
        numbers["eager"] = snapshot.compiled.eager_modules
    if graph is None or generation is None or not graph.generating:
        return {**numbers, "backward": backward}
    phases = shown.spec.phases
    if len(phases) == 1:  # one phase: its own times, shares of its own reference
        return {**numbers, "run_s": generation.reference(next(iter(phases))) or 0.0}
    if not snapshot.nodes or len(shown.mask) != len(graph.nodes):
        return numbers
    plan = graph.module_plan
    medians = plan.medians(snapshot.nodes)
    mask = np.frombuffer(shown.mask, dtype=bool)
    codes = np.asarray(plan.phase)
    prefill, decode = (
        FilteredTotals(plan, medians, (mask & (codes == PHASE_CODES[p])).tobytes()) for p in ("prefill", "decode")
    )
    references = generation.reference("prefill"), generation.reference("decode")
    return {**numbers, "phases": PhaseShares(prefill, decode, *references)}
