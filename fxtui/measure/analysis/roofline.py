"""The machine's ceilings and where a node sits under them (the roofline model).

A node that does many FLOPs per byte it moves is limited by arithmetic
(compute-bound); one that does few is limited by memory bandwidth. The ridge point
— peak FLOP/s over peak bytes/s — separates the two, and the roofline at a node's
intensity is the best speed it could reach on this machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from fxtui.core.findings import MachinePeaks, Roofline, place_on_roofline
from fxtui.measure.analysis.cpu_setup import thread_limit
from fxtui.measure.analysis.work import NodeWork


def measure_peaks(
    threads: int | None = None, *, matmul_n: int = 1024, copy_mb: int = 64, reps: int = 5
) -> MachinePeaks:
    """Measure peak GFLOP/s (an ``n×n`` float32 matmul) and GB/s (a ``copy_mb`` MB copy).

    Takes the best of ``reps`` timed repetitions after one warm-up each; best rather
    than median because a ceiling is what the machine *can* do, and a neighbour
    stealing a core only ever makes a repetition slower. Runs on ``threads`` intra-op
    threads (the current setting when ``None``) and restores the setting afterwards.
    About 0.2 s on two cores.
    """
    with thread_limit(threads) as in_force, torch.inference_mode():
        a = torch.randn(matmul_n, matmul_n)
        b = torch.randn(matmul_n, matmul_n)
        out = torch.empty(matmul_n, matmul_n)
        mm_s = _best_time(lambda: torch.mm(a, b, out=out), reps)
        src = torch.empty(copy_mb * (1 << 20) // 4)
        dst = torch.empty_like(src)
        copy_s = _best_time(lambda: dst.copy_(src), reps)
    return MachinePeaks(
        gflops=2.0 * matmul_n**3 / mm_s / 1e9,
        gbytes_per_s=2.0 * src.numel() * src.element_size() / copy_s / 1e9,
        threads=in_force,
    )


def _best_time(fn: Callable[[], object], reps: int) -> float:
    fn()
    best = float("inf")
    for _ in range(max(reps, 1)):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    # Guard against a zero reading on a coarse clock.
    return max(best, 1e-9)


def classify(work: NodeWork, median_s: float, peaks: MachinePeaks) -> Roofline | None:
    """Place a node on the roofline; ``None`` when it moves no data or has no time."""
    return place_on_roofline(work.flops, work.bytes_moved, median_s, peaks)
