"""Interference benchmark: does fxtui tell a disturbed run from a quiet one, and what should it do with it?

    python tests/benchmarks/bench_interference.py [MODEL] [SHAPE] [THREADS]   # default resnet18 5,3,224,224 2

Runs one session in three phases, steps interleaved as always: quiet, loaded (two other
processes keep the cores busy in random bursts of 0.1–0.5 s, as on a shared server), quiet
again. Every step is recorded raw, with what :mod:`fxtui.measure.interference` read around
its two runs. Printed:

* the share of each run taken by other work (:attr:`RunLoad.lost_share`) in the quiet and
  the loaded phase, and how many steps each threshold would call disturbed;
* the figures (fidelity, overhead, node medians) of the loaded phase with its disturbed
  steps kept and left out, each against the quiet phases' figures: the better default is
  the one closer to what a quiet machine measures.

Needs the machine to itself apart from the load it makes.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fxtui.core.sample_window import SampleWindow
from fxtui.core.settings import Target
from fxtui.measure.interference import DISTURBED_SHARE
from fxtui.measure.pipeline import session_for_target
from fxtui.measure.session import Session

LOADER = """
import random, time
random.seed({seed})
end = time.monotonic() + {seconds}
while time.monotonic() < end:
    burst = time.monotonic() + random.uniform(0.1, 0.5)
    while time.monotonic() < burst:
        pass
    time.sleep(random.uniform(0.1, 0.5))
"""

THRESHOLDS = (0.02, 0.05, 0.1, 0.2)


def record(session: Session, steps: int) -> list[tuple[list[int], int, int, float]]:
    """``steps`` raw steps: node ns, profiled run ns, uninstrumented run ns, the larger run's lost share."""
    out = []
    for _ in range(steps):
        session.run_pair(record=False)
        loads = [load for load in session._loads if load is not None]
        node_ns, run_ns, eager_ns = session._pending
        out.append((list(node_ns), int(run_ns), int(eager_ns), max(load.lost_share for load in loads)))
    return out


def figures(steps: list[tuple[list[int], int, int, float]], nodes: int) -> tuple[float, float, list[float]]:
    """Fidelity, overhead and node medians of ``steps``, as a session computes them."""
    window = SampleWindow(nodes, window=len(steps) + 1)
    for node_ns, run_ns, eager_ns, _ in steps:
        window.add_run(node_ns, run_ns)
        window.add_eager(eager_ns)
    s = window.stats()
    assert s.run_median and s.eager_median
    return float(sum(s.median)) / s.eager_median, s.run_median / s.eager_median, s.median.tolist()


def spearman(a: list[float], b: list[float]) -> float:
    def ranks(v: list[float]) -> list[float]:
        order = sorted(range(len(v)), key=v.__getitem__)
        r = [0.0] * len(v)
        for rank, i in enumerate(order):
            r[i] = float(rank)
        return r

    ra, rb = ranks(a), ranks(b)
    n = len(a)
    return 1 - 6 * sum((x - y) ** 2 for x, y in zip(ra, rb, strict=True)) / (n * (n * n - 1))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(model: str = "resnet18", shape: str = "5,3,224,224", threads: str = "2") -> None:
    torch.set_num_threads(int(threads))
    dims = tuple(int(x) for x in shape.split(","))
    session = session_for_target(Target(model, input_shapes=(dims,)), analyse=False, keep_disturbed=True)
    session.warm_up(3)
    nodes = len(session.timer.names)
    run_s = statistics.median(record(session, 5)[i][2] for i in range(5)) / 1e9
    per_phase = 40
    print(f"{model} {shape}, {threads} threads, {nodes} nodes, uninstrumented run ~{run_s * 1e3:.0f} ms")
    print(f"{per_phase} steps per phase; threshold in use DISTURBED_SHARE = {DISTURBED_SHARE}")

    quiet = record(session, per_phase)
    seconds = per_phase * run_s * 4 + 30
    loaders = [subprocess.Popen([sys.executable, "-c", LOADER.format(seed=k, seconds=seconds)]) for k in range(2)]
    try:
        loaded = record(session, per_phase)
    finally:
        for p in loaders:
            p.kill()
            p.wait()
    quiet += record(session, per_phase)

    print("\nshare of a run taken by other work (the larger of the step's two runs)")
    for label, steps in (("quiet", quiet), ("loaded", loaded)):
        lost = [s[3] for s in steps]
        counts = "  ".join(f">{t:.2f}: {sum(x > t for x in lost):>2}" for t in THRESHOLDS)
        print(
            f"  {label:7} p10 {pct(lost, 0.1):.3f}  median {statistics.median(lost):.3f}  p90 {pct(lost, 0.9):.3f}"
            f"  max {max(lost):.3f}   steps {counts} of {len(lost)}"
        )

    ref_fid, ref_ovh, ref_nodes = figures(quiet, nodes)
    top = sorted(range(nodes), key=lambda i: -ref_nodes[i])[: max(10, nodes // 4)]

    def compare(label: str, steps: list[tuple[list[int], int, int, float]]) -> None:
        fid, ovh, med = figures(steps, nodes)
        errors = [abs(med[i] / ref_nodes[i] - 1) for i in top if ref_nodes[i] > 0]
        print(
            f"  {label:28} steps {len(steps):>2}  fidelity {fid:.3f} ({fid - ref_fid:+.3f})  overhead {ovh:.3f} "
            f"({ovh - ref_ovh:+.3f})  top-node median error {100 * statistics.median(errors):.1f}% "
            f"(p90 {100 * pct(errors, 0.9):.1f}%)  rank rho {spearman(med, ref_nodes):.3f}"
        )

    print(f"\nfigures against the quiet phases' (fidelity {ref_fid:.3f}, overhead {ref_ovh:.3f})")
    compare("loaded, disturbed kept", loaded)
    kept = [s for s in loaded if s[3] <= DISTURBED_SHARE]
    if len(kept) >= 5:
        compare("loaded, disturbed left out", kept)  # fxtui's default, given 5 quiet steps
    else:
        print(f"  loaded, disturbed left out: only {len(kept)} quiet steps; fxtui would keep them all")
    compare("quiet, first phase only", quiet[:per_phase])


if __name__ == "__main__":
    main(*sys.argv[1:])
