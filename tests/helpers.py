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
