"""Memory pass benchmark: resnet18 5×3×224×224's memory figures, and what the pass costs.

Prints conv1's output bytes against 5×64×112×112×4, the live peak and its node, the allocator's
high-water mark, and the pass's wall time over the median of uninstrumented runs measured in
the same process (the issue's bound: under five). Figures are printed, never asserted.

    python tests/benchmarks/bench_memory.py [--runs N] [--batch B]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torchvision

from fxtui.core.units import format_bytes
from fxtui.measure.analysis.memory import measure_captured_memory
from fxtui.measure.capture import CapturedModel, capture
from fxtui.measure.inputs import Inputs
from fxtui.measure.session import Session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="uninstrumented runs and memory passes, interleaved")
    parser.add_argument("--batch", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(0)
    inputs = Inputs((torch.randn(args.batch, 3, 224, 224),))
    captured = capture(torchvision.models.resnet18().eval(), inputs, mode="fx", name="resnet18")
    plain: list[float] = []
    passes: list[float] = []
    found = None
    with torch.inference_mode():
        captured.run(inputs.fresh())  # warm-up
    for _ in range(args.runs):
        given = inputs.fresh()
        with torch.inference_mode():
            t0 = time.perf_counter()
            captured.run(given)
            plain.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        found = measure_captured_memory(captured, inputs)
        passes.append(time.perf_counter() - t0)
    assert found is not None
    s = found.summary
    conv1 = found.nodes["conv1"].output_bytes
    expected = args.batch * 64 * 112 * 112 * 4
    print(f"== resnet18 {args.batch}×3×224×224, {torch.get_num_threads()} threads, {args.runs} rounds interleaved")
    print(f"conv1 output      {conv1:,} bytes (expected {expected:,}: {'exact' if conv1 == expected else 'DIFFERS'})")
    print(f"live peak         {s.peak_live_bytes:,} bytes ({format_bytes(s.peak_live_bytes)}) after {s.peak_node}")
    print(f"allocator peak    {s.high_water_bytes or 0:,} bytes in {s.high_water_node} (temporaries included)")
    print(f"parameters        {s.param_bytes:,} bytes; inputs {s.input_bytes:,} bytes; RSS {format_bytes(s.rss_bytes)}")
    run, cost = statistics.median(plain), statistics.median(passes)
    print(f"uninstrumented    {run * 1e3:.1f} ms median; memory pass {cost * 1e3:.1f} ms median")
    print(f"pass ÷ run        {cost / run:.2f} (bound: 5)")
    timed_figures_unchanged(captured, inputs)


def timed_figures_unchanged(captured: CapturedModel, inputs: Inputs, steps: int = 20, rounds: int = 4) -> None:
    """Fidelity and overhead of one session before and after memory passes, rounds alternating.

    The pass runs between timed runs, never inside them; what it could leave behind (allocator
    state, hooks, a changed captured model) would show as figures that move after it.
    """
    session = Session(captured, inputs)
    session.warm_up(3)
    figures: dict[str, list[tuple[float, float]]] = {"without a pass": [], "after a memory pass": []}
    for _ in range(rounds):
        for label in figures:
            if label == "after a memory pass":
                measure_captured_memory(captured, inputs)
            session.reset()
            for _ in range(steps):
                session.run_pair()
            snap = session.snapshot()
            figures[label].append((snap.fidelity or 0.0, snap.overhead or 0.0))
    print(f"== the timed figures, {rounds} rounds of {steps} steps each, alternating")
    for label, values in figures.items():
        shown = ", ".join(f"{f:.3f}/{o:.3f}" for f, o in values)
        print(f"{label:<20} fidelity/overhead {shown}")


if __name__ == "__main__":
    main()
