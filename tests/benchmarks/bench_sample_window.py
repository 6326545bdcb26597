"""Statistics benchmark: what one snapshot's figures cost for a 10,000-column window, new engine beside the old ones.

    python tests/benchmarks/bench_sample_window.py               # against the engines of git ref `main`
    python tests/benchmarks/bench_sample_window.py --against REF [--columns 10000] [--rounds 15]

:mod:`fxtui.core.sample_window` replaced two engines: the model mode's ``measure/stats.py`` (torch) and
``fxtui run``'s ``jobs/node_window.py`` (numpy). The old ones are read from ``git show REF:…`` and loaded
beside the new one, so both run in one process on the same samples, interleaved round by round. Printed,
for each mode, the median time of one snapshot's statistics and the ratio new ÷ old (medians of the
rounds' own ratios):

* model: every column has a sample in every step (a 10,000-node graph's window: 100 steps), with the run
  figures, and with disturbed steps left out;
* program: columns with holes (a program's nodes × shapes, each step running 70% of them), 200 steps.

Also the cost of adding one step (the engine's part of a run). The machine's other load inflates every
figure; the ratios, taken round by round, much less.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from fxtui.core.sample_window import SampleWindow

ROOT = Path(__file__).resolve().parents[2]


def load_old(ref: str, path: str, name: str) -> ModuleType | None:
    """The module at ``path`` as it was at git ``ref``, loaded under ``name``; None when it is not there."""
    found = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:{path}"], capture_output=True, text=True)
    if found.returncode != 0:
        return None
    file = Path(tempfile.mkdtemp(prefix="fxtui-bench-")) / f"{name}.py"
    file.write_text(found.stdout)
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def seconds(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def compare(label: str, rounds: int, new: Callable[[], Any], old: Callable[[], Any] | None) -> None:
    """Interleave ``new`` and ``old``, alternating which goes first; print medians and the median ratio."""
    new_s, old_s, ratios = [], [], []
    new()
    if old is not None:
        old()
    for k in range(rounds):
        pair = [("new", new), ("old", old)] if k % 2 == 0 else [("old", old), ("new", new)]
        took = {which: seconds(fn) for which, fn in pair if fn is not None}
        new_s.append(took["new"])
        if old is not None:
            old_s.append(took["old"])
            ratios.append(took["new"] / took["old"])
    text = f"{label:34} new {statistics.median(new_s) * 1e3:7.2f} ms"
    if old is not None:
        text += f"   old {statistics.median(old_s) * 1e3:7.2f} ms   new ÷ old {statistics.median(ratios):.2f}"
    print(text)


def model_mode(columns: int, rounds: int, old_stats: ModuleType | None) -> None:
    rng = np.random.default_rng(0)
    new = SampleWindow(columns)
    old = old_stats.SampleWindow(columns) if old_stats else None
    steps = new.window
    rows = [rng.integers(1_000, 5_000_000, columns).tolist() for _ in range(steps)]
    for k, row in enumerate(rows):
        disturbed = k % 10 == 0
        new.add_run(row, sum(row), disturbed=disturbed)
        new.add_eager(sum(row))
        if old is not None:
            old.add(row, sum(row), disturbed=disturbed)
            old.add_eager(sum(row))
    print(f"\nmodel: {columns:,} nodes, window full ({steps} steps, every 10th disturbed)")
    compare(
        "snapshot's statistics",
        rounds,
        lambda: new.stats(leave_out_disturbed=False),
        (lambda: old.summary(leave_out_disturbed=False)) if old is not None else None,
    )
    compare(
        "… disturbed steps left out",
        rounds,
        lambda: new.stats(),
        (lambda: old.summary()) if old is not None else None,
    )
    row, total = rows[0], sum(rows[0])
    compare(
        "one step added",
        rounds,
        lambda: new.add_run(row, total),
        (lambda: old.add(row, total)) if old is not None else None,
    )


def program_mode(columns: int, rounds: int, old_window: ModuleType | None) -> None:
    rng = np.random.default_rng(1)
    new = SampleWindow()
    old = old_window.NodeWindow() if old_window else None
    new.add_columns(columns)
    if old is not None:
        old.add_columns(columns)
    steps = 200
    for _ in range(steps):
        ran = np.flatnonzero(rng.random(columns) < 0.7)
        ns = rng.integers(1_000, 5_000_000, len(ran))
        new.add(ran, ns)
        if old is not None:
            old.add(ran, ns)
    print(f"\nprogram: {columns:,} columns (node × shape), {new.filled} steps kept, each running 70% of them")
    compare("snapshot's statistics", rounds, new.stats, old.stats if old is not None else None)
    ran = np.flatnonzero(rng.random(columns) < 0.7)
    ns = rng.integers(1_000, 5_000_000, len(ran))
    compare("one step added", rounds, lambda: new.add(ran, ns), (lambda: old.add(ran, ns)) if old is not None else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", default="main", help="git ref whose old engines to compare with")
    parser.add_argument("--columns", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--torch-threads", type=int, default=0, help="intra-op threads of the old torch engine")
    args = parser.parse_args()
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    old_stats = load_old(args.against, "fxtui/measure/stats.py", "old_stats")
    old_window = load_old(args.against, "fxtui/jobs/node_window.py", "old_node_window")
    for name, module in [("measure/stats.py", old_stats), ("jobs/node_window.py", old_window)]:
        print(f"old engine {name} at {args.against}: {'loaded' if module else 'not found (new figures only)'}")
    if old_stats is not None:
        print(
            f"torch intra-op threads (the old model-mode engine sorts with them): {old_stats.torch.get_num_threads()}"
        )
    model_mode(args.columns, args.rounds, old_stats)
    program_mode(args.columns, args.rounds, old_window)


if __name__ == "__main__":
    main()
