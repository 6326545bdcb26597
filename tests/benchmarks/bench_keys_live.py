"""Key latency and refresh cost while a real model reruns in the engine's child process.

    python tests/benchmarks/bench_keys_live.py                       # resnet18 5×3×224×224
    python tests/benchmarks/bench_keys_live.py MODEL [SHAPE]         # any TARGET the command takes
    python tests/benchmarks/bench_keys_live.py --sequential 10000    # the issue's case: nn.Sequential of N ReLUs
    python tests/benchmarks/bench_keys_live.py --deep 50000          # bench_scale.py's residual stack
    ... [--presses 20] [--profile keys.prof]

Drives the real app (headless driver, 160×48) over the real child-process engine and prints:

* start → first timings painted: from starting the child until the first repaint that
  shows a snapshot with per-node statistics (the app's own start-up is not included);
* key press → effect painted (wall clock), p50 / p95 / worst per key type: table cursor
  (down, PgDn), next hotspot (n), sort (s), the detail pane (d), the tree's cursor,
  Enter on a module (when there is one), the path filter (/ opens it, a character,
  Enter applies it, Esc clears it), h / Backspace. The effect is "painted" when the
  first repaint starting after the last handler the key ran has finished
  (``PaintMeter``, bench_ui.py). Snapshots keep arriving meanwhile; the app holds them
  back while keys come (``fxtui.ui.pacing``), and the header says how many it showed
  and how many a newer one replaced while held;
* refresh cost per snapshot while no key is pressed: the app process's CPU (all
  threads: receiving and unpickling in the worker, applying, repainting) divided by the
  snapshots applied, and the parts: receive + unpickle (worker thread), apply (handler),
  and snapshots per second.

With ``--profile FILE`` the event-loop thread is profiled with cProfile while the keys
are pressed (open with ``python -m pstats FILE``).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ui import PaintMeter, ms, p95, press_keys, print_latencies

from fxtui.commands.model_engine import ProcessSource
from fxtui.core.settings import ModelSettings, Target, parse_shape
from fxtui.core.snapshot import State
from fxtui.measure.child import ChildOptions
from fxtui.ui.app import FxtuiApp

FACTORIES = {
    "sequential": """
import torch
from torch import nn


def make():
    return nn.Sequential(*(nn.ReLU() for _ in range({nodes}))).eval(), (torch.randn(1, 8),)
""",
    "deep": """
import sys
sys.path.insert(0, {here!r})
import torch
from bench_scale import WIDTH, deep_model


def make():
    return deep_model({nodes}), torch.randn(1, WIDTH)
""",
}


class ReceiveMeter:
    """Wraps the pipe the worker thread reads snapshots from: thread CPU spent receiving and unpickling."""

    def __init__(self, connection: Any) -> None:
        self._connection = connection
        self.cpu: list[float] = []

    def recv(self) -> Any:
        c0 = time.thread_time()
        try:
            return self._connection.recv()
        finally:
            self.cpu.append(time.thread_time() - c0)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


async def bench(target: Target, presses: int, profile: str | None, quiet_s: float) -> None:
    t_start = time.perf_counter()
    source = ProcessSource(ChildOptions(ModelSettings(target)))
    source.start()
    receive = ReceiveMeter(source._receive)
    source._receive = receive  # type: ignore[assignment]
    app = FxtuiApp(source)
    async with app.run_test(size=(160, 48)) as pilot:
        main = app.main
        meter = PaintMeter(main)
        first_timings: float | None = None
        graph_shown: float | None = None
        while True:
            snap = main.snapshot
            if graph_shown is None and snap is not None and snap.graph is not None:
                graph_shown = time.perf_counter() - t_start
            if first_timings is None and snap is not None and snap.nodes and snap.graph is not None:
                t_applied = time.perf_counter()
                _s, end, _c, _clock = await meter.paint_after(t_applied, timeout=30)
                first_timings = end - t_start
            if snap is not None and snap.state is State.RUNNING and snap.runs >= 3 and first_timings is not None:
                break
            if snap is not None and snap.state is State.ERROR:
                raise RuntimeError(snap.message)
            if time.perf_counter() - t_start > 600:
                raise TimeoutError("the session did not start running")
            await asyncio.sleep(0.05)
        graph = main.graph
        assert graph is not None and snap is not None
        print(
            f"{target.target} ({len(graph.nodes)} nodes, {len(graph.modules)} modules): graph shown after"
            f" {graph_shown:.1f} s, first timings painted after {first_timings:.1f} s;"
            f" run median {(snap.run_median_s or 0) * 1e3:.1f} ms"
        )
        await pilot.pause(1.0)

        # Refresh cost with no key pressed: everything the app process spends per snapshot.
        applied = main.keys_first.show  # what shows each snapshot (held back while keys come)
        handler_cpu: list[float] = []

        def timed_apply(snapshot):  # type: ignore[no-untyped-def]
            c0 = time.thread_time()
            try:
                return applied(snapshot)
            finally:
                handler_cpu.append(time.thread_time() - c0)

        main.keys_first.show = timed_apply
        n0, r0, c0, w0 = main.applied, len(receive.cpu), time.process_time(), time.perf_counter()
        await asyncio.sleep(quiet_s)
        while main.applied - n0 < 3 and time.perf_counter() - w0 < 180:  # large graphs publish seldom
            await asyncio.sleep(0.1)
        n1, r1, c1, w1 = main.applied, len(receive.cpu), time.process_time(), time.perf_counter()
        snapshots = max(n1 - n0, 1)
        print(
            f"  refresh, {n1 - n0} snapshots in {w1 - w0:.1f} s with no key pressed:"
            f" app process CPU {ms((c1 - c0) / snapshots)} per snapshot ({100 * (c1 - c0) / (w1 - w0):.0f}% of a core);"
            f" receive+unpickle median {ms(statistics.median(receive.cpu[r0:r1] or [0.0]))},"
            f" apply median {ms(statistics.median(handler_cpu or [0.0]))}"
            f" p95 {ms(p95(handler_cpu or [0.0]))}"
        )

        profiler = cProfile.Profile() if profile else None
        superseded = main.keys_first.superseded
        if profiler:
            profiler.enable()
        latencies = await press_keys(app, meter, presses)
        if profiler:
            profiler.disable()
            profiler.dump_stats(profile)
            print(f"  profile of the key phase written to {profile}")
        runs = main.snapshot.runs if main.snapshot else 0
        held = main.keys_first.superseded - superseded
        print(
            f"  key press → effect painted, {main.applied - n1} snapshots applied meanwhile"
            f" ({held} more replaced while held back for keys), {runs} runs done by now:"
        )
        print_latencies(latencies)
        await pilot.press("q")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("target", nargs="?", default="resnet18")
    parser.add_argument("shape", nargs="?", default=None)
    parser.add_argument("--sequential", type=int, metavar="N", help="an nn.Sequential of N ReLUs (N + 2 nodes)")
    parser.add_argument("--deep", type=int, metavar="N", help="bench_scale.py's residual stack of about N nodes")
    parser.add_argument("--presses", type=int, default=20, help="rounds of key presses (default 20)")
    parser.add_argument("--quiet", type=float, default=10.0, help="seconds of refreshes measured without keys")
    parser.add_argument("--profile", metavar="FILE", help="cProfile the event loop while keys are pressed")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fxtui-keys-") as tmp:
        if args.sequential or args.deep:
            kind, nodes = ("sequential", args.sequential) if args.sequential else ("deep", args.deep)
            path = Path(tmp) / f"{kind}{nodes}.py"
            path.write_text(FACTORIES[kind].format(nodes=nodes, here=str(Path(__file__).parent)))
            target = Target(f"{path}:make")
        else:
            shape = args.shape or ("5,3,224,224" if args.target == "resnet18" else None)
            target = Target(args.target, input_shapes=(parse_shape(shape),) if shape else None)
        asyncio.run(bench(target, args.presses, args.profile, args.quiet))


if __name__ == "__main__":
    main()
