"""Key latency while a real model reruns: the issue's condition, resnet18 at 5×3×224×224.

    python tests/benchmarks/bench_keys_live.py [MODEL] [SHAPE]     # default resnet18 5,3,224,224

Drives the real app (headless driver, 160×48) over the real child-process engine,
waits until it is running, then presses keys and measures key event → the repaint
showing the effect has finished (wall clock), with ``PaintMeter`` from
bench_ui.py. Also prints the refresh cost (handler + paint, event-loop CPU) of
the live snapshots that arrived meanwhile.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ui import PaintMeter, ms, p95

from fxtui.engine.remote import ChildOptions, ProcessSource
from fxtui.engine.snapshot import State
from fxtui.engine.target import Target
from fxtui.ui.app import FxtuiApp

PRESSES = 40


async def bench(model: str, shape: tuple[int, ...]) -> None:
    source = ProcessSource(ChildOptions(Target(model, input_shapes=(shape,))))
    source.start()
    app = FxtuiApp(source)
    async with app.run_test(size=(160, 48)) as pilot:
        main = app.main
        started = time.monotonic()
        while True:
            snap = main.snapshot
            if snap is not None and snap.state is State.RUNNING and snap.runs >= 3:
                break
            if time.monotonic() - started > 300:
                raise TimeoutError("the session did not start running")
            await pilot.pause(0.2)
        print(
            f"{model} {'×'.join(map(str, shape))}: running after {time.monotonic() - started:.1f} s "
            f"(run median {snap.run_median_s * 1e3:.1f} ms)"
        )
        meter = PaintMeter(main)
        main.select_node = meter.mark(main.select_node)  # type: ignore[method-assign]
        main.set_scope = meter.mark(main.set_scope)  # type: ignore[method-assign]
        applied = main.apply_snapshot
        refresh_cpu: list[float] = []

        def timed_apply(snapshot):  # type: ignore[no-untyped-def]
            c0 = time.thread_time()
            try:
                return applied(snapshot)
            finally:
                refresh_cpu.append(time.thread_time() - c0)

        main.apply_snapshot = timed_apply  # type: ignore[method-assign]
        latencies: dict[str, list[float]] = {"down": [], "n": [], "h/backspace": []}
        for i in range(PRESSES):
            for label, key, char in (
                ("down", "down", None),
                ("n", "n", "n"),
                ("h/backspace", "h" if i % 2 == 0 else "backspace", None),
            ):
                await asyncio.sleep(0.05)
                latency = await meter.press(app, key, char or ("h" if key == "h" else None))
                if latency is not None:
                    latencies[label].append(latency)
        runs = main.snapshot.runs if main.snapshot else 0
        print(f"  key press → effect painted, {PRESSES} presses per key, {runs} runs done meanwhile:")
        everything = [v for values in latencies.values() for v in values]
        for key, values in latencies.items():
            if values:
                print(f"    {key:<12} median {ms(statistics.median(values)):>9}  p95 {ms(p95(values)):>9}")
        print(f"    {'all keys':<12} median {ms(statistics.median(everything)):>9}  p95 {ms(p95(everything)):>9}")
        if refresh_cpu:
            print(
                f"  live refreshes: {len(refresh_cpu)}, handler CPU median {ms(statistics.median(refresh_cpu))}"
                f" p95 {ms(p95(refresh_cpu))}"
            )
        await pilot.press("q")


if __name__ == "__main__":
    model = sys.argv[1] if len(sys.argv) > 1 else "resnet18"
    shape = tuple(int(d) for d in (sys.argv[2] if len(sys.argv) > 2 else "5,3,224,224").split(","))
    asyncio.run(bench(model, shape))
