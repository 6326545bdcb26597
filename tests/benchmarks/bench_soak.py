"""Soak benchmark: a long live session on a small model, its memory sampled as it runs.

    python tests/benchmarks/bench_soak.py                   # 3 minutes, in-process LiveSource
    python tests/benchmarks/bench_soak.py --minutes 60      # the full hour
    python tests/benchmarks/bench_soak.py --process         # the live app's child process instead

The session is the live app's loop: :class:`~fxtui.measure.live.LiveSource`
rerunning the model and publishing a snapshot every 0.3 s to a callback that keeps
only the last one (as the app does once it has drawn it), or, with ``--process``,
:class:`~fxtui.commands.model_engine.ProcessSource` with the model in a child process. Now
and then (``--ask-every``) the soak asks what a user would: the aten breakdown of a
node, the hints, a statistics reset.

Printed: resident set size every ``--every`` seconds (of the process running the
model), the growth after the warm-up (the first ``--warmup-share`` of the run),
and the statistics window, which must stay the same size however long it runs.
Target: at most 10 MB of growth after warm-up over an hour.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import threading
import time
from collections.abc import Callable

from fxtui.core.settings import ModelSettings, Target
from fxtui.core.snapshot import Snapshot, State
from fxtui.wire.viewer_commands import Explain, RequestHints, Reset, Stop


def rss_mb(pid: int | None = None) -> float:
    """Resident set size of ``pid`` (default: this process) in MB, from /proc."""
    with open(f"/proc/{pid or 'self'}/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


class Last:
    """A publish callback that keeps only the newest snapshot, and counts them."""

    def __init__(self) -> None:
        self.snapshot: Snapshot | None = None
        self.count = 0

    def __call__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.count += 1


def soak(
    source: object,
    measure: Callable[[], float],
    seconds: float,
    every: float,
    warmup_share: float,
    ask_every: float | None,
) -> None:
    """Run ``source`` (a SnapshotSource) for ``seconds``, printing ``measure()`` every ``every`` seconds.

    Every ``ask_every`` seconds (the first time early in the warm-up, so one-off costs
    land there) it asks for a node's aten breakdown and for hints; every fifth time
    it also resets the statistics.
    """
    last = Last()
    worker = threading.Thread(target=source.run, args=(last,), daemon=True)  # type: ignore[attr-defined]
    worker.start()
    while last.snapshot is None or last.snapshot.state not in (State.RUNNING, State.ERROR):
        time.sleep(0.1)
    if last.snapshot.state is State.ERROR:
        raise SystemExit(f"the session failed: {last.snapshot.message}")

    started = time.monotonic()
    curve: list[tuple[float, float, int]] = []
    asks = 0
    next_ask = min(5.0, seconds * warmup_share / 2) if ask_every else float("inf")
    print(f"{'t':>7}  {'RSS':>9}  {'runs':>7}  snapshots")
    while (now := time.monotonic() - started) < seconds:
        snap = last.snapshot
        runs = snap.runs if snap else 0
        curve.append((now, measure(), runs))
        print(f"{now:6.0f}s  {curve[-1][1]:7.1f} MB  {runs:7d}  {last.count}", flush=True)
        while now >= next_ask and snap and snap.graph and ask_every:
            asks += 1
            next_ask += ask_every
            source.send(Explain(snap.graph.nodes[len(snap.graph.nodes) // 2].name))
            source.send(RequestHints())
            if asks % 5 == 0:
                source.send(Reset())
        time.sleep(max(0.0, min(every, next_ask - now) - (time.monotonic() - started - now)))
    curve.append((time.monotonic() - started, measure(), last.snapshot.runs if last.snapshot else 0))
    source.send(Stop())
    worker.join(timeout=30)
    if asks:
        print(f"\nasked for an aten breakdown and hints {asks} times")

    after = [c for c in curve if c[0] >= seconds * warmup_share]
    base = after[0][1]
    print(
        f"\n{curve[-1][2]} runs in the window's count at the end, {last.count} snapshots published in {seconds:.0f} s"
    )
    print(f"RSS after warm-up ({after[0][0]:.0f} s): {base:.1f} MB; at the end: {curve[-1][1]:.1f} MB")
    print(
        f"growth after warm-up: {curve[-1][1] - base:+.1f} MB "
        f"(max {max(c[1] for c in after) - base:+.1f} MB, min {min(c[1] for c in after) - base:+.1f} MB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=3.0, help="length of the soak (default 3)")
    parser.add_argument("--every", type=float, default=10.0, help="seconds between RSS samples (default 10)")
    parser.add_argument("--warmup-share", type=float, default=0.2, help="share of the run that is warm-up (0.2)")
    parser.add_argument("--model", default="resnet18", help="model to run (default resnet18)")
    parser.add_argument("--input-shape", default="1,3,64,64", help="its input shape (default 1,3,64,64)")
    parser.add_argument("--process", action="store_true", help="run the model in the live app's child process")
    parser.add_argument(
        "--ask-every", type=float, default=60.0, help="seconds between explain/hints requests (0: never; default 60)"
    )
    args = parser.parse_args()

    shape = tuple(int(s) for s in args.input_shape.split(","))
    target = Target(args.model, input_shapes=(shape,))
    seconds = args.minutes * 60
    where = "child process" if args.process else "in process"
    print(f"soak: {args.model} {args.input_shape}, {args.minutes:g} min, {where}")
    if args.process:
        from fxtui.commands.model_engine import ProcessSource
        from fxtui.measure.child import ChildOptions

        source = ProcessSource(ChildOptions(ModelSettings(target)))
        source.start()
        (child,) = multiprocessing.active_children()
        soak(source, lambda: rss_mb(child.pid), seconds, args.every, args.warmup_share, args.ask_every or None)
        print(f"(this process, receiving the snapshots: {rss_mb():.1f} MB)")
        return

    from fxtui.measure.live import LiveSource
    from fxtui.measure.pipeline import session_for_target

    live = LiveSource(lambda progress: session_for_target(target, progress))
    soak(live, rss_mb, seconds, args.every, args.warmup_share, args.ask_every or None)
    if live.session is not None:
        samples = live.session.samples
        print(
            f"statistics window: {samples.window} runs x {samples.nodes} nodes "
            f"({samples._buf.numel() * samples._buf.element_size() / 1e6:.2f} MB, fixed at start)"
        )


if __name__ == "__main__":
    main()
