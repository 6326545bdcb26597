"""How much of a whole detection model's node time lands at the root: code no module's forward ran.

    python tests/benchmarks/bench_root_share.py [MODEL …] [--runs 5]

TorchDynamo compiles the functions a graph break leaves behind (BoxCoder.decode, box_area,
LevelMapper) as frames of their own, without a module stack; their nodes belong to the module
whose forward called them. Prints, per model: nodes, the root's nodes and their share of the sum
of node medians, and the root's ten heaviest nodes. Uses only the Python API and the report, so
the same script measures an older fxtui side by side (``PYTHONPATH=<other worktree> python …``).
"""

from __future__ import annotations

import argparse
import os

import torch

import fxtui
from fxtui.measure.targets import load_target

DEFAULT = ("fasterrcnn_mobilenet_v3_large_320_fpn", "fasterrcnn_resnet50_fpn")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=list(DEFAULT))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; load average {os.getloadavg()[0]:.2f}")
    for name in args.models:
        loaded = load_target(name)  # what `fxtui NAME` profiles: random weights, its default input
        report = fxtui.profile(loaded.module, loaded.inputs.args, runs=args.runs, warmup=1, capture="dynamo")
        total = sum(r.median_s for r in report.rows)
        root = [r for r in report.rows if not r.module_path]
        share = sum(r.median_s for r in root) / total if total else 0.0
        print(f"\n{name}, {', '.join(loaded.input_desc)}: {len(report.rows)} nodes, {len(root)} at the root")
        print(
            f"  root share of the node time: {100 * share:.1f}% ({sum(r.median_s for r in root) * 1e3:.1f} ms of"
            f" {total * 1e3:.1f} ms)"
        )
        for r in sorted(root, key=lambda r: -r.median_s)[:10]:
            print(f"    {r.median_s * 1e3:8.2f} ms  {r.name}")
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
