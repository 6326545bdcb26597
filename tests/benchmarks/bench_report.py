"""What a report costs at each size: freezing a snapshot into one, writing it as JSON and CSV, loading it back.

    python tests/benchmarks/bench_report.py            # 1,000, 10,000 and 50,000 nodes
    python tests/benchmarks/bench_report.py 10000      # one size

The snapshot is the demo's synthetic graph (a deep module tree) with fixed medians, so the
figures depend only on the code. Each stage runs ``REPEATS`` times in turn with the others
and its median is printed, in milliseconds:

* report: :meth:`ReportData.from_snapshot` (rows with their rates, module rows);
* json / csv: the report as the text ``--json`` / ``--csv`` write;
* load: that JSON text parsed and read back into a report (what ``fxtui diff`` and ``fxtui.load`` do);
* pickled: the report's size pickled, in kB (what it would cost to send).

Run it on two checkouts (``PYTHONPATH=CHECKOUT python tests/benchmarks/bench_report.py``) to compare two
designs of the report; the machine's load is printed at the start and the end.
"""

from __future__ import annotations

import json
import os
import pickle
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from fxtui.report.data import ReportData
from fxtui.report.export import report_csv, report_json
from fxtui.ui.demo.demo_source import make_snapshot, synthetic_graph

REPEATS = 7


def load() -> str:
    return "load " + " ".join(f"{v:.2f}" for v in os.getloadavg())


def timed(stages: dict[str, Callable[[], Any]]) -> dict[str, float]:
    """Each stage's median over REPEATS rounds, the stages interleaved within a round (ms)."""
    samples: dict[str, list[float]] = {name: [] for name in stages}
    for _ in range(REPEATS):
        for name, stage in stages.items():
            start = time.perf_counter()
            stage()
            samples[name].append((time.perf_counter() - start) * 1e3)
    return {name: statistics.median(values) for name, values in samples.items()}


def one_size(n: int) -> None:
    graph, medians = synthetic_graph(n)
    snapshot = make_snapshot(graph, medians)
    report = ReportData.from_snapshot(snapshot)
    text = report_json(report)
    figures = timed(
        {
            "report": lambda: ReportData.from_snapshot(snapshot),
            "json": lambda: report_json(report),
            "csv": lambda: report_csv(report),
            "load": lambda: ReportData.from_dict(json.loads(text)),
        }
    )
    size = len(pickle.dumps(report)) / 1e3
    cells = "  ".join(f"{name} {ms:8.1f} ms" for name, ms in figures.items())
    print(f"{n:>7,} nodes  {cells}  pickled {size:8.0f} kB  json {len(text) / 1e3:8.0f} kB", flush=True)


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [1_000, 10_000, 50_000]
    print(load(), flush=True)
    for n in sizes:
        one_size(n)
    print(load(), flush=True)


if __name__ == "__main__":
    main()
