"""What the live app's drawing costs the engine: disturbed steps per minute, with the app idle and with keys pressed,
against the same engine child with nobody drawing.

    python tests/benchmarks/bench_display.py [MODEL] [SHAPE] [--seconds 60] [--rounds 2]

Three settings, each for ``--seconds`` in a fresh engine child (the real ProcessSource, niced, as
the app starts it), rounds interleaved so that a drift of the machine reaches every setting alike:

* ``headless``: a consumer that only receives the snapshots (nothing draws);
* ``app idle``: the real app (Textual's headless driver, 160×48) applying and painting every snapshot;
* ``app keys``: the same, with a cursor key pressed every 200 ms (Down and Up in turn, a Tab every tenth);
* ``… no wait``: the app idle and with keys, the engine not waiting for the display to draw a snapshot
  before its next step (``LoadProbe.wait_for_display`` off in the child): what drawing between steps buys.

Printed per setting: steps per minute, disturbed steps per minute, the median share of a disturbed
step the display took (``Disturbance.median_display``), and the engine's own sentence about them
(``disturbance.line()``), after the session's warm-up. The
load average before and after says whether other work shared the machine. Reads only the
snapshots, so the same script measures an older fxtui side by side (``PYTHONPATH=<other worktree>``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import threading
import time
from typing import Any

from fxtui.commands.model_engine import ProcessSource
from fxtui.core.settings import ModelSettings, Target, parse_shape
from fxtui.core.snapshot import Snapshot, State
from fxtui.measure.child import ChildOptions
from fxtui.ui.app import FxtuiApp


def _child_without_waiting(*args: Any) -> None:
    """The engine's child, not waiting for the display between steps (runs in the child process)."""
    from fxtui.measure import child, interference

    interference.LoadProbe.wait_for_display = lambda self, *a, **k: 0.0  # type: ignore[method-assign]
    child.child_main(*args)


def _counts(snapshot: Snapshot | None) -> tuple[int, int, str]:
    d = snapshot.disturbance if snapshot is not None else None
    if d is None:
        return 0, 0, ""
    display = getattr(d, "median_display", None)  # (an older fxtui does not tell the display apart)
    said = f"display {100 * display:.1f}% · " if display is not None else ""
    return d.steps, d.disturbed, said + d.line()


class Last:
    """Keeps the latest running snapshot a source published."""

    def __init__(self) -> None:
        self.snapshot: Snapshot | None = None
        self.first: tuple[float, int, int] | None = None
        """(time, steps, disturbed) of the first running snapshot with steps: the start of the measurement."""

    def __call__(self, snapshot: Snapshot) -> None:
        if snapshot.state is not State.RUNNING or snapshot.disturbance is None:
            return
        self.snapshot = snapshot
        steps, disturbed, _ = _counts(snapshot)
        if self.first is None and steps:
            self.first = (time.perf_counter(), steps, disturbed)


def result(last: Last) -> tuple[float, float, str]:
    """Steps per minute, disturbed steps per minute, the sentence."""
    assert last.first is not None and last.snapshot is not None
    t0, s0, d0 = last.first
    steps, disturbed, line = _counts(last.snapshot)
    minutes = (time.perf_counter() - t0) / 60
    return (steps - s0) / minutes, (disturbed - d0) / minutes, line


def headless(target: Target, seconds: float) -> tuple[float, float, str]:
    source = ProcessSource(ChildOptions(ModelSettings(target)))
    last = Last()
    thread = threading.Thread(target=source.run, args=(last,), daemon=True)
    thread.start()
    while last.first is None:
        time.sleep(0.1)
    time.sleep(seconds)
    out = result(last)
    from fxtui.wire.viewer_commands import Stop

    source.send(Stop())
    thread.join(timeout=30)
    return out


async def with_app(target: Target, seconds: float, keys: bool, wait: bool = True) -> tuple[float, float, str]:
    source = ProcessSource(ChildOptions(ModelSettings(target)), child=None if wait else _child_without_waiting)
    source.start()
    last = Last()
    app = FxtuiApp(source)
    original = app._publish

    def publish(snapshot: Snapshot) -> None:
        last(snapshot)
        original(snapshot)

    app._publish = publish  # type: ignore[method-assign]
    async with app.run_test(size=(160, 48)) as pilot:
        while last.first is None:
            await asyncio.sleep(0.1)
        end = time.perf_counter() + seconds
        i = 0
        while time.perf_counter() < end:
            await asyncio.sleep(0.2)
            if keys:
                i += 1
                await pilot.press("tab" if i % 10 == 0 else ("down" if i % 2 else "up"))
        out = result(last)
        await pilot.press("q")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", nargs="?", default="resnet18")
    parser.add_argument("shape", nargs="?", default=None)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    shape = args.shape or ("5,3,224,224" if args.target == "resnet18" else None)
    target = Target(args.target, input_shapes=(parse_shape(shape),) if shape else None)
    print(f"{args.target} {shape or ''}: {args.rounds} rounds of {args.seconds:.0f} s per setting, interleaved")
    print(f"load average {os.getloadavg()[0]:.2f} at the start")
    found: dict[str, list[tuple[float, float, str]]] = {}
    settings: dict[str, Any] = {
        "headless": lambda: headless(target, args.seconds),
        "app idle": lambda: asyncio.run(with_app(target, args.seconds, keys=False)),
        "app keys": lambda: asyncio.run(with_app(target, args.seconds, keys=True)),
        "idle, no wait": lambda: asyncio.run(with_app(target, args.seconds, keys=False, wait=False)),
        "keys, no wait": lambda: asyncio.run(with_app(target, args.seconds, keys=True, wait=False)),
    }
    for r in range(args.rounds):
        for name, run in settings.items():
            steps, disturbed, line = run()
            found.setdefault(name, []).append((steps, disturbed, line))
            print(f"  round {r + 1} {name:<13} {steps:6.1f} steps/min, {disturbed:6.1f} disturbed/min · {line}")
    print("\nmedians over the rounds:")
    for name, values in found.items():
        steps = statistics.median(v[0] for v in values)
        disturbed = statistics.median(v[1] for v in values)
        print(f"  {name:<13} {steps:6.1f} steps/min, {disturbed:6.1f} disturbed/min ({100 * disturbed / steps:.0f}%)")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
