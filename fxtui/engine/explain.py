"""Why is this node slow: attach the analysis to a session, and answer on-demand questions.

:func:`annotate` runs once, before the first snapshot, outside every timed run:
FLOPs and bytes per node (one counting pass), source lines, thread facts and the
machine's peaks. :func:`explain_nodes` (aten operators inside nodes) and
:func:`refresh_hints` run between runs when the user asks, so their own cost never
lands in the statistics.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

import torch

from fxtui.engine.analysis.aten import program_aten_breakdown
from fxtui.engine.analysis.hints import suggest
from fxtui.engine.analysis.roofline import measure_peaks
from fxtui.engine.analysis.source import program_sources
from fxtui.engine.analysis.threads import thread_info
from fxtui.engine.analysis.work import measure_program_work
from fxtui.engine.errors import NodeError
from fxtui.engine.findings import WhatIf
from fxtui.engine.session import Session


def annotate(session: Session, *, peaks: bool = True) -> None:
    """Add work, source lines, thread facts and (optionally) machine peaks to ``session.graph``."""
    try:
        session.work = measure_program_work(session.program, session.inputs)
    except NodeError:
        session.work = {}  # the model already ran once; a counting failure only loses the FLOPs column
    sources = program_sources(session.program)
    nodes = []
    for info in session.graph.nodes:
        work = session.work.get(info.name)
        where = sources.get(info.name)
        nodes.append(
            dataclasses.replace(
                info,
                flops=work.flops if work else None,
                bytes_moved=float(work.bytes_moved) if work else None,
                params=work.params if work else None,
                source=str(where) if where and where.file else info.source,
                forward_source=where.forward if where and info.op == "call_module" else "",
            )
        )
    threads = thread_info()
    session.graph = dataclasses.replace(
        session.graph,
        nodes=tuple(nodes),
        peaks=measure_peaks(torch.get_num_threads()) if peaks else None,
        thread_info=tuple(line for line in threads.lines() if not line.startswith("warning: ")),
        thread_warnings=threads.warnings,
    )


def explain_nodes(session: Session, names: Collection[str], runs: int = 3) -> None:
    """Record which aten operators ``names`` run and their share of the node (into ``session.aten``)."""
    found = program_aten_breakdown(session.program, session.inputs, node_names=set(names), runs=runs)
    for name in names:
        session.aten[name] = found.get(name, ())


def refresh_hints(session: Session) -> None:
    """Compute suggestions from the statistics so far (into ``session.hints``)."""
    snapshot = session.snapshot()
    if snapshot.run_median_s is None or not snapshot.nodes:
        session.hints = ()
        return
    medians = {name: s.median_s for name, s in snapshot.nodes.items()}
    noise = {name: s.iqr_s / s.median_s for name, s in snapshot.nodes.items() if s.median_s > 0}
    session.hints = suggest(
        session.program,
        medians,
        snapshot.run_median_s,
        noise=noise,
        fastest={name: s.min_s for name, s in snapshot.nodes.items()},
        work=session.work,
        threads=thread_info(),
        inputs=session.inputs.tensors(),
    )


def what_if_conv_bn(session: Session, runs: int = 20) -> WhatIf | None:
    """Fold every Conv→BatchNorm pair and time both graphs, interleaved; None when nothing folds.

    The fold swaps modules, so it applies to ``fx`` captures only (None otherwise).
    """
    from fxtui.engine.analysis.fusion import fuse_conv_bn

    if session.program.capture != "fx":
        return None
    fused_gm, pairs = fuse_conv_bn(session.gm)
    if not pairs:
        return None
    fused = Session(fused_gm, session.inputs, window=max(runs, 32))
    original = Session(session.gm, session.inputs, window=max(runs, 32))
    for s in (original, fused):
        s.warm_up(2)
    for _ in range(runs):
        original.step()
        fused.step()
    with torch.inference_mode():
        a = session.gm(*session.inputs.fresh().args)
        b = fused_gm(*session.inputs.fresh().args)
    diff = float((a - b).abs().max()) if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) else 0.0
    before, after = original.snapshot().eager_median_s, fused.snapshot().eager_median_s
    return WhatIf(
        title=f"fold {len(pairs)} BatchNorm(s) into the preceding Conv",
        changed=tuple(tuple(p) for p in pairs),
        before_s=before or 0.0,
        after_s=after or 0.0,
        max_abs_diff=diff,
    )
