"""Was the machine disturbed while a program ran: the collector's once-a-second sample of /proc (fxtui/jobs)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from fxtui.jobs.machine_load import DISTURBED_SHARE, MachineLoad

pytestmark = pytest.mark.e2e

TICK = 100  # the fake kernel's clock ticks per second (os.sysconf("SC_CLK_TCK") is 100 on Linux)


class FakeProc:
    """A /proc of a few files: the machine's counters, and processes with threads, written as a test says."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "self" / "task").mkdir(parents=True)
        self.machine(busy_s=0.0)

    def machine(self, busy_s: float, steal_s: float = 0.0) -> None:
        """The machine's busy and stolen CPU-seconds so far (all CPUs)."""
        user, steal = round(busy_s * TICK), round(steal_s * TICK)
        (self.root / "stat").write_text(f"cpu  {user} 0 0 1000000 0 0 0 {steal} 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n")

    def process(self, pid: int, parent: int, threads: dict[int, tuple[float, float]], name: str = "python") -> None:
        """Process ``pid`` under ``parent``; each thread's time on a CPU and run-queue wait so far, seconds."""
        directory = self.root / str(pid)
        (directory / "task").mkdir(parents=True, exist_ok=True)
        cpu = round(sum(on for on, _ in threads.values()) * TICK)
        rest = " ".join(["0"] * 40)
        # The name may hold spaces and parentheses: fields are read after its last ")".
        (directory / "stat").write_text(f"{pid} ({name}) S {parent} 1 1 0 -1 0 0 0 0 0 {cpu} 0 {rest}\n")
        for tid, (on_cpu, waiting) in threads.items():
            (directory / "task" / str(tid)).mkdir(exist_ok=True)
            schedstat = directory / "task" / str(tid) / "schedstat"
            schedstat.write_text(f"{round(on_cpu * 1e9)} {round(waiting * 1e9)} 5\n")


@pytest.fixture
def proc(tmp_path: Path) -> FakeProc:
    return FakeProc(tmp_path / "proc")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def monitor(proc: FakeProc, clock: Clock, pids: tuple[int, ...] = (10,), **kwargs: object) -> MachineLoad:
    return MachineLoad(pids, proc=proc.root, own_pid=99, clock=clock, cpus=2, **kwargs)  # type: ignore[arg-type]


def test_a_quiet_second_is_not_disturbed(proc: FakeProc) -> None:
    clock = Clock()
    proc.process(10, 1, {10: (5.0, 0.1)})
    load = monitor(proc, clock)
    assert load.sample() is None  # the first reading only starts the count
    clock.now += 1.0
    proc.process(10, 1, {10: (6.0, 0.1)})  # a whole core, no wait
    proc.machine(busy_s=1.0)
    interval = load.sample()
    assert interval is not None
    assert interval.program_cpu_s == pytest.approx(1.0) and interval.wait_s == pytest.approx(0.0)
    assert interval.others_cpu_s == pytest.approx(0.0, abs=0.02)
    assert not interval.disturbed
    summary = load.summary()
    assert summary.known and not summary.disturbed and summary.line() == ""


def test_other_processes_that_take_the_cores_disturb_the_program(proc: FakeProc) -> None:
    clock = Clock()
    proc.process(10, 1, {10: (0.0, 0.0)})
    load = monitor(proc, clock)
    load.sample()
    clock.now += 1.0
    # The program ran half the second and waited the other half while other processes used 1.5 cores.
    proc.process(10, 1, {10: (0.5, 0.5)})
    proc.machine(busy_s=2.0)
    interval = load.sample()
    assert interval is not None
    assert interval.others_cpu_s == pytest.approx(1.5, abs=0.02)
    assert interval.lost_share == pytest.approx(0.5) and interval.disturbed
    summary = load.summary()
    assert summary.disturbed and summary.affects_figures
    assert summary.others_cores == pytest.approx(1.5, abs=0.02) and summary.program_cores == pytest.approx(0.5)
    line = summary.line()
    assert line.startswith("other processes took 50% of its time (median; worst 50%) in 1 of 1 s")
    assert "they used 1.5 of 2 cores, the program 0.5" in line and "slower than on a quiet machine" in line


def test_the_programs_threads_waiting_for_one_another_is_not_a_disturbance(proc: FakeProc) -> None:
    clock = Clock()
    proc.process(10, 1, {10: (0.0, 0.0), 11: (0.0, 0.0), 12: (0.0, 0.0)})
    load = monitor(proc, clock)
    load.sample()
    clock.now += 1.0
    # Three busy threads on two cores: each ran two thirds of the second and waited a third; nobody else ran.
    proc.process(10, 1, {10: (2 / 3, 1 / 3), 11: (2 / 3, 1 / 3), 12: (2 / 3, 1 / 3)})
    proc.machine(busy_s=2.0)
    interval = load.sample()
    assert interval is not None
    assert interval.wait_s == pytest.approx(1.0)
    assert interval.lost_share == pytest.approx(0.0, abs=0.01) and not interval.disturbed
    assert interval.own_share == pytest.approx(1 / 3, abs=0.01)


def test_stolen_time_disturbs_the_program_and_names_the_hypervisor(proc: FakeProc) -> None:
    clock = Clock()
    proc.process(10, 1, {10: (0.0, 0.0)})
    load = monitor(proc, clock)
    load.sample()
    clock.now += 1.0
    proc.process(10, 1, {10: (0.7, 0.0)})
    proc.machine(busy_s=0.7, steal_s=0.6)  # 0.3 s of each of the two CPUs went to another machine
    interval = load.sample()
    assert interval is not None and interval.steal_s == pytest.approx(0.3)
    assert interval.lost_share == pytest.approx(0.3) and interval.disturbed
    assert "other processes or the hypervisor took 30%" in load.summary().line()


def test_children_of_the_program_are_its_own_and_other_processes_are_not(proc: FakeProc) -> None:
    clock = Clock()
    proc.process(10, 1, {10: (0.0, 0.0)})
    proc.process(20, 10, {20: (0.0, 0.0)}, name="pt_data (worker) 0")  # a DataLoader worker
    proc.process(30, 1, {30: (0.0, 0.0)})  # somebody else's
    load = monitor(proc, clock)
    load.sample()
    clock.now += 1.0
    proc.process(10, 1, {10: (0.5, 0.0)})
    proc.process(20, 10, {20: (0.5, 0.0)}, name="pt_data (worker) 0")
    proc.process(30, 1, {30: (1.0, 0.0)})
    proc.machine(busy_s=2.0)
    interval = load.sample()
    assert interval is not None
    assert interval.program_cpu_s == pytest.approx(1.0)  # the program and its worker
    assert interval.others_cpu_s == pytest.approx(1.0, abs=0.02)  # the other process
    without = monitor(proc, clock, descendants=False)
    without.sample()
    clock.now += 1.0
    proc.process(10, 1, {10: (1.0, 0.0)})
    proc.process(20, 10, {20: (1.0, 0.0)}, name="pt_data (worker) 0")
    proc.machine(busy_s=3.0)
    alone = without.sample()
    assert alone is not None and alone.program_cpu_s == pytest.approx(0.5)


def test_a_process_seen_late_counts_from_its_next_interval(proc: FakeProc) -> None:
    clock = Clock()
    proc.process(10, 1, {10: (0.0, 0.0)})
    ranks = [10]
    load = MachineLoad(lambda: ranks, proc=proc.root, own_pid=99, clock=clock, cpus=2)
    load.sample()
    clock.now += 1.0
    proc.process(10, 1, {10: (1.0, 0.0)})
    proc.process(40, 1, {40: (50.0, 20.0)})  # a rank that connects now, with its history
    ranks.append(40)
    proc.machine(busy_s=2.0)
    interval = load.sample()
    assert interval is not None and interval.program_cpu_s == pytest.approx(1.0)  # not its 50 s of history


def test_a_steps_share_comes_from_the_intervals_it_overlaps(proc: FakeProc) -> None:
    clock = Clock()
    proc.process(10, 1, {10: (0.0, 0.0)})
    load = monitor(proc, clock)
    load.sample()
    busy = 0.0
    for on_cpu, waiting, others in ((1.0, 0.0, 0.0), (0.5, 0.5, 1.0)):  # a quiet second, then a disturbed one
        clock.now += 1.0
        total_cpu, total_wait = proc_totals(proc)
        proc.process(10, 1, {10: (total_cpu + on_cpu, total_wait + waiting)})
        busy += on_cpu + others
        proc.machine(busy_s=busy)
        load.sample()
    assert load.lost_during(100.2, 100.8) == pytest.approx(0.0)  # inside the quiet second
    assert load.lost_during(101.5, 101.9) == pytest.approx(0.5)  # inside the disturbed one
    assert load.lost_during(100.5, 101.5) == pytest.approx(0.25)  # half of each
    assert load.lost_during(200.0, 201.0) is None  # never sampled


def proc_totals(proc: FakeProc) -> tuple[float, float]:
    on_cpu, waiting = (proc.root / "10" / "task" / "10" / "schedstat").read_text().split()[:2]
    return int(on_cpu) / 1e9, int(waiting) / 1e9


def test_without_the_kernels_counters_nothing_is_called_disturbed(tmp_path: Path) -> None:
    empty = tmp_path / "proc"
    empty.mkdir()
    clock = Clock()
    load = MachineLoad((10,), proc=empty, own_pid=99, clock=clock, cpus=2)
    load.sample()
    clock.now += 1.0
    interval = load.sample()
    assert interval is not None and interval.program_cpu_s is None and not interval.disturbed
    assert not load.summary().known and load.summary().line() == ""


def test_the_threshold_is_the_model_modes() -> None:
    from fxtui.measure.interference import DISTURBED_SHARE as MODEL_MODE

    assert DISTURBED_SHARE == MODEL_MODE


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
def test_a_real_busy_program_is_seen_on_a_cpu() -> None:
    busy = subprocess.Popen([sys.executable, "-c", "import sys\nwhile True: pass"])
    try:
        load = MachineLoad((busy.pid,))
        load.sample()
        deadline = time.monotonic() + 30
        seen = 0.0
        while seen <= 0 and time.monotonic() < deadline:
            time.sleep(0.2)
            interval = load.sample()
            seen += (interval.program_cpu_s or 0.0) if interval else 0.0
        assert seen > 0
        summary = load.summary()
        assert summary.known and summary.program_cores > 0 and summary.intervals >= 1
    finally:
        busy.kill()
        busy.wait()


def test_the_collectors_loop_puts_a_disturbed_machine_in_the_programs_header(
    proc: FakeProc, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``fxtui run``: the collector's loop samples the load (JobState.watch_load), and the header says it."""
    from fxtui.core.settings import ProgramSettings
    from fxtui.jobs import job_state
    from fxtui.report.api import Report
    from fxtui.report.program_text import program_lines

    clock = Clock()
    monkeypatch.setattr(job_state, "LOAD_EVERY_S", 0.0)
    monkeypatch.setattr(job_state, "MachineLoad", lambda pids, own_pid: monitor(proc, clock, tuple(pids)))
    state = job_state.JobState(ProgramSettings(("train.py",)))
    state.collector.started(10, "")
    proc.process(10, 1, {10: (0.0, 0.0)})
    state.watch_load()
    assert state.snapshot().program.disturbance == ""  # one reading: nothing to say yet
    clock.now += 1.0
    proc.process(10, 1, {10: (0.5, 0.5)})
    proc.machine(busy_s=2.0)
    state.watch_load()
    lines = program_lines(Report.from_snapshot(state.snapshot()))
    said = [line for line in lines if line.startswith("disturbed  ")]
    assert said and "other processes took 50% of its time" in said[0]


def test_hogwild_workers_contending_for_the_cores_are_the_programs_own_not_other_processes(proc: FakeProc) -> None:
    """mnist_hogwild: the main process waits in join() while its two spawned workers train; the spawn start method's
    resource tracker idles beside them. Each worker waits for a core its sibling holds: the job's own contention."""
    clock = Clock()
    proc.process(10, 1, {10: (0.0, 0.0)})
    proc.process(11, 10, {11: (0.0, 0.0)}, name="python -c from multiprocessing.resource_tracker")
    for worker in (12, 13):
        proc.process(worker, 10, {worker: (0.0, 0.0)})
    load = monitor(proc, clock)
    load.sample()
    clock.now += 1.0
    proc.process(10, 1, {10: (0.01, 0.0)})
    for worker in (12, 13):  # three busy threads in all on two cores: each worker waits for the other's
        proc.process(worker, 10, {worker: (0.99, 0.5)})
    proc.machine(busy_s=2.0)
    interval = load.sample()
    assert interval is not None and interval.program_cpu_s == pytest.approx(1.99)
    assert interval.others_cpu_s == pytest.approx(0.0, abs=0.02) and not interval.disturbed
    assert load.summary().line() == ""


def test_the_collector_counts_the_wait_of_a_process_s_pool_threads_in_its_steps(
    proc: FakeProc, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch's intra-op pool: its thread waited for a CPU beside the stepping thread's own wait; the header's waiting
    share counts the time some thread of the step waited (fxtui/jobs/thread_waits.py)."""
    from fxtui.core.settings import ProgramSettings
    from fxtui.jobs import job_state
    from fxtui.wire.agent_messages import Hello, Step

    clock = Clock()
    monkeypatch.setattr(job_state, "LOAD_EVERY_S", 0.0)
    monkeypatch.setattr(job_state, "MachineLoad", lambda pids, own_pid: monitor(proc, clock, tuple(pids)))
    state = job_state.JobState(ProgramSettings(("train.py",), warmup=0))
    state.collector.started(10, "")
    state.receive(Hello(10, ("train.py",), "2.x", 2), 0)  # torch's 2 intra-op threads: thread 11 is its pool's
    proc.process(10, 1, {10: (0.0, 0.0), 11: (0.0, 0.0)})
    state.watch_load()
    wall = 100_000_000
    for i in range(10):  # steps in the sampled second, each whose main thread waited 10% of it
        start = int(clock.now * 1e9) + i * wall
        state.receive(Step(i, "train", wall, (0, 0, 0, 0, wall), False, False, start_ns=start, wait_ns=wall // 10), 0)
    clock.now += 1.0
    proc.process(10, 1, {10: (0.5, 0.1), 11: (0.3, 0.3)})  # its pool thread waited 0.3 s of the second
    proc.machine(busy_s=2.0)
    state.watch_load()
    steps = state.snapshot().steps
    assert steps is not None
    waiting = next(k for k in steps.kinds if k.kind == "train").waiting
    assert waiting is not None and waiting.wait is not None
    assert waiting.wait.median == pytest.approx(1 - 0.9 * 0.7)  # its own 10%, its pool's 30%: some thread waited
