"""Scale benchmark: one job collector fed by hundreds of simulated ranks.

    python tests/benchmarks/bench_collector_scale.py                          # 8, 64, 256, 1024 ranks, 1 min each
    python tests/benchmarks/bench_collector_scale.py --minutes 10 --ranks 256

First a real program (an MLP of ~1,000 ATen ops a training step) runs once under fxtui's agent, and its messages
(its greeting and its steps, sampled ones with every op) are recorded. Then, for each size, one collector process
— the job daemon's own parts: :class:`~fxtui.jobs.launch.ProgramJob`'s socket and its intake thread,
:class:`~fxtui.jobs.job_state.JobState`, a viewer's snapshot every 0.25 s, and every second the report a member
node would send its lead (:mod:`fxtui.jobs.cross_node`) — is fed by torch-free sender processes, each rank one
:class:`~fxtui.agent.sender.Sender` (the agent's own) replaying the recorded steps at 2 steps a second.

Printed per size: the collector's CPU share (of one core; *snap+rep*: the part its main thread spent on snapshots
and the member's reports, the rest is the intake's: the thread that reads every agent) and RSS after the first
minute and at the end (its growth), the bytes per step an agent sends and the bytes per rank and step a member node
sends its lead, the time to build a viewer's snapshot (median and worst), the growth from the third minute (*after
3m*: once the windows filled), how many ranks it compares (all, or a sample), the messages the senders dropped and
whether every message sent was received, how far behind the program the collector took the steps (*behind*: the lag
between a step's end, stamped by its sender, and its intake, as the collector itself reads it:
:mod:`fxtui.jobs.intake_lag`; median over the run, worst, and at the end), the sampled steps whose ops it left out
while behind, the garbage collector's time inside the slowest snapshot and its full collections after the first
minute (how many, the longest in wall time and in the CPU time of the thread it ran in: every thread of the collector
stops for one; at ``nice -n 19`` on a loaded machine the wall time is mostly waiting for a core), the objects the
garbage collector tracks at the end (and how many of them frozen), and the machine's load average beside them.

The collector takes the daemon's policy for its garbage collector (:mod:`fxtui.jobs.collector_gc`); ``--gc python``
leaves CPython's own, ``--gc both`` runs each size with CPython's and then with the collector's, one after the other.
``FXTUI_BENCH_CENSUS=FILE`` writes the collector's tracked objects at the end, by type, to that file
(:func:`census`).

Above 256 ranks the ranks outside the job's sample send their steps as their agents do (:mod:`fxtui.wire.rank_sample`:
unsampled, without ops); ``--all-ops`` makes every rank send its sampled steps' ops, as agents did before.
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import os
import pickle
import statistics
import sys
import tempfile
import textwrap
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

#: The recorded program: ~1,000 ATen ops a training step (forward, backward, SGD).
PROGRAM = """
import torch, torch.nn as nn
torch.set_num_threads(1)
torch.manual_seed(0)
layers = []
for _ in range(55):
    layers += [nn.Linear(32, 32), nn.ReLU()]
net = nn.Sequential(*layers)
opt = torch.optim.SGD(net.parameters(), lr=0.01, foreach=False)
for step in range({steps}):
    opt.zero_grad()
    net(torch.randn(8, 32)).sum().backward()
    opt.step()
"""

STEPS_PER_S = 2.0
SNAPSHOT_EVERY_S = 0.25


def record(path: Path, every: int, steps: int = 40) -> None:
    """Run :data:`PROGRAM` under the agent and keep every message it sends."""
    from fxtui.jobs.launch import ProgramJob
    from fxtui.wire.agent_contract import AgentOptions

    messages: list[object] = []
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "mlp.py"
        script.write_text(textwrap.dedent(PROGRAM.format(steps=steps)))
        job = ProgramJob([str(script)], lambda m, a: messages.append(m), options=AgentOptions(warmup=2, every=every))
        job.start()
        job.wait()
        job.close()
    path.write_bytes(pickle.dumps(messages))


def untimed(steps: list[Any]) -> list[Any]:
    """The recorded steps as the agent of a rank outside a large job's sample sends them
    (:mod:`fxtui.wire.rank_sample`): it never samples, so each sampled step is sent as the unsampled step nearest it
    (its wall time and phases), without ops and without nodes to describe."""
    plain = [i for i, s in enumerate(steps) if not s.sampled]
    out = []
    for i, step in enumerate(steps):
        if step.sampled and plain:
            near = min(plain, key=lambda j: abs(j - i))
            step = dataclasses.replace(steps[near], index=step.index, start_ns=step.start_ns)
        out.append(dataclasses.replace(step, nodes=[], ops=[], sums=None, sampled=False, describing=False, timer=""))
    return out


def load_recorded(path: Path) -> list[object]:
    """The recorded messages, read as a collector reads them (a recording of an fxtui from before ``wire/`` too)."""
    import io

    from fxtui.wire.sockets import Unpickler

    loaded = Unpickler(io.BytesIO(path.read_bytes())).load()
    assert isinstance(loaded, list)
    return loaded


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


class GcPauses:
    """The cyclic garbage collector's pauses in this process (any thread's), by generation: is a slow snapshot one
    that a full collection ran inside?"""

    def __init__(self) -> None:
        import gc

        self.total_s = 0.0
        self.worst_s = [0.0, 0.0, 0.0]
        self.worst_cpu_s = 0.0
        """The longest full pass in its thread's CPU time (the wall time less the waits for a core)."""
        self.count = [0, 0, 0]
        self._began = 0.0
        self._began_cpu = 0.0
        gc.callbacks.append(self._heard)

    def _heard(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began, self._began_cpu = time.perf_counter(), time.thread_time()
            return
        took = time.perf_counter() - self._began
        generation = info.get("generation", 2)
        self.total_s += took
        self.count[generation] += 1
        self.worst_s[generation] = max(self.worst_s[generation], took)
        if generation == 2:
            self.worst_cpu_s = max(self.worst_cpu_s, time.thread_time() - self._began_cpu)


def collector(directory: str, key: bytes, pipe: Connection, gc_policy: str = "collector") -> None:
    """The collector under test: the daemon's receiving and snapshot path, and a member's report to its lead; its
    garbage collector the daemon's (``gc_policy`` "collector") or CPython's own ("python")."""
    import gc

    from fxtui.core.settings import ProgramSettings
    from fxtui.core.snapshot import State
    from fxtui.jobs.cross_node import Packers, _dumps, _local_ranks
    from fxtui.jobs.job_state import JobState
    from fxtui.jobs.launch import ProgramJob
    from fxtui.wire.job_link import NodeReport

    state = JobState(ProgramSettings(("sim.py",), warmup=2))
    job = ProgramJob(("sim.py",), state.receive, directory=Path(directory), key=key)
    job.listen()
    collector_gc: Any = None
    heap_trim: Any = None
    if gc_policy == "collector":  # (imported only here: --gc python runs an fxtui from before it too)
        from fxtui.jobs import collector_gc

        collector_gc.take_over()  # as the daemon does as it starts
        try:
            from fxtui.jobs import heap_trim
        except ImportError:  # an fxtui from before the trims
            heap_trim = None
    pipe.send(job.agent_address)
    tracked = (0, 0)
    """Objects the garbage collector tracks, and how many of them are frozen (counted every 15 s)."""
    walked = 0
    """The most objects a due pass of the collector's policy walked, since the last tick."""
    builds: list[float] = []
    build_gc: list[float] = []
    """The collector's garbage collection during each build (seconds)."""
    pauses = GcPauses()
    report_bytes: list[int] = [0]
    """Bytes of the reports this node would have sent its lead so far."""
    packers = Packers()
    started = time.monotonic()
    cpu0 = os.times()
    last_report = started
    shown = ""
    took = 0.0
    main0 = time.thread_time()
    profile = None
    if os.environ.get("FXTUI_BENCH_PROFILE"):  # the main thread's snapshots and reports, profiled to that file
        import cProfile

        profile = cProfile.Profile()
        profile.enable()
    while not pipe.poll(state.lag.snapshot_every(max(SNAPSHOT_EVERY_S, 2 * took))):  # as the daemon paces them
        t, collected = time.perf_counter(), pauses.total_s
        snapshot = state.snapshot(State.RUNNING)
        took = time.perf_counter() - t
        builds.append(took)
        build_gc.append(pauses.total_s - collected)
        if snapshot.rank_summary is not None:
            comparing = [s for s in snapshot.message.split("; ") if s.startswith("comparing")]
            ranks = snapshot.rank_summary.ranks
            shown = (f"{len(ranks)} ranks in the summary, {sum(r.ops_timed for r in ranks)} with their ops timed"
                     + (f" ({comparing[0]})" if comparing else ""))  # fmt: skip
        now = time.monotonic()
        if now - last_report >= 1.0:  # what this node would send its lead every second
            last_report = now
            with state.lock:
                ranks = _local_ranks(state, packers, False)
            report_bytes.append(report_bytes[-1] + len(_dumps(NodeReport(1, "sim", tuple(ranks)))))
            cpu = os.times()
            with state.lock:
                lag = (state.lag.behind_s, state.lag.worst_s, state.lag.shed)
            if not tracked[0] or int(now - started) % 15 == 0:
                tracked = (len(gc.get_objects()) + gc.get_freeze_count(), gc.get_freeze_count())
            pipe.send(("tick", now - started, cpu.user + cpu.system - cpu0.user - cpu0.system, _rss_mb(),
                       state.received, builds, report_bytes[-1], shown, *lag,
                       time.thread_time() - main0, build_gc, pauses.count[2], pauses.worst_s[2],
                       pauses.worst_cpu_s, tracked, walked))  # fmt: skip
            builds, build_gc, walked = [], [], 0
            pauses.worst_s[2] = pauses.worst_cpu_s = 0.0  # each tick's own worst
        if collector_gc is not None:
            if gc.get_count()[2] >= collector_gc.DUE_AFTER:  # what the due pass walks: the objects not frozen
                walked = max(walked, len(gc.get_objects()))
            if collector_gc.collect_if_due() and heap_trim is not None:  # as the daemon's loop does after its
                heap_trim.trim()  # snapshots, and the heap's free pages given back after a full pass, as it does
    if profile is not None:
        profile.disable()
        profile.dump_stats(os.environ["FXTUI_BENCH_PROFILE"])
    if os.environ.get("FXTUI_BENCH_CENSUS"):  # the objects the garbage collector tracks, by type, to that file
        census(Path(os.environ["FXTUI_BENCH_CENSUS"]))
    job.close()


def census(path: Path) -> None:
    """Write to ``path`` the objects the garbage collector tracks in this process, by type, the snapshot tables'
    columns held as lists of objects, and the commonest type's objects by length; a traceback if that fails."""
    import collections
    import gc
    import traceback

    try:
        objects = gc.get_objects()
        counts = collections.Counter(type(o).__qualname__ for o in objects)
        common = counts.most_common(1)[0][0]
        lengths = collections.Counter(
            len(o) for o in objects if type(o).__qualname__ == common and hasattr(o, "__len__")
        )
        tables = collections.Counter(  # columns of the snapshots' tables held as lists of objects (not arrays)
            f"{o.kind.__name__}.{name}: {type(stored[1][0]).__qualname__ if stored[1] else '-'}"
            for o in objects
            if type(o).__qualname__ == "ColumnTable"
            for name, stored in o.columns.items()
            if stored[0] == "o"
        )
        path.write_text(
            f"tracked {sum(counts.values())}, frozen {gc.get_freeze_count()}\n"
            + "".join(f"{count:>9} tables' column {name}\n" for name, count in tables.most_common(8))
            + "".join(f"{count:>9} {name}\n" for name, count in counts.most_common(40))
            + f"the {common} objects by length:\n"
            + "".join(f"{count:>9} of {length}\n" for length, count in lengths.most_common(10))
        )
    except Exception:
        path.write_text(traceback.format_exc())


class RawSender:
    """A rank's connection written to by its process's one thread (``--raw``): no thread and no pickling a rank, so
    the simulation of 1,024 ranks costs the machine little; a collector that does not read makes the senders late
    (the write waits) instead of dropping."""

    def __init__(self, address: str, key: bytes) -> None:
        from fxtui.wire.agent_contract import connect

        self.connection: Connection | None = connect(address, key, timeout=60)
        self.dropped = 0

    def send(self, message: object) -> None:
        self.send_bytes(pickle.dumps(message))

    def send_bytes(self, data: bytes) -> None:
        if self.connection is None:
            self.dropped += 1
            return
        try:
            self.connection.send_bytes(data)
        except OSError:
            self.connection, self.dropped = None, self.dropped + 1

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()


def senders(
    address: str,
    key: bytes,
    ranks: range,
    world: int,
    messages_path: str,
    seconds: float,
    pipe: Connection,
    raw: bool = False,
    all_ops: bool = False,
) -> None:
    """Ranks ``ranks``, each a Sender (or, ``raw``, a :class:`RawSender`) replaying the recorded steps at
    :data:`STEPS_PER_S`; a rank outside the job's sample as its agent sends them (:func:`untimed`), unless
    ``all_ops`` (every rank's sampled steps with their ops, as agents did before they left them out)."""
    from fxtui.agent.sender import Sender
    from fxtui.wire.agent_messages import Hello, Step
    from fxtui.wire.rank_sample import times_ops

    recorded = load_recorded(Path(messages_path))
    hello = next(m for m in recorded if isinstance(m, Hello))
    hello = dataclasses.replace(hello, torch=str(hello.torch))
    steps = [m for m in recorded if isinstance(m, Step) and m.kind == "train"]
    again = [dataclasses.replace(s, nodes=[], roots=[]) for s in steps]  # a second pass describes nothing anew
    outside, outside_again = untimed(steps), untimed(again)
    timed = {rank: all_ops or times_ops(rank, world) for rank in ranks}
    out: dict[int, Sender | RawSender] = {rank: RawSender(address, key) if raw else Sender(address, key)
                                          for rank in ranks}  # fmt: skip
    for rank, sender in out.items():
        sender.send(dataclasses.replace(hello, pid=10_000_000 + rank, rank=rank, world_size=world))
    start = time.monotonic()
    tick = 0
    late = 0
    sent = 0
    while time.monotonic() - start < seconds:
        pass_, at = divmod(tick, len(steps))
        bases = {True: (steps if pass_ == 0 else again)[at], False: (outside if pass_ == 0 else outside_again)[at]}
        messages = {}
        for ops_timed, base in bases.items():
            # The step as if it had just ended: the collector reads its lag from the clock every process shares.
            message = dataclasses.replace(base, index=tick, start_ns=time.perf_counter_ns() - base.wall_ns)
            messages[ops_timed] = (message, pickle.dumps(message) if raw else b"")
        for rank, sender in out.items():
            message, data = messages[timed[rank]]
            if isinstance(sender, RawSender):
                sender.send_bytes(data)
            else:
                sender.send(message)
            sent += 1
        tick += 1
        wait = start + tick / STEPS_PER_S - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        else:
            late += 1
    for sender in out.values():
        sender.close()
    pipe.send((sent + len(out), sum(s.dropped for s in out.values()), late, tick))


def step_bytes(messages_path: Path) -> tuple[float, float, int]:
    """Bytes an agent sends a step (mean over the recorded cycle), a sampled step's, and ops a sampled step."""
    from fxtui.wire.agent_messages import Step

    steps = [m for m in load_recorded(messages_path) if isinstance(m, Step) and m.kind == "train"]
    again = [dataclasses.replace(s, nodes=[], roots=[]) for s in steps]
    sizes = [len(pickle.dumps(s)) for s in again]
    sampled = [len(pickle.dumps(s)) for s in again if s.sampled]
    ops = max((s.node_sums().ops for s in steps if s.sampled), default=0)
    return statistics.mean(sizes), statistics.mean(sampled) if sampled else 0.0, ops


def run_size(
    ranks: int,
    seconds: float,
    messages: Path,
    processes: int,
    raw: bool = False,
    all_ops: bool = False,
    gc_policy: str = "collector",
) -> dict[str, object]:
    import secrets

    from fxtui.wire.private_dir import private_dir

    ctx = multiprocessing.get_context("spawn")
    key = secrets.token_bytes(32)
    directory = tempfile.mkdtemp(prefix="bench-", dir=private_dir())
    ours, theirs = ctx.Pipe()
    coll = ctx.Process(target=collector, args=(directory, key, theirs, gc_policy), daemon=True)
    coll.start()
    address = ours.recv()
    pipes, procs = [], []
    share = max(1, -(-ranks // processes))
    for first in range(0, ranks, share):
        mine, other = ctx.Pipe()
        mine_ranks = range(first, min(ranks, first + share))
        p = ctx.Process(target=senders, args=(address, key, mine_ranks, ranks, str(messages), seconds, other, raw,
                                              all_ops), daemon=True)  # fmt: skip
        p.start()
        pipes.append(mine)
        procs.append(p)
    ticks = []
    done = []
    for pipe in pipes:  # the collector's ticks read as they come (a full pipe would stall its loop)
        while not pipe.poll(0.5):
            while ours.poll():
                ticks.append(ours.recv())
        done.append(pipe.recv())
    time.sleep(3.0)  # the last messages reach the collector
    while ours.poll():
        ticks.append(ours.recv())
    ours.send("stop")
    coll.join(10)
    for p in procs:
        p.join(5)
    sent = sum(d[0] for d in done)
    dropped = sum(d[1] for d in done)
    late = sum(d[2] for d in done)
    last = ticks[-1]
    after_minute = next((t for t in ticks if t[1] >= min(60.0, seconds / 2)), ticks[0])
    # The windows fill in the first minutes (256 ranks: 64 sampled steps, one in 5 steps at 2 a second: ~3 minutes).
    after_three = next((t for t in ticks if t[1] >= min(180.0, 0.75 * seconds)), ticks[0])
    builds = [b for t in ticks for b in t[5]]
    steady = [b for t in ticks if t[1] >= 10 for b in t[5]] or builds
    steady_gc = [g for t in ticks if t[1] >= 10 for g in t[12]] or [g for t in ticks for g in t[12]]
    worst = max(range(len(steady)), key=steady.__getitem__)
    behind = [t[8] for t in ticks if t[1] >= 10] or [t[8] for t in ticks]
    return {
        "ranks": ranks,
        "cpu": (last[2] - after_minute[2]) / max(1e-9, last[1] - after_minute[1]),
        "main_cpu": (last[11] - after_minute[11]) / max(1e-9, last[1] - after_minute[1]),
        "rss_minute": after_minute[3],
        "rss_end": last[3],
        "rss_three": after_three[3],
        "received": last[4],
        "sent": sent,
        "dropped": dropped,
        "late": late,
        "build_median_ms": 1e3 * statistics.median(steady),
        "build_max_ms": 1e3 * max(steady),
        "report_bytes": (last[6] - after_minute[6]) / max(1e-9, last[1] - after_minute[1]),
        "shown": last[7],
        "behind_median_s": statistics.median(behind),
        "behind_worst_s": last[9],
        "behind_end_s": last[8],
        "shed": last[10],
        "worst_gc_ms": 1e3 * steady_gc[worst] if worst < len(steady_gc) else 0.0,
        "full_gcs": last[13] - after_minute[13],
        "full_gc_worst_ms": 1e3 * max((t[14] for t in ticks if t[1] > after_minute[1]), default=0.0),
        "full_gc_worst_cpu_ms": 1e3 * max((t[15] for t in ticks if t[1] > after_minute[1]), default=0.0),
        "tracked": last[16],
        "gc": gc_policy,
        "behind_every_10s": [t[8] for t in ticks if int(t[1]) % 10 == 0],
        "walked": max((t[17] for t in ticks if t[1] > after_minute[1]), default=0),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=1.0, help="minutes per size (default 1; the goal is stated at 10)")
    p.add_argument("--ranks", type=int, nargs="*", default=[8, 64, 256, 1024])
    p.add_argument(
        "--sample-every",
        type=int,
        default=5,
        help="the recorded program's sampled steps: one in N (5: the densest the agent samples)",
    )
    p.add_argument("--processes", type=int, default=4, help="sender processes")
    p.add_argument(
        "--raw",
        action="store_true",
        help="each sender process writes its ranks' pickled steps itself, not a Sender thread a rank (the simulation "
        "of 1,024 ranks then costs the machine little)",
    )
    p.add_argument("--messages", type=Path, default=None, help="reuse recorded messages (a pickle this wrote)")
    p.add_argument(
        "--all-ops",
        action="store_true",
        help="every rank sends its sampled steps' ops, also those outside a large job's sample (as agents did before "
        "they left them out)",
    )
    p.add_argument(
        "--gc",
        choices=("collector", "python", "both"),
        default="collector",
        help="the collector's garbage collector: the daemon's policy (fxtui.jobs.collector_gc), CPython's own, or "
        "each size with both, CPython's first",
    )
    a = p.parse_args()
    messages = a.messages or Path(tempfile.gettempdir()) / f"fxtui-bench-scale-{a.sample_every}.pickle"
    if not messages.exists():
        print(f"recording the program's messages (one step in {a.sample_every} sampled) …", flush=True)
        record(messages, a.sample_every)
    mean, sampled, ops = step_bytes(messages)
    print(f"recorded: {ops} ops a sampled step; an agent sends {mean / 1e3:.1f} kB a step on average "
          f"({sampled / 1e3:.1f} kB a sampled step), one step in {a.sample_every} sampled")  # fmt: skip
    print(f"{'ranks':>6} {'cpu':>6} {'snap+rep':>8} {'rss@1m':>8} {'rss end':>8} {'growth':>7} {'snap med':>9} "
          f"{'snap max':>9} {'after 3m':>8} {'lead B/rank/step':>16} {'dropped':>8} {'recv/sent':>14} {'late':>5} "
          f"{'behind med/worst/end':>21} {'ops left out':>12} {'gc in worst':>11} "
          f"{'full gcs >1m (longest wall/cpu)':>31} {'tracked (frozen)':>18} {'gc':>9}  load  compared")  # fmt: skip
    policies = ("python", "collector") if a.gc == "both" else (a.gc,)
    for ranks, policy in [(ranks, policy) for ranks in a.ranks for policy in policies]:
        r = run_size(ranks, 60 * a.minutes, messages, a.processes, a.raw, a.all_ops, policy)
        per_rank_step = float(r["report_bytes"]) / ranks / STEPS_PER_S  # type: ignore[arg-type]
        later = float(r["rss_end"]) - float(r["rss_three"])  # type: ignore[arg-type]
        print(f"{ranks:>6} {r['cpu']:>6.2f} {r['main_cpu']:>8.2f} {r['rss_minute']:>7.0f}M {r['rss_end']:>7.0f}M "
              f"{float(r['rss_end']) - float(r['rss_minute']):>+6.0f}M {r['build_median_ms']:>7.0f}ms "
              f"{r['build_max_ms']:>7.0f}ms {later:>+7.0f}M {per_rank_step:>16.0f} {r['dropped']:>8} "
              f"{r['received']:>6}/{r['sent']:<7} {r['late']:>5} "
              f"{r['behind_median_s']:>7.2f}/{r['behind_worst_s']:>6.2f}/{r['behind_end_s']:>5.2f} s "
              f"{r['shed']:>12} {r['worst_gc_ms']:>9.0f}ms {r['full_gcs']:>6} "
              f"({r['full_gc_worst_ms']:>5.0f} / {r['full_gc_worst_cpu_ms']:>4.0f} ms)      "
              f"{r['tracked'][0]:>8} ({r['tracked'][1]:>6}) {r['gc']:>9}  "  # type: ignore[index]
              f"{os.getloadavg()[0]:.1f}  {r['shown']}", flush=True)  # fmt: skip
        trend = " ".join(f"{b:.1f}" for b in r["behind_every_10s"])  # type: ignore[attr-defined]
        print(f"{'':>6} behind, every 10 s (does it grow?): {trend} s; the most objects a due pass walked after the "
              f"first minute: {r['walked']}", flush=True)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
