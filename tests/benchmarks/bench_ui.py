"""UI benchmark: what one refresh costs the event loop, and how fast keys take effect, with no engine.

    python tests/benchmarks/bench_ui.py                        # deep and sequential graphs, 10,000 and 50,000 nodes
    python tests/benchmarks/bench_ui.py deep:10000 sequential:50000 [--presses 10] [--profile ui.prof]

Drives the real app headless (160×48) with a fake source whose snapshots are sent as a
live session's child sends them (statistics as columns, pickled and unpickled), for two
graph shapes: ``deep`` (stages of blocks of eight nodes, a tree four levels deep) and
``sequential`` (an ``nn.Sequential`` of N layers: N entries under the root, the issue's
case). For each it prints:

* refresh cost, event-loop CPU: the handler (applying a snapshot: sort, tree totals,
  status, detail) and handler + the repaint it causes, over refreshes whose medians all
  change; at the root with the tree collapsed, with the table scrolled, with a path filter;
* key press → effect painted (wall clock) while a thread publishes a snapshot every
  250 ms, p50 / p95 / worst per key type (the keys of bench_keys_live.py, which runs the
  same presses against the real engine).

The machine's other load inflates wall-clock figures: compare runs made back to back.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import dataclasses
import gc
import pickle
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ui"))

from fakes import FakeSource
from textual import events

from fxtui.core.filters import FilterSpec
from fxtui.core.snapshot import GraphInfo, Snapshot
from fxtui.ui.app import FxtuiApp
from fxtui.ui.demo.demo_source import build_graph, make_snapshot, synthetic_graph
from fxtui.ui.widgets.module_tree import Entry
from fxtui.wire.snapshot_packing import Packer, Unpacker

REFRESHES = 10


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def percentiles(values: list[float]) -> str:
    return f"p50 {ms(statistics.median(values)):>9}  p95 {ms(p95(values)):>9}  worst {ms(max(values)):>9}"


class PaintMeter:
    """Times the screen's repaints: layout and compositor refreshes, as the update timer runs them.

    Pilot's own waits sleep in 20 ms steps until the process looks idle, so timing
    ``pilot.press`` would measure the harness; this records when paints really start
    and end (wall clock), and the CPU time the event-loop thread spent in them.
    """

    def __init__(self, screen: Any) -> None:
        self.gc_s = 0.0
        """Seconds the garbage collector has run since the meter was made (any thread)."""
        self._gc_start = 0.0
        gc.callbacks.append(self._gc_tick)
        self.paints: list[tuple[float, float, float, float]] = []
        """(wall start, wall end, thread CPU seconds, thread CPU clock at the end) of each outermost repaint."""
        self.marks: list[float] = []
        self._depth = 0
        for name in ("_refresh_layout", "_compositor_refresh"):
            setattr(screen, name, self._timed(getattr(screen, name)))

    def _gc_tick(self, phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_start = time.perf_counter()
        else:
            self.gc_s += time.perf_counter() - self._gc_start

    def _timed(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self._depth += 1
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                return method(*args, **kwargs)
            finally:
                self._depth -= 1
                if self._depth == 0:  # a layout pass runs a compositor refresh inside: count it once
                    c1 = time.thread_time()
                    self.paints.append((t0, time.perf_counter(), c1 - c0, c1))

        return wrapper

    def mark(self, method: Callable[..., Any]) -> Callable[..., Any]:
        """Wrap a handler so its return time is recorded (the moment the effect exists)."""

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return method(*args, **kwargs)
            finally:
                self.marks.append(time.perf_counter())

        return wrapper

    async def paint_after(self, t: float, timeout: float = 5.0) -> tuple[float, float, float, float]:
        """Wait for the first repaint that starts after ``t``."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            for paint in self.paints:
                if paint[0] >= t:
                    return paint
            await asyncio.sleep(0.001)
        raise TimeoutError("no repaint")

    async def press(self, app: FxtuiApp, key: str, char: str | None) -> tuple[float, float, float] | None:
        """Post a key: (seconds until the repaint after the last handler it caused ended, event-loop CPU seconds
        meanwhile, garbage-collector seconds meanwhile); None when nothing handled it. A key whose handlers
        change nothing on screen is timed to the next repaint, whatever causes it: press only keys that show
        something.

        The CPU time is what the app spent before the key showed (its handler, the repaint, and
        any snapshot applied in between); the wall time adds the waits for a core, which on a
        machine shared with other work can be most of it.
        """
        self.marks.clear()
        t0, c0, gc0 = time.perf_counter(), time.thread_time(), self.gc_s
        app.post_message(events.Key(key, char))
        while not self.marks and time.perf_counter() - t0 < 3:
            await asyncio.sleep(0.001)
        if not self.marks:
            return None
        while True:  # a key's handler may post messages whose handlers run later: wait for the last
            start, end, _cpu, cpu_end = await self.paint_after(self.marks[-1])
            await asyncio.sleep(0.003)
            if self.marks[-1] <= start:
                return end - t0, cpu_end - c0, self.gc_s - gc0


async def press_keys(app: FxtuiApp, meter: PaintMeter, presses: int) -> dict[str, list[tuple[float, float, float]]]:
    """Press each kind of key ``presses`` times (filter keys half as often); (wall, CPU, GC) seconds per kind."""
    main = app.main
    for name in ("select_node", "set_scope", "action_toggle_detail", "_refilter", "set_focus"):
        setattr(main, name, meter.mark(getattr(main, name)))
    table, tree, prompt = main.table, main.module_tree, main.filter_input
    table.sort_by = meter.mark(table.sort_by)  # type: ignore[method-assign]
    for name in ("action_cursor_down", "action_cursor_up", "action_select_cursor"):
        setattr(tree, name, meter.mark(getattr(tree, name)))
    prompt.insert_text_at_cursor = meter.mark(prompt.insert_text_at_cursor)  # type: ignore[method-assign]
    prompt.open = meter.mark(prompt.open)  # type: ignore[method-assign]
    graph = main.graph
    assert graph is not None
    module = next((p for p in graph.modules if p and tree.folded_node(p) is None), None)
    latencies: dict[str, list[tuple[float, float, float]]] = {}

    async def press(label: str, key: str, char: str | None = None) -> None:
        await asyncio.sleep(0.05)
        latency = await meter.press(app, key, char)
        if latency is not None:
            latencies.setdefault(label, []).append(latency)

    for i in range(presses):
        table.focus()
        await press("down", "down")
        await press("pagedown", "pagedown")
        await press("n", "n", "n")
        await press("s (sort)", "s", "s")
        await press("d (detail)", "d", "d")
        await press("h/backspace", "h" if i % 2 == 0 else "backspace", "h" if i % 2 == 0 else None)
        tree.focus()
        await asyncio.sleep(0.05)
        await press("tree down", "down")
        await press("tree up", "up")
        await press("tab (tree → table)", "tab")
        await press("shift+tab (→ tree)", "shift+tab")
        if module is not None and i % 4 == 0:
            main.set_scope("", reveal=False)  # so that Enter changes the view (a key that shows nothing has no paint)
            tree.reveal(Entry("module", module))
            await asyncio.sleep(0.05)
            await press("tree enter (module)", "enter")
        table.focus()
        await asyncio.sleep(0.05)
        if i % 2 == 0:
            digit = str(i // 2 % 9 + 1)  # a filter not applied before: nothing of it is kept yet
            await press("/ (open filter)", "slash", "/")
            await press("filter: type a char", digit, digit)
            await press("filter: enter", "enter")
            await press("esc (clear filter)", "escape")
    return latencies


def print_latencies(latencies: dict[str, list[tuple[float, float, float]]]) -> None:
    """Wall-clock p50 / p95 / worst per kind of key, the event loop's CPU time p50 / p95, and the garbage
    collector's part: its time during the slowest press of the kind, and its most during any."""
    print(f"    {'':<22} {'wall clock':^48}   {'event-loop CPU':^30}   {'GC: slowest / most':^20}")
    everything = [v for values in latencies.values() for v in values]
    for key, values in [*latencies.items(), ("all keys", everything)]:
        wall, cpu = [w for w, _, _ in values], [c for _, c, _ in values]
        cpu_text = f"p50 {ms(statistics.median(cpu)):>9}  p95 {ms(p95(cpu)):>9}"
        slowest = max(values)[2]
        gc_text = f"{ms(slowest):>9} / {ms(max(g for _, _, g in values)):>9}"
        print(f"    {key:<22} {percentiles(wall)}   {cpu_text}   {gc_text}  (n={len(values)})")


def sequential_graph(layers: int) -> tuple[GraphInfo, list[float]]:
    """``nn.Sequential`` of ``layers`` ReLUs as torch.fx traces it: one module and one node per layer."""
    rows = [("input_1", "placeholder", "input", "input", "", "1×8", 0.4)]
    rows += [(f"_{i}", "call_module", "ReLU", "ReLU", str(i), "1×8", 5.0 + (i * 37) % 17) for i in range(layers)]
    rows.append(("output", "output", "output", "output", "", "1×8", 0.3))
    return build_graph(rows, model=f"sequential{layers}", inputs=("1×8",)), [row[6] for row in rows]


_PACKER, _UNPACKER = Packer(), Unpacker()


def as_sent(snapshot: Snapshot) -> Snapshot:
    """``snapshot`` as the app receives it from the engine's child process (ProcessSource.run)."""
    wire = pickle.loads(pickle.dumps(_PACKER.pack(dataclasses.replace(snapshot, graph=None)), protocol=5))
    return dataclasses.replace(_UNPACKER.unpack(wire), graph=snapshot.graph)


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
        _start, _end, paint_cpu, _clock = await meter.paint_after(t1)
        handler_s.append(handler)
        total_s.append(handler + paint_cpu)
    return handler_s, total_s


async def bench(shape: str, n_nodes: int, presses: int, profile: str | None) -> None:
    graph, medians = sequential_graph(n_nodes - 2) if shape == "sequential" else synthetic_graph(n_nodes)
    first = as_sent(make_snapshot(graph, medians))

    def snapshot(i: int) -> Snapshot:
        # Every median changes each time, differently per node, so the order and every number change.
        changed = [m * (1.0 + 0.3 * (((k * 7 + i) % 11) / 11)) for k, m in enumerate(medians)]
        return as_sent(make_snapshot(graph, changed, seq=i + 2))

    source = FakeSource([first])
    app = FxtuiApp(source)
    async with app.run_test(size=(160, 48)) as pilot:
        while not app.main.applied:
            await pilot.pause(0.01)
        await pilot.pause()
        main = app.main
        meter = PaintMeter(main)
        print(f"\n{shape} {len(graph.nodes)} nodes ({len(graph.modules)} modules), 160×48")
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
        await pilot.press("down", "right", "down", "right")  # open the first branches
        main.table.focus()
        await pilot.press("pagedown", "pagedown")
        line("branches open, table scrolled", await refreshes(app, meter, snapshot))
        main.spec = FilterSpec(ops=main.spec.ops, path="*1*")
        await pilot.pause()
        line("path filter *1*", await refreshes(app, meter, snapshot))
        c0 = time.thread_time()
        main.spec = FilterSpec(ops=main.spec.ops)
        print(f"  clearing the filter (the tree and the view anew): handler {ms(time.thread_time() - c0)}")
        await pilot.pause()

        # Key latency under load: a thread publishes a snapshot every 250 ms meanwhile. The snapshots
        # are made beforehand: making one in Python here would hold the GIL and measure this script.
        live = [snapshot(100 + i) for i in range(6)]
        stop = threading.Event()

        def publisher() -> None:
            i = 0
            while not stop.wait(0.25):
                source.push(live[i % len(live)])
                i += 1

        thread = threading.Thread(target=publisher, daemon=True)
        thread.start()
        profiler = cProfile.Profile() if profile else None
        try:
            if profiler:
                profiler.enable()
            latencies = await press_keys(app, meter, presses)
        finally:
            if profiler:
                profiler.disable()
                profiler.dump_stats(profile)
            stop.set()
            thread.join()
        print("  key press → effect painted (wall clock), while snapshots arrive every 250 ms:")
        print_latencies(latencies)
        await pilot.press("q")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cases", nargs="*", help="SHAPE:NODES, SHAPE deep or sequential")
    parser.add_argument("--presses", type=int, default=10, help="rounds of key presses (default 10)")
    parser.add_argument("--profile", metavar="FILE", help="cProfile the event loop while keys are pressed")
    args = parser.parse_args()
    cases = args.cases or ["deep:10000", "sequential:10000", "deep:50000", "sequential:50000"]
    for case in cases:
        shape, _, nodes = case.partition(":")
        asyncio.run(bench(shape, int(nodes), args.presses, args.profile))


if __name__ == "__main__":
    main()
