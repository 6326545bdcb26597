"""What-if benchmark: what each what-if measures on resnet18 5×3×224×224 (and int8-dynamic on an MLP).

Prints, per what-if, the uninstrumented run median before → after with each side's p25–p75,
the verdict (only when the ranges do not overlap), the pairs it took, the setup or compile
time and the output difference; for channels-last the stem max pool's before → after and its
ratio, and the largest node changes. Figures are printed, never asserted: the machine is shared,
and the load average is printed before and after so a noisy run shows as one.

    python tests/benchmarks/bench_whatif.py [--pairs N] [--batch B] [--only NAME,…]
    python tests/benchmarks/bench_whatif.py --memory [--layers 12] [--pairs 2]

resnet18 has a single Linear layer, so int8-dynamic runs on a three-layer MLP (1024 wide, batch 64)
instead, where the Linear layers are the whole model.

``--memory`` prints what each what-if costs in resident memory on a large model (an MLP of
``--layers`` 4096×4096 Linear layers, 64 MiB of weights each, captured with torch.fx and with
TorchDynamo): the process's RSS before the what-if, its peak during it (the kernel's high-water
mark, reset through /proc/self/clear_refs) and after it. It reads /proc itself, so the same
script measures an older fxtui side by side (``PYTHONPATH=<other worktree> python …``).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

import torch
from torch import nn

from fxtui.core.findings import WhatIf
from fxtui.core.settings import Target
from fxtui.core.units import format_seconds
from fxtui.core.what_if_text import change_text, diff_text, spread
from fxtui.measure.pipeline import loaded_from_module, session_for_module, session_for_target
from fxtui.measure.session import Session
from fxtui.measure.whatif.measure import BUDGET_S, MAX_PAIRS
from fxtui.measure.whatif.runner import run_what_ifs

RESNET_WHAT_IFS = ("channels-last", "bf16", "fold-bn", "threads=1", "compile")


def progress(message: str) -> None:
    print(f"\r\x1b[K  {message}", end="", file=sys.stderr, flush=True)


def show(result: WhatIf, seconds: float) -> None:
    print(f"\n== {result.name}: {result.title}")
    if result.error:
        print(f"   cannot apply: {result.error}")
        return
    print(
        f"   run   {format_seconds(result.before_s)} (p25–p75 {spread(result.before_p25_s, result.before_p75_s)}) → "
        f"{format_seconds(result.after_s)} ({spread(result.after_p25_s, result.after_p75_s)}): {change_text(result)}"
    )
    ratio = result.after_s / result.before_s if result.before_s and result.after_s else float("nan")
    print(f"   after ÷ before {ratio:.3f}; {result.pairs} interleaved pairs; the what-if took {seconds:.1f} s")
    print(
        f"   outputs max abs diff {diff_text(result.max_abs_diff)}, max rel diff {diff_text(result.max_rel_diff)}"
        f"; setup {format_seconds(result.setup_s)}"
    )
    if result.note:
        print(f"   note  {result.note}")
    for change in result.nodes[:5]:
        before, after = change.before_s, change.after_s
        ratio_text = f"×{after / before:.2f}" if before and after else "gone" if after is None else "new"
        print(f"   node  {change.name:<24} {format_seconds(before):>9} → {format_seconds(after):>9}  {ratio_text}")


def maxpool_line(result: WhatIf) -> None:
    pool = next((c for c in result.nodes if c.name == "maxpool"), None)
    if pool is None or not pool.before_s or not pool.after_s:
        return
    print(
        f"   stem max pool: {format_seconds(pool.before_s)} → {format_seconds(pool.after_s)}, "
        f"{pool.before_s / pool.after_s:.1f}× faster ({100 * pool.before_s / (result.before_s or 1):.1f}% of the "
        f"original uninstrumented run before)"
    )


def measure(session: Session, names: tuple[str, ...], pairs: int) -> None:
    for name in names:
        started = time.perf_counter()
        (result,) = run_what_ifs(session, [name], pairs=pairs, progress=progress)
        print("\r\x1b[K", end="", file=sys.stderr)
        show(result, time.perf_counter() - started)
        if name == "channels-last":
            maxpool_line(result)


def _rss(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def mib(nbytes: int) -> str:
    return f"{nbytes / 2**20:,.0f} MiB"


def memory(layers: int, pairs: int) -> None:
    """Peak RSS of each what-if on an MLP of ``layers`` 4096×4096 Linear layers, fx and TorchDynamo captures."""
    torch.manual_seed(0)
    blocks: list[nn.Module] = []
    for _ in range(layers):
        blocks += [nn.Linear(4096, 4096), nn.ReLU()]
    mlp = nn.Sequential(*blocks).eval()
    weights = sum(p.numel() * p.element_size() for p in mlp.parameters())
    print(f"\nMLP of {layers} Linear(4096, 4096): {mib(weights)} of parameters, batch 8, at most {pairs} pairs")
    print(f"  {'capture':<8}{'what-if':<14}{'RSS before':>12}{'peak during':>13}{'peak − before':>15}{'after':>11}")
    for capture in ("fx", "dynamo"):
        session = session_for_module(
            loaded_from_module(mlp, torch.randn(8, 4096), "mlp"), analyse=False, capture_mode=capture
        )
        session.warm_up(1)
        for name in ("threads=1", "bf16", "int8-dynamic", "compile"):
            gc.collect()
            before = _rss("VmRSS")
            try:
                Path("/proc/self/clear_refs").write_text("5")
            except OSError:
                print("  (cannot reset the peak: /proc/self/clear_refs refused)")
            (result,) = run_what_ifs(session, [name], pairs=pairs, progress=progress)
            print("\r\x1b[K", end="", file=sys.stderr)
            peak = _rss("VmHWM")
            gc.collect()
            after = _rss("VmRSS")
            error = f"  ({result.error[:60]})" if result.error else ""
            figures = f"{mib(before):>12}{mib(peak):>13}{mib(peak - before):>15}{mib(after):>11}"
            print(f"  {capture:<8}{name:<14}{figures}{error}")
        del session
        gc.collect()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=MAX_PAIRS, help=f"at most this many pairs (default {MAX_PAIRS})")
    parser.add_argument("--batch", type=int, default=5)
    parser.add_argument("--only", help="what-ifs to run, comma separated (default: all)")
    parser.add_argument("--memory", action="store_true", help="peak RSS of each what-if on a large MLP")
    parser.add_argument("--layers", type=int, default=12, help="with --memory: Linear(4096, 4096) layers")
    args = parser.parse_args()
    if args.memory:
        print(f"torch {torch.__version__}; load average {os.getloadavg()[0]:.2f}")
        memory(args.layers, min(args.pairs, 3) if args.pairs != MAX_PAIRS else 2)
        print(f"\nload average {os.getloadavg()[0]:.2f} at the end")
        return
    only = set(args.only.split(",")) if args.only else None
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} cores; "
        f"load average {os.getloadavg()[0]:.2f}; at most {args.pairs} pairs, {BUDGET_S:.0f} s budget per what-if"
    )
    shape = (args.batch, 3, 224, 224)
    session = session_for_target(Target("resnet18", input_shapes=(shape,)), analyse=False)
    session.warm_up(2)
    print(f"\nresnet18 {'×'.join(map(str, shape))}, captured with {session.captured.capture}")
    measure(session, tuple(n for n in RESNET_WHAT_IFS if only is None or n in only), args.pairs)

    if only is None or "int8-dynamic" in only:
        torch.manual_seed(0)
        mlp = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
        mlp_session = session_for_module(loaded_from_module(mlp.eval(), torch.randn(64, 1024), "mlp"), analyse=False)
        mlp_session.warm_up(2)
        print("\nMLP 1024-1024-1024-10, batch 64")
        measure(mlp_session, ("int8-dynamic",), args.pairs)
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
