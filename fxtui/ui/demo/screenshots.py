"""Save SVG screenshots of the app's main views: ``python -m fxtui.ui.demo.screenshots OUTDIR``.

The app is driven headless with Pilot through the overview, a path filter, a
drill-down along the hottest path, the detail pane, the help screen, the hints
with measured what-ifs, the what-if screen and the threads panel, at 80×24 and 160×48; then the diff
app compares the demo run with its batch norms folded away. Files are named
``<view>-<width>x<height>.svg`` (``diff-80x24.svg`` …), the same on every run.
The source comes from a factory, so the same script can picture a real session;
by default it is the deterministic resnet18 demo with its findings.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from textual.pilot import Pilot

from fxtui.report.diff import RunDiff
from fxtui.ui.app import FxtuiApp
from fxtui.ui.demo.demo_findings import resnet18_diff
from fxtui.ui.demo.demo_session import resnet18_findings_source
from fxtui.ui.diff_app import DiffApp
from fxtui.wire.snapshot_source import SnapshotSource

SourceFactory = Callable[[], SnapshotSource]

SIZES: tuple[tuple[int, int], ...] = ((80, 24), (160, 48))


async def _type(pilot: Pilot[None], text: str) -> None:
    for char in text:
        await pilot.press(char)


async def _overview(pilot: Pilot[None]) -> None:
    """As the app opens: hottest nodes first."""


async def _filter(pilot: Pilot[None]) -> None:
    """A module-path glob: only layer1 and layer2 remain in the tree and the table."""
    await pilot.press("slash")
    await _type(pilot, "layer[12]*")
    await pilot.press("enter")


async def _drilldown(pilot: Pilot[None]) -> None:
    """h three times: the hottest path from the root down to one node."""
    await pilot.press("h", "h", "h")


async def _detail(pilot: Pilot[None]) -> None:
    """The second hotspot selected, the tree revealing it, the detail pane describing it."""
    await pilot.press("n")


async def _help(pilot: Pilot[None]) -> None:
    """Every key."""
    await pilot.press("question_mark")


async def _hints(pilot: Pilot[None]) -> None:
    """The hints, the Conv-BN fold first with its measured change, the what-ifs under the list."""
    await pilot.press("H")


async def _what_ifs(pilot: Pilot[None]) -> None:
    """The what-ifs: channels-last measured, its nodes by change, the max pool first."""
    await pilot.press("w")


async def _threads(pilot: Pilot[None]) -> None:
    """Threads, cores, backend and versions the timings were taken under."""
    await pilot.press("T")


VIEWS: tuple[tuple[str, Callable[[Pilot[None]], Awaitable[None]]], ...] = (
    ("overview", _overview),
    ("filter", _filter),
    ("drilldown", _drilldown),
    ("detail", _detail),
    ("help", _help),
    ("hints", _hints),
    ("what-ifs", _what_ifs),
    ("threads", _threads),
)

#: Every file name :func:`capture` writes for one size, the diff app's last.
VIEW_NAMES: tuple[str, ...] = (*(name for name, _ in VIEWS), "diff")


async def _wait_for_data(app: FxtuiApp, pilot: Pilot[None]) -> None:
    for _ in range(1000):
        if app.main.graph is not None and app.main.snapshot is not None and app.main.snapshot.nodes:
            break
        await pilot.pause(0.01)
    await pilot.pause()


async def capture(
    outdir: Path, factory: SourceFactory = resnet18_findings_source, diff: RunDiff | None = None
) -> list[Path]:
    """Save one SVG per view and size into ``outdir`` (``diff`` defaults to the demo's); returns their paths."""
    outdir.mkdir(parents=True, exist_ok=True)
    saved: list[Path] = []
    for width, height in SIZES:
        for name, drive in VIEWS:
            app = FxtuiApp(factory())
            async with app.run_test(size=(width, height)) as pilot:
                await _wait_for_data(app, pilot)
                await drive(pilot)
                await pilot.pause()
                filename = f"{name}-{width}x{height}.svg"
                app.save_screenshot(filename=filename, path=str(outdir))
                saved.append(outdir / filename)
                await pilot.press("q")
        diff_app = DiffApp(diff or resnet18_diff(), title="fxtui diff before.json after.json")
        async with diff_app.run_test(size=(width, height)) as pilot:
            await pilot.pause()
            filename = f"diff-{width}x{height}.svg"
            diff_app.save_screenshot(filename=filename, path=str(outdir))
            saved.append(outdir / filename)
            await pilot.press("q")
    return saved


def main(argv: list[str] | None = None) -> None:
    """Command line: the output directory."""
    parser = argparse.ArgumentParser(description="Save SVG screenshots of the fxtui app (demo data).")
    parser.add_argument("outdir", type=Path)
    args = parser.parse_args(argv)
    for path in asyncio.run(capture(args.outdir)):
        print(path)


if __name__ == "__main__":
    main()
