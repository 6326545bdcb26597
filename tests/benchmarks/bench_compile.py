"""Compiled models benchmark: what ``--compile`` measures, and what timing the kernels costs.

For resnet18 at 5×3×224×224 and BERT-base (``hf:bert``: random weights from its default
configuration, nothing downloaded), each compiled by Inductor (default mode) in a session of its
own, as ``fxtui TARGET --compile --once`` runs it:

* overhead: median of the compiled runs with every kernel timed ÷ median of the untimed compiled
  runs, interleaved in the session (target ≤ 1.10);
* fidelity: Σ kernel medians ÷ the untimed compiled run's median (target 0.85–1.05);
* compile time (the first compiled call: TorchDynamo, AOTAutograd, Inductor, the C++ builds; Inductor's
  FX graph cache is off while fxtui compiles, the C++ builds may come from its on-disk cache);
* kernels (generated C++ loops and extern calls);
* the share of compiled time charged to a named module (target ≥ 95%), and why the rest is at the root;
* eager → compiled per top-level module (eager: Σ of its ATen op medians; compiled: Σ of its kernels'),
  and the whole runs' medians.

With ``--profiler`` it also measures the other route to per-kernel times on resnet18: Inductor's
``cpp.enable_kernel_profile`` (a profiler range inside every generated kernel) under
``torch.profiler``, against the same compiled model run without the profiler, interleaved.

Figures are printed, never asserted; the load average is printed before and after (the machine is shared).

    python tests/benchmarks/bench_compile.py [--runs N] [--only resnet18|bert] [--profiler] [--save DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from fxtui.core.nodes import Spread
from fxtui.core.settings import Target
from fxtui.core.units import format_seconds
from fxtui.measure.allocator import keep_freed_memory
from fxtui.measure.pipeline import make_report, run_profile, session_for_target
from fxtui.report.api import Report

TARGETS = {
    "resnet18": Target("resnet18", input_shapes=((5, 3, 224, 224),), compile=True),
    "bert": Target("hf:bert", compile=True),
}


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def measure(name: str, target: Target, runs: int, save: str = "") -> Report:
    started = time.perf_counter()
    # Steps other work disturbed are left out, as the command line does (never more than about half).
    session = session_for_target(target, analyse=False, keep_disturbed=False)
    run_profile(session, runs, warmup=3)
    report = make_report(session, timeline=False)
    if save:
        with open(os.path.join(save, f"{name}.json"), "w", encoding="utf-8") as f:
            f.write(report.to_json())
    summary = report.compiled
    assert summary is not None
    total = sum(r.median_s for r in report.rows) or 1e-12
    named = sum(r.median_s for r in report.rows if r.module_path)
    print(f"\n== {name}  ({report.model}, inputs {', '.join(report.inputs)}, {report.threads} threads)")
    print(f"session         {time.perf_counter() - started:.0f} s, {report.runs} steps")
    if report.disturbance is not None and report.disturbance.line():
        print(f"disturbed       {report.disturbance.line()}")
    print(f"compile time    {format_seconds(summary.compile_s)}, {summary.graphs} graph(s)")
    print(
        f"kernels         {summary.kernels + summary.externs} ({summary.kernels} generated, {summary.externs} extern)"
    )
    sp = report.spreads
    print(f"overhead        {report.overhead:.3f}  (target ≤ 1.10){_steps(sp.overhead)}")
    print(f"fidelity        {report.fidelity:.3f}  (target 0.85–1.05){_steps(sp.fidelity)}")
    print(f"named share     {100 * named / total:.1f}% of compiled time charged to a named module (target ≥ 95%)")
    if summary.root_reason:
        print(f"root            {summary.root_reason}")
    eager, compiled = summary.eager_s, report.eager_median_s
    if eager and compiled:
        ratio = compiled / eager
        print(f"whole run       {format_seconds(eager)} eager → {format_seconds(compiled)} compiled (×{ratio:.2f})")
    print("per top-level module (eager Σ op medians → compiled Σ kernel medians; – : no kernel of its own)")
    compiled_s = {m.path: m.inclusive_s for m in report.modules}
    top = {p for p in (*summary.eager_modules, *compiled_s) if "." not in p}
    for path in sorted(top, key=lambda p: -summary.eager_modules.get(p, 0.0)):
        e, c = summary.eager_modules.get(path), compiled_s.get(path)
        ratio = f"×{c / e:.2f}" if e and c is not None else "–"
        print(f"  {path or '(root)':<14} {format_seconds(e):>9} → {format_seconds(c):>9}  {ratio}")
    return report


def _steps(spread: Spread | None) -> str:
    return f"; each step's own ratio {spread.q25:.3f}–{spread.q75:.3f} (p25–p75)" if spread else ""


def profiler_route(runs: int) -> None:
    """resnet18 compiled with profiler ranges in its kernels: profiled ÷ unprofiled runs, interleaved."""
    import torch._inductor.config as config
    from torch.profiler import ProfilerActivity, profile

    from fxtui.measure.targets import load_target

    loaded = load_target("resnet18", input_shapes=((5, 3, 224, 224),))
    model, inputs = loaded.module, loaded.inputs
    with config.patch({"cpp.enable_kernel_profile": True, "fx_graph_cache": False}):
        compiled = torch.compile(model)
        with torch.inference_mode():
            for _ in range(3):
                inputs.call(compiled)
    plain, profiled, events = [], [], 0
    with torch.inference_mode():
        for i in range(2 * runs):
            t0 = time.perf_counter_ns()
            if i % 2:
                with profile(activities=[ProfilerActivity.CPU]) as prof:
                    inputs.call(compiled)
                profiled.append(time.perf_counter_ns() - t0)
                events = len(prof.events())
            else:
                inputs.call(compiled)
                plain.append(time.perf_counter_ns() - t0)
    ratio = statistics.median(profiled) / statistics.median(plain)
    print("\n== the profiler route on resnet18 (cpp.enable_kernel_profile + torch.profiler, interleaved)")
    print(f"overhead        {ratio:.3f}  ({events} profiler events per run; the run with the profiler's start and "
          "stop, before its events are read)")  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--only", choices=sorted(TARGETS))
    p.add_argument("--profiler", action="store_true")
    p.add_argument("--save", metavar="DIR", default="", help="also write each model's report as DIR/NAME.json")
    args = p.parse_args()
    keep_freed_memory()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; before: {load()}")
    for name, target in TARGETS.items():
        if args.only in (None, name):
            measure(name, target, args.runs, args.save)
    if args.profiler:
        profiler_route(args.runs)
    print(f"\nafter: {load()}")


if __name__ == "__main__":
    main()
