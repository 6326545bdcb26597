"""Does the live app distort what it measures? Headless figures against live ones, side by side.

    python tests/benchmarks/bench_live.py [MODEL] [SECONDS]    # default resnet18, 40 s per live round

Three ways of measuring the same model, interleaved (headless, live with the engine
in a child process, live with the engine in a thread of the app's process), each
twice. The live rounds drive the real app (Textual's headless driver renders every
refresh) and keep the last snapshot the app received. For each live round the
script prints the run median against the headless one, and per node the median
ratio (median and spread over nodes that take at least 0.5% of the run) and the
Spearman rank correlation.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Callable

from fxtui.commands.model_engine import ProcessSource
from fxtui.core.settings import ModelSettings, Target
from fxtui.core.snapshot import Snapshot, State
from fxtui.measure.child import ChildOptions
from fxtui.measure.live import LiveSource
from fxtui.measure.pipeline import run_profile, session_for_target
from fxtui.ui.app import FxtuiApp
from fxtui.wire.snapshot_source import SnapshotSource


class Recording:
    """Wraps a source and keeps the latest running snapshot it publishes."""

    def __init__(self, source: SnapshotSource) -> None:
        self.source = source
        self.last: Snapshot | None = None

    def run(self, publish: Callable[[Snapshot], None]) -> None:
        def keep(s: Snapshot) -> None:
            if s.state is State.RUNNING and s.nodes:
                self.last = s
            publish(s)

        self.source.run(keep)

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.source, name)


def headless(target: Target, runs: int) -> Snapshot:
    session = session_for_target(target, analyse=False)
    run_profile(session, runs, warmup=3)
    return session.snapshot()


async def live(source: SnapshotSource, seconds: float) -> Snapshot:
    if isinstance(source, ProcessSource):
        source.start()  # as the command does: before the app replaces sys.stderr
    recording = Recording(source)
    app = FxtuiApp(recording)  # type: ignore[arg-type]
    async with app.run_test(size=(160, 48)) as pilot:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            await pilot.pause(0.5)
            await pilot.press("j")  # a user moving through the table keeps the screen busy
    assert recording.last is not None, "the live session published nothing"
    return recording.last


def compare(label: str, base: Snapshot, other: Snapshot) -> None:
    names = [n for n, s in base.nodes.items() if s.pct >= 0.5 and n in other.nodes]
    ratios = [other.nodes[n].median_s / base.nodes[n].median_s for n in names]
    rho = spearman([base.nodes[n].median_s for n in names], [other.nodes[n].median_s for n in names])
    q = statistics.quantiles(ratios, n=10)
    print(
        f"  {label:<34} runs {other.runs:>4}  run median ×{other.run_median_s / base.run_median_s:.3f}  "
        f"node medians ×{statistics.median(ratios):.3f} (p10 {q[0]:.3f}, p90 {q[-1]:.3f})  Spearman {rho:.3f}"
    )


def spearman(a: list[float], b: list[float]) -> float:
    def ranks(v: list[float]) -> list[int]:
        order = sorted(range(len(v)), key=v.__getitem__)
        r = [0] * len(v)
        for rank, i in enumerate(order):
            r[i] = rank
        return r

    ra, rb = ranks(a), ranks(b)
    n = len(a)
    return 1 - 6 * sum((x - y) ** 2 for x, y in zip(ra, rb, strict=True)) / (n * (n * n - 1))


def main() -> None:
    model = sys.argv[1] if len(sys.argv) > 1 else "resnet18"
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 40.0
    target = Target(model)
    print(f"== live against headless: {model}, {seconds:.0f} s per live round, rounds interleaved")
    for round_ in range(2):
        base = headless(target, runs=60)
        print(f" round {round_ + 1}: headless run median {base.run_median_s * 1e3:.2f} ms over {base.runs} runs")
        process = asyncio.run(live(ProcessSource(ChildOptions(ModelSettings(target))), seconds))
        compare("live, engine in a child process", base, process)
        thread = asyncio.run(live(LiveSource(lambda progress: session_for_target(target, progress)), seconds))
        compare("live, engine in an app thread", base, thread)


if __name__ == "__main__":
    main()
