"""What many test modules share: running the CLI in this process, model sources written for ``fxtui MODEL`` to load,
and toy models. A test module imports from here, never from another test module (``tests/ui/fakes.py`` is the
app's counterpart: fake snapshot sources and the pilot's helpers).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

from fxtui.measure.pipeline import loaded_from_module, session_for_module
from fxtui.measure.session import Session


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``fxtui ARGS`` run by :func:`fxtui.commands.cli.main` in this process: its status, stdout and stderr."""
    from fxtui.commands.cli import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def write_source(directory: Path, name: str, source: str) -> Path:
    """``source`` (dedented) written to ``directory/name``, for ``fxtui name:make`` to load."""
    path = directory / name
    path.write_text(textwrap.dedent(source))
    return path


def slow_model_source(started_at: int, sleep_s: float, then_sleep_s: float | None = None) -> str:
    """A model source whose ``make()`` gives ``Slow``: a linear layer after a traced-through ``slow`` call that sleeps
    ``sleep_s`` each call, touches a file ``started`` beside the source at call ``started_at`` (the test waits for
    it: the program is that far into its runs), and sleeps ``then_sleep_s`` each call from then on (time for a
    signal to arrive inside a run)."""
    then = sleep_s if then_sleep_s is None else then_sleep_s
    return f"""
import itertools
import time
from pathlib import Path

import torch
from torch import nn

calls = itertools.count()


@torch.fx.wrap
def slow(x):
    n = next(calls)
    if n == {started_at}:
        Path(__file__).with_name("started").touch()
    time.sleep({sleep_s} if n < {started_at} else {then})
    return x


class Slow(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(slow(x))


def make():
    return Slow(), torch.randn(2, 4)
"""


#: A model source with ``make()``: a two-layer perceptron on 8 features and its input, the smallest model a command
#: profiles in a moment.
MLP_SOURCE = """
import torch
from torch import nn

def make():
    return nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 4)), (torch.randn(2, 8),)
"""


class ConvNet(nn.Module):
    """Conv → BatchNorm → ReLU → max pool → Linear: every what-if has something to change."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(torch.relu(self.bn(self.conv(x))))
        return self.fc(x.mean(dim=(2, 3)))


class Mlp(nn.Module):
    """16 features → 32 → ReLU → 4."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def conv_session(capture: str = "auto") -> Session:
    """A :class:`ConvNet` (seeded, its batch norm's statistics set) captured for profiling, not yet run."""
    torch.manual_seed(0)
    model = ConvNet().eval()
    with torch.no_grad():  # statistics a fold must carry into the conv's weights
        model.bn.running_mean.uniform_(-1, 1)
        model.bn.running_var.uniform_(0.5, 2)
    return session_for_module(loaded_from_module(model, torch.randn(2, 3, 16, 16)), analyse=False, capture_mode=capture)


# -- torch.distributed jobs under fxtui run (tests/test_ranks.py, tests/test_multinode.py, tests/test_cross_node.py) --

#: Skips a module when this torch has no torch.distributed with gloo (the ranks' collectives).
NEEDS_GLOO = pytest.mark.skipif(
    not torch.distributed.is_available() or not torch.distributed.is_gloo_available(),
    reason="this torch has no torch.distributed with gloo",
)

#: DDP on gloo, one thread a rank; the rank ``SLOW_RANK`` (1 unless set) gets four times the batch. It runs ``STEPS``
#: steps (40 unless set), or, with ``STOP`` set, until that file exists (a rank that reached step 20 writes
#: ``STEPPED.<rank>`` first).
DDP_PROGRAM = """
import os, time
from datetime import timedelta
from pathlib import Path
import torch, torch.distributed as dist, torch.nn as nn
torch.set_num_threads(1)
dist.init_process_group("gloo", timeout=timedelta(seconds=20))  # a lost node ends the others' collectives
rank = dist.get_rank()
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10))
model = nn.parallel.DistributedDataParallel(net)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
batch = 64 * (4 if rank == int(os.environ.get("SLOW_RANK", "1")) else 1)
stop = os.environ.get("STOP")
step = 0
while True:
    x, y = torch.randn(batch, 128), torch.randint(0, 10, (batch,))
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
    step += 1
    if step == 20:
        Path(f"STEPPED.{rank}").touch()
    if stop:
        done = torch.tensor([float(Path(stop).exists())])
        dist.all_reduce(done)  # every rank stops at the same step
        if done.item() or step >= 20_000:
            break
        time.sleep(0.01)
    elif step >= int(os.environ.get("STEPS", "40")):
        break
dist.destroy_process_group()
"""

#: ``fxtui run``'s options for a short DDP job: three warm-up steps, then one step in three sampled.
DDP_RUN_OPTIONS = ("--warmup-steps", "3", "--sample-every", "3")


def fxtui_run(*args: str) -> list[str]:
    """``python -m fxtui run ARGS…`` with this Python (subprocesses inherit ``PYTHONPATH``: this checkout's fxtui)."""
    import sys

    return [sys.executable, "-m", "fxtui", "run", *args]


def free_port() -> int:
    """A TCP port of 127.0.0.1 free a moment ago."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_secret(path: Path, fill: str = "ab") -> Path:
    """An fxtui secret file (``fill`` repeated to 64 characters) only this user may read."""
    path.write_text(fill * 32 + "\n")
    path.chmod(0o600)
    return path


def watch_three_snapshots(directory: Path, said: list[str]) -> None:
    """The collector daemon's loop (``fxtui.jobs.daemon.watch``) run for three looks at a program, with one viewer
    whose every snapshot is noted in ``said`` as ``"snapshot"`` (what the loop does around them the caller notes)."""
    import threading

    from fxtui.core.settings import ProgramSettings
    from fxtui.jobs import daemon
    from fxtui.jobs.job_state import JobState
    from fxtui.wire.job_directory import JobInfo

    class Server:
        def __init__(self) -> None:
            self.viewers = [object()]

        def publish(self, make: object) -> None:
            said.append("snapshot")

    looks = iter(range(3))
    state = JobState(ProgramSettings(("train.py",)))
    info = JobInfo("1", ("train.py",), str(directory), 1, 2, 0.0)
    stop, leave = threading.Event(), threading.Event()
    daemon.watch(lambda: next(looks, None) is not None, state, Server(), None, directory, info, stop, leave)  # type: ignore[arg-type]
