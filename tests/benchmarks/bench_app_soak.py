"""The whole app over a long session: RSS of the UI process and of the engine's child.

    python tests/benchmarks/bench_app_soak.py --minutes 30          # fxtui resnet18, as a user runs it

Drives the real app (Textual's headless driver, 120×40) over the real child-process
engine, moves the cursor now and then as a user would, and samples the resident set
size of both processes every ``--every`` seconds. Prints the curve and the growth of
each after the warm-up share of the session.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_soak import rss_mb

from fxtui.commands.model_engine import ProcessSource
from fxtui.core.settings import ModelSettings, Target
from fxtui.core.snapshot import State
from fxtui.measure.child import ChildOptions
from fxtui.ui.app import FxtuiApp


async def soak(model: str, minutes: float, every: float, warmup_share: float) -> None:
    source = ProcessSource(ChildOptions(ModelSettings(Target(model))))
    source.start()
    child = source._process.pid
    app = FxtuiApp(source)
    samples: list[tuple[float, float, float, int]] = []
    async with app.run_test(size=(120, 40)) as pilot:
        start = time.monotonic()
        next_sample = start
        keys = ("down", "down", "n", "h", "backspace", "up")
        k = 0
        while (now := time.monotonic()) - start < minutes * 60:
            await pilot.press(keys[k % len(keys)])
            k += 1
            if now >= next_sample:
                snap = app.main.snapshot
                runs = snap.runs if snap is not None and snap.state is State.RUNNING else 0
                samples.append((now - start, rss_mb(), rss_mb(child), runs))
                print(
                    f"  {now - start:7.0f} s   app {samples[-1][1]:7.1f} MB   engine {samples[-1][2]:7.1f} MB"
                    f"   runs in window {runs}",
                    flush=True,
                )
                next_sample += every
            await pilot.pause(0.5)
        await pilot.press("q")
    cut = next(i for i, s in enumerate(samples) if s[0] >= warmup_share * minutes * 60)
    base, last = samples[cut], samples[-1]
    print(
        f"{model}, {minutes:g} min, {k} key presses: growth after warm-up (from {base[0]:.0f} s): "
        f"app {last[1] - base[1]:+.1f} MB, engine {last[2] - base[2]:+.1f} MB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--every", type=float, default=60.0)
    parser.add_argument("--warmup-share", type=float, default=0.1)
    args = parser.parse_args()
    asyncio.run(soak(args.model, args.minutes, args.every, args.warmup_share))


if __name__ == "__main__":
    main()
