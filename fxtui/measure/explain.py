"""Why is this node slow: analyses of a session's model, run outside every timed run.

Each function reads a session and returns what it found; the caller (the live loop,
the headless command, the pipeline) decides where to keep it. :func:`analyse` measures
FLOPs and bytes per node (one counting pass), source lines, thread facts and the
machine's peaks; :func:`explain_nodes` finds the aten operators inside nodes;
:func:`hints_for` turns the statistics so far into suggestions. What-ifs, which change the
model and measure the change, are :mod:`fxtui.measure.whatif`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import TYPE_CHECKING

import torch

from fxtui.core.errors import NodeError
from fxtui.core.findings import AtenOp, Hint
from fxtui.core.snapshot import GraphInfo
from fxtui.measure.analysis.aten import captured_aten_breakdown
from fxtui.measure.analysis.cpu_setup import thread_info
from fxtui.measure.analysis.hint_rules import suggest
from fxtui.measure.analysis.memory import measure_captured_memory
from fxtui.measure.analysis.roofline import measure_peaks
from fxtui.measure.analysis.source import captured_sources
from fxtui.measure.analysis.work import NodeWork, measure_captured_work

if TYPE_CHECKING:
    from fxtui.measure.session import Session


def analyse(session: Session, *, peaks: bool = True, memory: bool = False) -> tuple[GraphInfo, dict[str, NodeWork]]:
    """The session's graph with work, source lines, thread facts and (optionally) peaks filled in, and the work.

    With ``memory``, one more run measures each node's memory (:mod:`fxtui.measure.analysis.memory`).
    """
    try:
        work = measure_captured_work(session.captured, session.inputs)
    except NodeError:
        work = {}  # the model already ran once; a counting failure only loses the FLOPs column
    graph = session.graph
    if memory:
        graph = measure_memory(session)
    sources = captured_sources(session.captured)
    nodes = []
    for info in graph.nodes:
        done = work.get(info.name)
        where = sources.get(info.name)
        nodes.append(
            dataclasses.replace(
                info,
                flops=done.flops if done else None,
                bytes_moved=float(done.bytes_moved) if done else None,
                params=done.params if done else None,
                source=str(where) if where and where.file else info.source,
                forward_source=where.forward if where and info.op == "call_module" else "",
            )
        )
    graph = dataclasses.replace(
        with_thread_facts(graph), nodes=tuple(nodes), peaks=measure_peaks(torch.get_num_threads()) if peaks else None
    )
    return graph, work


def with_thread_facts(graph: GraphInfo) -> GraphInfo:
    """``graph`` with this process's thread settings, build facts and warnings about them (cheap: no run)."""
    threads = thread_info()
    return dataclasses.replace(
        graph,
        thread_info=tuple(line for line in threads.lines() if not line.startswith("warning: ")),
        thread_warnings=threads.warnings,
    )


def annotate(session: Session, *, peaks: bool = True, memory: bool = False) -> None:
    """Keep :func:`analyse`'s results on ``session``: its graph and work are replaced."""
    session.graph, session.work = analyse(session, peaks=peaks, memory=memory)


def measure_memory(session: Session) -> GraphInfo:
    """The session's graph with every node's memory figures and the run's memory summary filled in.

    One interpreted, profiled run outside the timed runs. A model that fails here (it ran before)
    only loses the memory figures: the graph comes back unchanged.
    """
    try:
        found = measure_captured_memory(session.captured, session.inputs)
    except NodeError:
        return session.graph
    nodes = []
    for info in session.graph.nodes:
        m = found.nodes.get(info.name)
        if m is None:
            nodes.append(info)
            continue
        nodes.append(
            dataclasses.replace(
                info,
                output_bytes=m.output_bytes,
                alloc_bytes=m.alloc_bytes,
                live_bytes=m.live_bytes,
                saved_bytes=m.saved_bytes if info.phase == "forward" else None,
                page_faults=m.page_faults,
            )
        )
    return dataclasses.replace(session.graph, nodes=tuple(nodes), memory=found.summary)


def explain_nodes(session: Session, names: Collection[str], runs: int = 3) -> dict[str, tuple[AtenOp, ...]]:
    """The aten operators each of ``names`` runs and their share of the node (empty for none)."""
    found = captured_aten_breakdown(session.captured, session.inputs, node_names=set(names), runs=runs)
    return {name: found.get(name, ()) for name in names}


def hints_for(session: Session) -> tuple[Hint, ...]:
    """Suggestions from the statistics so far (none before the first recorded run)."""
    snapshot = session.snapshot()
    if snapshot.run_median_s is None or not snapshot.nodes:
        return ()
    medians = {name: s.median_s for name, s in snapshot.nodes.items()}
    noise = {name: s.iqr_s / s.median_s for name, s in snapshot.nodes.items() if s.median_s > 0}
    return suggest(
        session.captured,
        medians,
        snapshot.run_median_s,
        noise=noise,
        fastest={name: s.min_s for name, s in snapshot.nodes.items()},
        work=session.work,
        threads=thread_info(),
        inputs=session.inputs.tensors(),
        memory=session.graph.memory,
        nodes=session.graph.nodes,
    )
