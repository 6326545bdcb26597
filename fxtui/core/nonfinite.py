"""NaN and inf in a model's values: which are a warning and which are a fact about a node.

A NaN is a warning wherever it appears: nothing a model does on purpose makes one, and it
spreads. An infinity often is on purpose: T5's relative-position buckets take the log of
zero and mask the result with ``torch.where``, an attention mask fills with ``-inf`` before
a softmax. Such an inf is a fact about the node (the detail pane says it); it is a warning
only when it reaches what the model gives back: a graph's output (the model's output, the
loss, a training step's gradients) or the value the model returns.
"""

from __future__ import annotations

from collections.abc import Sequence

from fxtui.core.nodes import NodeInfo

#: How many node names a warning lists before it says how many more.
SHOWN = 3


def _names(nodes: Sequence[NodeInfo]) -> str:
    shown = ", ".join(n.name for n in nodes[:SHOWN])
    return shown + (f" and {len(nodes) - SHOWN} more" if len(nodes) > SHOWN else "")


def nonfinite_warnings(nodes: Sequence[NodeInfo], returned: str = "") -> tuple[str, ...]:
    """The warnings the values of ``nodes`` (graph order, first run) call for.

    ``returned`` is what the value the model returned held (``"nan"``, ``"inf"`` or ``""``):
    with graph breaks, Python between the graphs can still change it.
    """
    warnings: list[str] = []
    nan = [n for n in nodes if n.nonfinite == "nan"]
    if nan:
        warnings.append(f"NaN in the output of {len(nan)} node(s), first {_names(nan)}")
    outputs = [n for n in nodes if n.op == "output" and n.nonfinite == "inf"]
    if outputs or (returned == "inf" and not nan):
        inf = [n for n in nodes if n.nonfinite == "inf" and n.op != "output"]
        where = "the model's output" if not outputs else _output_names(outputs)
        first = f": it first appears in {_names(inf)}" if inf else ""
        warnings.append(f"{INF_REACHES}{where}{first}")
    return tuple(warnings)


def _output_names(outputs: Sequence[NodeInfo]) -> str:
    phases = {n.phase for n in outputs}
    if phases == {"backward"}:
        return "the gradients"
    if len(outputs) == 1:
        return "the model's output" if not outputs[0].phase else "the loss or the model's output"
    return f"the output of {len(outputs)} graphs"


#: How an inf warning begins (:func:`values_fact` tells a masked inf from one that reaches an output by it).
INF_REACHES = "inf reaches "


def values_fact(info: NodeInfo, warnings: Sequence[str]) -> str:
    """What the detail pane says about a node's values, given the graph's ``warnings`` ("" when all finite)."""
    if info.nonfinite == "nan":
        return "NaN in its output (a warning)"
    if info.nonfinite != "inf":
        return ""
    if info.op == "output" or any(w.startswith(INF_REACHES) for w in warnings):
        return "±inf in its output, and inf reaches an output (a warning)"
    return "±inf in its output, masked before any output (on purpose, as a mask or a log of zero)"
