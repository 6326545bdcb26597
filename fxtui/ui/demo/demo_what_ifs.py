"""Fixed what-ifs for the demo resnet18: the options a session offers and a result for each.

Nothing here is measured. The changes are shaped like what the what-ifs find on a small CPU
(channels-last speeds the convolutions and the max pool most, bfloat16 without bfloat16
instructions is slower, folding removes the BatchNorm nodes), so the what-if screen's
pictures show every kind of row: faster, slower, gone, and a whole-run-only result.
"""

from __future__ import annotations

from collections.abc import Callable

from fxtui.core.findings import ModuleChange, NodeChange, WhatIf, WhatIfOption
from fxtui.core.what_if_catalogue import CATALOGUE, describe
from fxtui.ui.demo.demo_source import resnet18_graph, resnet18_rows

#: The what-ifs a resnet18 session on 2 cores offers, in the catalogue's order (threads=N as threads=1).
NAMES = tuple("threads=1" if name == "threads=N" else name for name in CATALOGUE)


def demo_what_if_options() -> tuple[WhatIfOption, ...]:
    """Every what-if applies to resnet18."""
    return tuple(WhatIfOption(name, describe(name)) for name in NAMES)


def _result(
    name: str, title: str, factor: Callable[[str, str], float | None], spread: float, **extra: object
) -> WhatIf:
    """A result whose node medians are the demo's times ``factor(name, type)`` (None: the node is gone)."""
    graph = resnet18_graph()
    nodes = []
    for node, op, _, type_name, path, _, us in resnet18_rows():
        f = factor(node, type_name)
        if op not in ("placeholder", "output"):
            nodes.append(NodeChange(node, path, us * 1e-6, None if f is None else us * f * 1e-6))
    changes = {c.name: c for c in nodes}
    plan = graph.module_plan  # the engine's roll-up, over the nodes each side has
    sides = [[getattr(changes.get(n.name), side, None) for n in graph.nodes] for side in ("before_s", "after_s")]
    (before, had_before), (after, had_after) = (
        (plan.roll_up([v or 0.0 for v in values]), plan.roll_up([v is not None for v in values])) for values in sides
    )
    modules = [
        ModuleChange(p, float(before[i]) if had_before[i] else None, float(after[i]) if had_after[i] else None)
        for i, p in enumerate(plan.paths)
    ]
    run_before, run_after = float(before[0]) * 1.01, float(after[0]) * 1.01
    return WhatIf(
        name=name,
        title=title,
        before_s=run_before,
        before_p25_s=run_before * (1 - spread),
        before_p75_s=run_before * (1 + spread),
        after_s=run_after,
        after_p25_s=run_after * (1 - spread),
        after_p75_s=run_after * (1 + spread),
        pairs=20,
        nodes=tuple(sorted(nodes, key=lambda c: -abs(c.change_s))),
        modules=tuple(sorted(modules, key=lambda c: -abs(c.change_s))),
        **extra,  # type: ignore[arg-type]
    )


def demo_what_ifs() -> tuple[WhatIf, ...]:
    """channels-last (faster, the max pool most), bf16 (slower), fold-bn and compile, measured."""
    channels_last = _result(
        "channels-last",
        "model and 1 4-D input in torch.channels_last",
        lambda node, kind: {"MaxPool2d": 0.12, "Conv2d": 0.84, "BatchNorm2d": 1.1}.get(kind, 1.0),
        0.02,
        max_abs_diff=2.4e-6,
        max_rel_diff=4.0e-7,
        setup_s=0.049,
        serial=1,
    )
    bf16 = _result(
        "bf16",
        "bfloat16 autocast (torch.autocast('cpu', dtype=torch.bfloat16)): convolutions and matmuls in bfloat16, "
        "weights and inputs unchanged",
        lambda node, kind: {"Conv2d": 2.6, "Linear": 1.8}.get(kind, 1.05),
        0.03,
        max_abs_diff=2.1e-2,
        max_rel_diff=3.9e-3,
        note="stopped after 3 of 20 pairs: the 30 s budget of a what-if",
        serial=2,
    )
    fold = _result(
        "fold-bn",
        "fold 20 BatchNorm layers into the convolution before each",
        lambda node, kind: None if kind == "BatchNorm2d" else (1.03 if kind == "Conv2d" else 1.0),
        0.02,
        max_abs_diff=2.4e-6,
        max_rel_diff=4.0e-7,
        setup_s=0.44,
        serial=3,
    )
    compiled = WhatIf(
        "compile",
        "torch.compile (Inductor), whole run: the first call compiled it in 41.3 s",
        before_s=fold.before_s,
        before_p25_s=fold.before_p25_s,
        before_p75_s=fold.before_p75_s,
        after_s=(fold.before_s or 0) * 0.81,
        after_p25_s=(fold.before_s or 0) * 0.80,
        after_p75_s=(fold.before_s or 0) * 0.83,
        pairs=20,
        max_abs_diff=1.9e-6,
        max_rel_diff=3.1e-7,
        setup_s=41.3,
        serial=4,
    )
    return channels_last, bf16, fold, compiled


def demo_result(name: str) -> WhatIf:
    """The demo's fixed result for what-if ``name``: those of :func:`demo_what_ifs`, threads and int8 besides."""
    found = {w.name: w for w in demo_what_ifs()}.get(name)
    if found is not None:
        return found
    if name.startswith("threads="):
        threads = name.partition("=")[2]
        return _result(
            name,
            f"{threads} intra-op thread{'s' if threads != '1' else ''} instead of 2",
            lambda node, kind: 1.0 if threads == "2" else (1.62 if kind in ("Conv2d", "Linear") else 1.08),
            0.02,
            max_abs_diff=0.0,
            max_rel_diff=0.0,
        )
    if name == "int8-dynamic":
        return _result(
            name,
            "dynamic int8 quantization of 1 nn.Linear layer (torch.ao.quantization.quantize_dynamic: int8 weights, "
            "activations quantized per batch)",
            lambda node, kind: 0.46 if kind == "Linear" else 1.0,
            0.03,
            max_abs_diff=3.1e-2,
            max_rel_diff=6.2e-3,
            setup_s=0.021,
        )
    return WhatIf(name, describe(name), error="the demo has no result for this what-if")
