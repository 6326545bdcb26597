"""The app against the real engine, built as the command builds it (live_command.make_app): the options reach the
child, what-ifs asked on the command line are measured, a fatal error ends the app with its sentence, an engine
that dies leaves figures that are saved on the way out; and in a real terminal, SIGTERM restores it."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot

from fxtui.core.errors import FxtuiError
from fxtui.core.settings import RunSettings, Target
from fxtui.core.snapshot import Snapshot, State
from fxtui.live_command import finish, make_app
from fxtui.ui.app import FxtuiApp

MODEL = textwrap.dedent(
    """
    import torch
    from torch import nn

    def make():
        return nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4)), (torch.randn(2, 16),)
    """
)
SIZE = (120, 36)


@pytest.fixture
def model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "small.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)  # where the app saves
    return f"{tmp_path / 'small.py'}:make"


async def wait_for(pilot: Pilot, app: FxtuiApp, test: Callable[[Snapshot], bool], seconds: float = 300) -> Snapshot:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        shown = app.main.snapshot
        if shown is not None and test(shown):
            return shown
        await pilot.pause(0.05)
    raise AssertionError(f"never shown; last: {app.main.snapshot and app.main.snapshot.message}")


async def test_options_reach_the_child_and_what_ifs_asked_for_are_measured(model: str) -> None:
    app = make_app(RunSettings(Target(model), threads=(1,), warmup=1, what_ifs=("threads=2",)))
    async with app.run_test(size=SIZE) as pilot:
        shown = await wait_for(pilot, app, lambda s: s.graph is not None and s.runs > 0)
        assert shown.graph is not None and shown.graph.threads == 1 and shown.graph.model.endswith("small.py:make")
        measured = await wait_for(pilot, app, lambda s: any(w.name == "threads=2" and w.pairs for w in s.what_ifs))
        result = next(w for w in measured.what_ifs if w.name == "threads=2")
        assert result.error == "" and result.before_s and result.after_s
        await pilot.press("q")
    assert finish(app) == 0


async def test_a_model_that_does_not_load_ends_the_app_with_its_sentence(model: str) -> None:
    app = make_app(RunSettings(Target("resnet19"), warmup=1))
    async with app.run_test(size=SIZE) as pilot:
        deadline = time.monotonic() + 120
        while app.return_code is None and time.monotonic() < deadline:
            await pilot.pause(0.05)
    assert app.return_code == 2
    with pytest.raises(FxtuiError, match=r"resnet19.*resnet18"):
        finish(app)


async def test_after_the_engine_is_killed_leaving_saves_its_final_figures(
    model: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = make_app(RunSettings(Target(model), threads=(1,), warmup=1))
    async with app.run_test(size=SIZE) as pilot:
        before = await wait_for(pilot, app, lambda s: s.runs >= 1)
        os.kill(app.source._process.pid, signal.SIGKILL)  # type: ignore[attr-defined]
        final = await wait_for(pilot, app, lambda s: s.state is State.ERROR)
        assert "killed: perhaps out of memory" in final.message and final.runs >= before.runs
        assert app.main.table.cell_text("_0", "median") not in ("–", "")
        await pilot.press("q")
    assert finish(app) == 0
    err = capsys.readouterr().err
    saved = [p for p in tmp_path.glob("fxtui-small.py_make-*.json")]
    assert len(saved) == 1 and f"fxtui: the figures shown were saved to {saved[0]}" in err
    data = json.loads(saved[0].read_text())
    assert data["metadata"]["runs"] == final.runs and {r["name"] for r in data["rows"]} >= {"_0", "_1", "_2"}


def read_until(fd: int, done: Callable[[bytes], bool], seconds: float) -> bytes:
    got = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not done(got):
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the other end closed
                break
            if not chunk:
                break
            got += chunk
    return got


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a pseudo-terminal as Linux has it")
def test_sigterm_in_a_real_terminal_leaves_the_alternate_screen_and_shows_the_cursor(model: str) -> None:
    pid, fd = pty.fork()
    if pid == 0:  # the child: fxtui on the terminal
        os.environ.update(TERM="xterm-256color", COLUMNS="100", LINES="30")
        os.execv(sys.executable, [sys.executable, "-m", "fxtui", model, "--threads", "1", "--warmup", "1"])
    try:
        screen = read_until(fd, lambda got: b"runs" in got and b"\x1b[?1049h" in got, 120)
        assert b"\x1b[?1049h" in screen, screen[-400:]  # the app took the alternate screen
        os.kill(pid, signal.SIGTERM)
        rest = read_until(fd, lambda got: b"saved to" in got, 60)
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 128 + signal.SIGTERM
    tail = rest[rest.rfind(b"\x1b[?1049l") :]
    assert b"\x1b[?1049l" in rest and b"\x1b[?25h" in rest  # alternate screen left, cursor shown
    assert b"\x1b[?1000l" in rest or b"\x1b[?1003l" in rest  # mouse reporting off
    assert b"the figures shown were saved to" in tail
