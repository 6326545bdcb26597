"""Module totals from node medians as tensor index additions, for the session's snapshots.

:meth:`~fxtui.core.rollup.ModulePlan.roll_up` adds in Python, a few additions per node
and module: 10–15 ms per snapshot at 10,000 nodes, a third of the snapshot. The session
adds with ``index_add_`` over every (node, enclosing module) pair instead, worked out once
per graph (under 1 ms per snapshot). The plan's pure-Python roll-up stays for code
without torch (the app's demo data).
"""

from __future__ import annotations

from array import array

import torch

from fxtui.core.rollup import ModulePlan
from fxtui.engine.stats import floats


class TensorRollUp:
    """A :class:`ModulePlan`'s roll-up over a tensor of node medians (graph order)."""

    def __init__(self, plan: ModulePlan) -> None:
        nodes, modules = [], []
        for node, module in enumerate(plan.own):
            while module >= 0:  # the node's module, then each module enclosing it
                nodes.append(node)
                modules.append(module)
                module = plan.parent[module]
        self.size = len(plan.paths)
        self.own = torch.tensor(plan.own, dtype=torch.int64)
        self.pair_node = torch.tensor(nodes, dtype=torch.int64)
        self.pair_module = torch.tensor(modules, dtype=torch.int64)
        phase = torch.tensor(plan.phase, dtype=torch.int64)[self.pair_node] if any(plan.phase) else None
        self.forward = phase == 1 if phase is not None else None
        self.backward = phase == 2 if phase is not None else None

    def __call__(
        self, medians: torch.Tensor
    ) -> tuple[array[float], array[float], array[float] | None, array[float] | None]:
        """Each module's own time, inclusive time, and in a training step its forward and backward time."""
        medians = medians.to(torch.float64)
        own = torch.zeros(self.size, dtype=torch.float64).index_add_(0, self.own, medians)
        per_pair = medians[self.pair_node]
        inclusive = self._sum(per_pair)
        forward = self._sum(per_pair * self.forward) if self.forward is not None else None
        backward = self._sum(per_pair * self.backward) if self.backward is not None else None
        return floats(own), inclusive, forward, backward

    def _sum(self, per_pair: torch.Tensor) -> array[float]:
        return floats(torch.zeros(self.size, dtype=torch.float64).index_add_(0, self.pair_module, per_pair))
