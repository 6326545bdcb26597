"""Part 4 of ``bench_timer.py``: each timer's per-module op time against torch.profiler's, on the same step.

torch.profiler (CPU activities, no shapes or stacks) runs the step with a ``record_function`` range per module call,
opened and closed by global module hooks. An op's time is that of an outermost ``aten::`` event (no ``aten::``
event around it), as fxtui times the outermost op a dispatch mode sees. Forward ops belong to every module range
around them; backward ops (those under ``autograd::engine::evaluate_function``) to the modules of the forward op
that made their autograd node (the same sequence number), as fxtui charges them. Gradient accumulation
(``AccumulateGrad``, no forward op) is left out on both sides. For each module above ``--agree-ms`` of op time a
step (fxtui's dispatch mode): fxtui ÷ torch.profiler, per timer, forward and backward; and each timer's Σ op time
a step against torch.profiler's and the unsampled step's wall time (which the fidelity reads: Σ node medians ÷
unsampled step). Medians over rounds, the timers and the profiler interleaved round by round.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import torch
from torch.autograd.profiler import record_function
from torch.profiler import ProfilerActivity, profile

from fxtui.ops.namer import OpNamer
from fxtui.ops.native_recorder import NativeRecorder
from fxtui.ops.recorder import OpRecorder

#: The clock of the unsampled step: the ops' own (wall time: the Σ of op times is read against it, as the fidelity
#: reads Σ node medians against the unsampled step's wall time).
_wall = time.perf_counter_ns
PerModule = dict[tuple[str, str], float]
"""(module path, ``forward`` or ``backward``) → op time a step (ns), inclusive of the module's children."""


def _inclusive(path: str) -> list[str]:
    """A module and every module around it (``blocks.0.qkv`` → ``blocks.0.qkv``, ``blocks.0``, ``blocks``, ``""``)."""
    parts = path.split(".") if path else []
    return [".".join(parts[:k]) for k in range(len(parts), -1, -1)]


def profiled(step: Callable[..., None], model: torch.nn.Module) -> tuple[PerModule, float]:
    """One step under torch.profiler: op time per module (inclusive) and direction, and Σ op time (ns)."""
    paths = {id(m): p for p, m in model.named_modules()}
    ranges: list[Any] = []

    def pre(module: torch.nn.Module, args: Any) -> None:
        path = paths.get(id(module))
        if path is not None:
            ranges.append(record_function(f"fx::{path}"))
            ranges[-1].__enter__()

    def post(module: torch.nn.Module, args: Any, out: Any) -> None:
        if id(module) in paths and ranges:
            ranges.pop().__exit__(None, None, None)

    from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

    handles = [register_module_forward_pre_hook(pre), register_module_forward_hook(post)]
    try:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            step()
    finally:
        for handle in handles:
            handle.remove()
    events = prof.events()
    seq_module: dict[int, str] = {}  # a forward op's sequence number → the innermost module around it
    per: PerModule = defaultdict(float)
    total = 0.0
    for event in events:
        name = event.name
        if not name.startswith("aten::"):
            continue
        module, backward_seq, outermost = None, None, True
        parent = event.cpu_parent
        while parent is not None:
            if parent.name.startswith("aten::"):
                outermost = False
            elif parent.name.startswith("fx::") and module is None:
                module = parent.name[4:]
            elif parent.name.startswith("autograd::engine::evaluate_function") and backward_seq is None:
                backward_seq = parent.sequence_nr
            parent = parent.cpu_parent
        if backward_seq is None and module is not None and event.sequence_nr >= 0:
            seq_module.setdefault(event.sequence_nr, module)
        if not outermost:
            continue
        ns = event.time_range.elapsed_us() * 1e3
        total += ns
        if backward_seq is not None:
            owner = seq_module.get(backward_seq)
            if owner is not None:
                for path in _inclusive(owner):
                    per[(path, "backward")] += ns
        elif module is not None:
            for path in _inclusive(module):
                per[(path, "forward")] += ns
    return per, total


def timed(
    recorder: OpRecorder, namer: OpNamer, nodes: dict[int, Any], step: Callable[..., None]
) -> tuple[PerModule, float]:
    """One step under a timer: op time per module (inclusive) and direction of the model's root (0), Σ op time."""
    recorder.start()
    step(recorder.mark)
    recorder.stop()
    records = recorder.take_step() if isinstance(recorder, NativeRecorder) else recorder.take()
    ops = namer.resolve(records)
    for node in namer.take_new()[0]:
        nodes[node.id] = node
    per: PerModule = defaultdict(float)
    total = 0.0
    for node_id, ns, _shape, _start in ops:
        total += ns
        node = nodes[node_id]
        if node.root != 0 or node.phase not in ("forward", "backward") or node.module_path.startswith("("):
            continue  # the loss outside the model (its pseudo-module), the optimizer
        if node.label == "∇detach":
            continue  # gradient accumulation: no forward op (left out on both sides)
        for path in _inclusive(node.module_path):
            per[(path, node.phase)] += ns
    return per, total


def agreement(name: str, step: Callable[..., None], model: torch.nn.Module, rounds: int, native: NativeRecorder,
              threshold_ms: float, load: Callable[[], str]) -> None:  # fmt: skip
    """Print each timer's per-module op time ÷ torch.profiler's, and Σ op time ÷ the unsampled step."""
    mode = OpRecorder()
    namers = {"mode": OpNamer(), "native": OpNamer()}
    for namer in namers.values():
        namer.add_root(model)
    nodes: dict[str, dict[int, Any]] = {"mode": {}, "native": {}}
    for _ in range(3):
        step()
    per: dict[str, list[PerModule]] = {"profiler": [], "mode": [], "native": []}
    totals: dict[str, list[float]] = {"profiler": [], "mode": [], "native": [], "plain": []}
    for _ in range(rounds):
        t0 = _wall()
        step()
        totals["plain"].append(_wall() - t0)
        modules, total = profiled(step, model)
        per["profiler"].append(modules)
        totals["profiler"].append(total)
        for timer, recorder in (("mode", mode), ("native", native)):
            modules, total = timed(recorder, namers[timer], nodes[timer], step)
            per[timer].append(modules)
            totals[timer].append(total)

    def median(timer: str, key: tuple[str, str]) -> float:
        return statistics.median(m.get(key, 0.0) for m in per[timer])

    keys = sorted({k for m in per["mode"] for k in m}, key=lambda k: (k[1], k[0]))
    shown = [k for k in keys if median("mode", k) >= threshold_ms * 1e6]
    plain = statistics.median(totals["plain"])
    print(f"\n{name}: per module above {threshold_ms:g} ms of op time a step, fxtui ÷ torch.profiler; {load()}")
    print(f"  {'module':<22} {'direction':<9} {'profiler ms':>11} {'mode ÷':>8} {'native ÷':>9}")
    for key in shown:
        reference = median("profiler", key)
        ratios = [median(t, key) / reference if reference else float("nan") for t in ("mode", "native")]
        label = key[0] or "(the model)"
        print(f"  {label:<22} {key[1]:<9} {reference / 1e6:>11.2f} {ratios[0]:>8.3f} {ratios[1]:>9.3f}")
    print(f"  Σ op time a step ÷ the unsampled step's wall time ({plain / 1e6:.2f} ms):", end="")
    for timer in ("profiler", "mode", "native"):
        print(f"  {timer} {statistics.median(totals[timer]) / plain:.3f}", end="")
    print()
