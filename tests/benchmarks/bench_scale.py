"""Scale benchmark: what a graph of 1,000 or 10,000 nodes costs at each stage of a session.

    python tests/benchmarks/bench_scale.py               # 1,000 and 10,000 nodes, each in its own process
    python tests/benchmarks/bench_scale.py 10000         # one size, in this process

The model is a deep stack of residual blocks (``x + relu(linear(x))``: three nodes
per block, ten blocks per stage, so the module tree is three levels deep), the
shape of a long transformer as far as fxtui is concerned. Each size runs in a fresh
process so that one size's memory does not count against the other's. Printed:

* trace: ``trace_model`` (torch.fx plus fxtui's module paths);
* session: building the :class:`Session` (compiling the timing plan, calibrating the
  clock, the check run, the graph description);
* analysis: ``annotate`` (FLOPs and bytes per node, source lines, machine peaks);
* per run: one ``Session.run_pair`` (a profiled and an uninstrumented run), and the
  profiler's overhead per node (profiled minus uninstrumented, over the node count);
* snapshot: freezing the statistics (``Session.snapshot``), after a few runs and with the
  window full (its quantiles sort every sample kept), and what one costs on the
  live app's pipe: turned into columns and pickled in the child, unpickled in the app
  (without the graph, as the child sends it; also as objects, as it was sent before),
  and the graph once;
* report: the headless table (top 20 and all rows) and the JSON export;
* memory: resident set size after each stage, and its peak;
* command: ``fxtui FILE:make --once --runs 3`` end to end on the same model, in a
  fresh process (load, trace, analyse, profile, print, export).

The UI's cost per refresh at these sizes is ``tests/benchmarks/bench_ui.py``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import torch
from torch import nn

from fxtui.measure.capture.fx import trace_model
from fxtui.measure.explain import annotate
from fxtui.measure.pipeline import make_report
from fxtui.measure.session import Session
from fxtui.wire.snapshot_packing import Packer, Unpacker

SIZES = (1_000, 10_000)
WIDTH = 32
RUNS = 10

T = TypeVar("T")


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.relu(self.lin(x))


def deep_model(nodes: int) -> nn.Module:
    """About ``nodes`` FX nodes: stages of ten three-node blocks."""
    blocks = max(1, (nodes - 2) // 3)
    stages = [nn.Sequential(*(Block() for _ in range(min(10, blocks - i)))) for i in range(0, blocks, 10)]
    return nn.Sequential(*stages).eval()


def rss_mb() -> float:
    """Resident set size now, in MB (Linux /proc)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3  # kB on Linux


def timed(fn: Callable[[], T], repeat: int = 1) -> tuple[float, T]:
    """Median wall seconds of ``repeat`` calls, and the last result."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def line(what: str, text: str) -> None:
    print(f"{what:22}{text}")


def bench(nodes: int) -> None:
    torch.manual_seed(0)
    memory = [("start (torch imported)", rss_mb())]
    model = deep_model(nodes)
    x = torch.randn(1, WIDTH)
    memory.append(("model built", rss_mb()))

    trace_s, traced = timed(lambda: trace_model(model, name=f"deep{nodes}"))
    memory.append(("traced", rss_mb()))
    count = len(traced.gm.graph.nodes)

    def build() -> Session:
        return Session(
            traced.gm,
            (x,),
            model=f"deep{count}",
            module_paths=traced.module_paths,
            module_classes=traced.module_classes,
        )

    session_s, session = timed(build)
    memory.append(("session built", rss_mb()))
    annotate_s, _ = timed(lambda: annotate(session))
    memory.append(("analysed", rss_mb()))

    session.warm_up(2)
    step_s, _ = timed(session.step, RUNS)
    memory.append((f"{RUNS + 2} runs", rss_mb()))

    snapshot_s, snap = timed(session.snapshot, 5)
    profiled = snap.run_median_s or 0.0
    eager = snap.eager_median_s or 0.0
    wire = dataclasses.replace(snap, graph=None)
    packer, unpacker = Packer(), Unpacker()
    unpacker.unpack(packer.pack(wire))  # the names cross once
    columns_s, columns = timed(lambda: packer.pack(wire), 5)  # as the live app's child sends it
    pickle_s, blob = timed(lambda: pickle.dumps(columns, protocol=pickle.HIGHEST_PROTOCOL), 5)
    unpickle_s, _ = timed(lambda: unpacker.unpack(pickle.loads(blob)), 5)
    objects_s, objects = timed(lambda: pickle.dumps(wire, protocol=pickle.HIGHEST_PROTOCOL))
    unobjects_s, _ = timed(lambda: pickle.loads(objects))
    graph_pickle_s, graph_blob = timed(lambda: pickle.dumps(session.graph, protocol=pickle.HIGHEST_PROTOCOL))

    report_s, report = timed(lambda: make_report(session, timeline=False))
    table_s, _ = timed(lambda: report.table(top=20), 3)
    table_all_s, _ = timed(lambda: report.table(top=None))
    json_s, text = timed(report.to_json)
    memory.append(("snapshots and report", rss_mb()))
    while session.samples.count < session.samples.window:  # as in a live session that has run a while
        session.run_pair()
    full_s, _ = timed(session.snapshot, 7)

    print(
        f"\n== {count} nodes ({len(session.graph.modules)} modules on the tree, window {session.samples.window} runs)"
    )
    line("trace", f"{ms(trace_s)}")
    line("session setup", f"{ms(session_s)}   (plan, clock calibration, check run, graph description)")
    line("analysis (annotate)", f"{ms(annotate_s)}   (FLOPs, bytes, source lines, machine peaks)")
    line("per run (step)", f"{ms(step_s)}   (profiled {ms(profiled)} + uninstrumented {ms(eager)})")
    per_node_ns = (profiled - eager) / count * 1e9
    line("profiler overhead", f"{per_node_ns:.0f} ns per node   (profiled / uninstrumented {profiled / eager:.2f})")
    line("snapshot", f"{ms(snapshot_s)} after {RUNS + 2} runs, {ms(full_s)} with the window full")
    line(
        "snapshot on the pipe",
        f"{ms(columns_s)} to columns, {ms(pickle_s)} pickle, {ms(unpickle_s)} unpickle (in the app), "
        f"{len(blob) / 1e6:.2f} MB;  as objects {ms(objects_s)} pickle, {ms(unobjects_s)} unpickle",
    )
    line("graph on the pipe", f"{ms(graph_pickle_s)} pickle (once per session), {len(graph_blob) / 1e6:.2f} MB")
    line("report", f"{ms(report_s)} make_report, table {ms(table_s)} (top 20), {ms(table_all_s)} (all rows)")
    line("JSON export", f"{ms(json_s)}   {len(text) / 1e6:.1f} MB")
    line("memory (RSS)", ",  ".join(f"{what} {mb:.0f} MB" for what, mb in memory))
    line("memory peak", f"{peak_rss_mb():.0f} MB")


FACTORY = """
import sys
sys.path.insert(0, {here!r})
import torch
from bench_scale import WIDTH, deep_model


def make():
    return deep_model({nodes}), torch.randn(1, WIDTH)
"""


def bench_command(nodes: int) -> None:
    """Run the command end to end on the deep model, as a user would."""
    with tempfile.TemporaryDirectory(prefix="fxtui-scale-") as tmp:
        model = Path(tmp) / "deep.py"
        model.write_text(FACTORY.format(here=str(Path(__file__).parent), nodes=nodes))
        out_json = Path(tmp) / "deep.json"
        cmd = [sys.executable, "-m", "fxtui", f"{model}:make", "--once", "--runs", "3", "--warmup", "1"]
        t0 = time.perf_counter()
        proc = subprocess.run([*cmd, "--top", "5", "--json", str(out_json)], capture_output=True, text=True)
        took = time.perf_counter() - t0
        rows = len(json.loads(out_json.read_text())["rows"]) if proc.returncode == 0 else 0
    status = "ok" if proc.returncode == 0 else f"exit {proc.returncode}: {proc.stderr.strip()[-200:]}"
    line("command end to end", f"{took:.1f} s   ({status}, {rows} rows exported)")


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]]
    if len(sizes) == 1:
        torch.set_num_threads(min(2, torch.get_num_threads()))
        bench(sizes[0])
        bench_command(sizes[0])
        return
    for size in sizes or SIZES:
        subprocess.run([sys.executable, __file__, str(size)], check=True)


if __name__ == "__main__":
    main()
