"""UI benchmark: prints what one refresh costs the event loop, and how fast keys take effect.

    python tests/benchmarks/bench_ui.py              # 1,000 and 10,000 nodes (about a minute)
    python tests/benchmarks/bench_ui.py 1000         # one size

For each graph size it drives the real app headless (160×48) with a synthetic deep
graph and reports, over a series of refreshes whose medians all change:

* handler: the synchronous part of applying a snapshot (sorting, tree totals, status,
  detail) — the time the event loop is blocked by the message handler;
* handler+paint: the same plus the layout and compositor work of the repaint it causes;

in three views: the root with the tree collapsed, with a branch of the tree
expanded and the table scrolled, and with a path filter. Then it measures key
latency (key event posted → the repaint showing its effect has finished) while a thread
publishes snapshots every 250 ms, as a live session does. Targets: refresh ≤ 50 ms
at 1,000 nodes and ≤ 250 ms at 10,000; keys ≤ 100 ms at p95.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ui"))

from fakes import FakeSource, synthetic_snapshot
from textual import events

from fxtui.engine.snapshot import Snapshot
from fxtui.ui.app import FxtuiApp
from fxtui.ui.filtering import FilterSpec

REFRESHES = 15
KEYS = 30


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


class PaintMeter:
    """Times the screen's repaints: layout and compositor refreshes, as the update timer runs them.

    Pilot's own waits sleep in 20 ms steps until the process looks idle, so timing
    ``pilot.press`` would measure the harness; this records when paints really start
    and end (wall clock), and the CPU time the event-loop thread spent in them, which
    is what a busy shared machine does not inflate.
    """

    def __init__(self, screen) -> None:
        self.paints: list[tuple[float, float, float]] = []
        """(wall start, wall end, thread CPU seconds) of each outermost repaint."""
        self.marks: list[float] = []
        self._depth = 0
        for name in ("_refresh_layout", "_compositor_refresh"):
            setattr(screen, name, self._timed(getattr(screen, name)))

    def _timed(self, method):
        def wrapper(*args, **kwargs):
            self._depth += 1
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                return method(*args, **kwargs)
            finally:
                self._depth -= 1
                if self._depth == 0:  # a layout pass runs a compositor refresh inside: count it once
                    self.paints.append((t0, time.perf_counter(), time.thread_time() - c0))

        return wrapper

    def mark(self, method):
        """Wrap a handler so its return time is recorded (the moment the effect exists)."""

        def wrapper(*args, **kwargs):
            try:
                return method(*args, **kwargs)
            finally:
                self.marks.append(time.perf_counter())

        return wrapper

    async def paint_after(self, t: float, timeout: float = 2.0) -> tuple[float, float, float]:
        """Wait for the first repaint that starts after ``t``."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            for paint in self.paints:
                if paint[0] >= t:
                    return paint
            await asyncio.sleep(0.001)
        raise TimeoutError("no repaint")

    async def press(self, app: FxtuiApp, key: str, char: str | None) -> float | None:
        """Post a key and return the seconds until the repaint after its handler; None if nothing handled it."""
        self.marks.clear()
        t0 = time.perf_counter()
        app.post_message(events.Key(key, char))
        while not self.marks and time.perf_counter() - t0 < 2:
            await asyncio.sleep(0.001)
        if not self.marks:
            return None
        _start, end, _cpu = await self.paint_after(self.marks[-1])
        return end - t0


async def refreshes(
    app: FxtuiApp, meter: PaintMeter, snapshots: Callable[[int], Snapshot]
) -> tuple[list[float], list[float]]:
    """CPU cost to the event loop of each refresh: the handler (apply), then the repaint it causes."""
    handler_s, total_s = [], []
    for i in range(REFRESHES):
        snapshot = snapshots(i)
        await asyncio.sleep(0.05)
        c0 = time.thread_time()
        app.main.apply_snapshot(snapshot)
        handler = time.thread_time() - c0
        t1 = time.perf_counter()
        _start, _end, paint_cpu = await meter.paint_after(t1)
        handler_s.append(handler)
        total_s.append(handler + paint_cpu)
    return handler_s, total_s


async def bench(n_nodes: int) -> None:
    first = synthetic_snapshot(n_nodes)
    graph = first.graph
    assert graph is not None

    def snapshot(i: int) -> Snapshot:
        # Every median changes each time, so the sort order and every visible number change.
        return synthetic_snapshot(n_nodes, seq=i + 2, scale=1.0 + 0.01 * ((i * 7) % 13), graph=graph)

    source = FakeSource([first])
    app = FxtuiApp(source)
    async with app.run_test(size=(160, 48)) as pilot:
        while not app.main.applied:
            await pilot.pause(0.01)
        await pilot.pause()
        main = app.main
        meter = PaintMeter(main)
        print(f"\n{n_nodes} nodes ({len(graph.modules)} modules), 160×48")
        print("  refresh cost, event-loop CPU time:")
        print(f"  {'view':<34}{'handler median':>16}{'p95':>10}{'handler+paint median':>22}{'p95':>10}")

        def line(view: str, result: tuple[list[float], list[float]]) -> None:
            a, t = result
            print(
                f"  {view:<34}{ms(statistics.median(a)):>16}{ms(p95(a)):>10}"
                f"{ms(statistics.median(t)):>22}{ms(p95(t)):>10}"
            )

        line("root, tree collapsed", await refreshes(app, meter, snapshot))
        main.module_tree.focus()
        await pilot.press("down", "right", "down", "right")  # open stage0 and its first block
        main.table.focus()
        await pilot.press("pagedown", "pagedown")
        line("branch expanded, table scrolled", await refreshes(app, meter, snapshot))
        main.spec = FilterSpec(ops=main.spec.ops, path="stage[02]*")
        await pilot.pause()
        line("path filter stage[02]*", await refreshes(app, meter, snapshot))
        c0 = time.thread_time()
        main.spec = FilterSpec(ops=main.spec.ops)
        print(f"  clearing the filter (rebuilds the tree and the view): handler {ms(time.thread_time() - c0)}")
        await pilot.pause()

        # Key latency under load: a thread publishes a snapshot every 250 ms meanwhile.
        main.select_node = meter.mark(main.select_node)  # type: ignore[method-assign]
        main.set_scope = meter.mark(main.set_scope)  # type: ignore[method-assign]
        stop = threading.Event()

        # Built beforehand: building a 10,000-node snapshot in Python would hold the GIL and
        # measure this script rather than the app. (A live session's thread competes for the GIL too.)
        live = [snapshot(100 + i) for i in range(8)]

        def publisher() -> None:
            i = 0
            while not stop.wait(0.25):
                source.push(live[i % len(live)])
                i += 1

        thread = threading.Thread(target=publisher, daemon=True)
        thread.start()
        keys = {"down": ("down", None), "n": ("n", "n"), "h": ("h", "h"), "backspace": ("backspace", None)}
        latencies: dict[str, list[float]] = {k: [] for k in keys}
        try:
            for i in range(KEYS):
                for label in ("down", "n", "h" if i % 2 == 0 else "backspace"):
                    key, char = keys[label]
                    await asyncio.sleep(0.03)
                    latency = await meter.press(app, key, char)
                    if latency is not None:
                        latencies[label].append(latency)
        finally:
            stop.set()
            thread.join()
        print("  key press → effect painted (wall clock), while snapshots arrive every 250 ms:")
        for key, values in latencies.items():
            if values:
                median, high = ms(statistics.median(values)), ms(p95(values))
                print(f"    {key:<10} median {median:>9}  p95 {high:>9}  (n={len(values)})")
        await pilot.press("q")


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [1000, 10000]
    for n in sizes:
        asyncio.run(bench(n))


if __name__ == "__main__":
    main()
