"""Nodes whose calls in one step ran at several output shapes, named for the report.

A module called at two shapes in every step (one ``nn.ReLU`` after convolutions of 64 and 32
channels) is one node: its row's figures hold every call (:mod:`fxtui.jobs.kind_tally` sums them
per step), and its row shows the first call's shape. This names the shapes it ran at, so the header
can say the row holds them all.
"""

from __future__ import annotations

from fxtui.core.snapshot import GraphInfo
from fxtui.jobs.kind_tally import SHAPE_JOIN, KindTally

#: The phases of a module's own calls, where several shapes in a step are a module reused. (Its gradients then run
#: at those shapes too, as do gradients whose positions fold, ``#7``: their rows hold every call all the same.)
_MODEL_PHASES = frozenset({"forward", "prefill", "decode"})


def shapes_in_a_step(figures: KindTally, graph: GraphInfo) -> dict[str, tuple[str, ...]]:
    """Node name → the output shapes its calls ran at in one step (its most frequent steps'), for nodes with
    several; the graph's nodes are ``sorted(figures.nodes)``, in order."""
    ids = sorted(figures.nodes)
    pick, _ = figures.node_columns(ids)
    out: dict[str, tuple[str, ...]] = {}
    for info, column in zip(graph.nodes, pick, strict=False):
        if column < 0 or info.phase not in _MODEL_PHASES:
            continue  # an optimizer's or a DataLoader's loop over tensors of every shape folds by design (``#16``)
        text = figures.column_shapes(int(column))
        if SHAPE_JOIN in text:
            out[info.name] = tuple(text.split(SHAPE_JOIN))
    return out
