"""Where the native timer cannot run (no compiler, a library that does not load), the dispatch mode times the steps
and the header says why; and the op limit that sets aside a step of too many ops, on the dispatch mode's path.

No library is built here (that starts a compiler: tests/test_native_timer.py, e2e).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import fxtui
from fxtui.core.step_aside import OPS, aside_text
from fxtui.ops import native_build
from fxtui.ops.native_recorder import NativeRecorder
from fxtui.ops.recorder import OpRecorder
from fxtui.wire.agent_contract import AgentOptions

pytestmark = pytest.mark.unit


@pytest.fixture
def no_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache, nothing loaded yet, and no C++ compiler on the machine."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(native_build, "_loaded", None)
    monkeypatch.setattr(native_build, "_load_error", "")
    monkeypatch.setattr(native_build, "compiler", lambda: None)
    return tmp_path


def test_the_timer_option_travels_to_the_agent_and_an_older_collectors_options_still_read() -> None:
    assert AgentOptions.decode(AgentOptions(3, 2, 0.05, "native").encode()) == AgentOptions(3, 2, 0.05, "native")
    assert AgentOptions.decode("3,2,0.05") == AgentOptions(3, 2, 0.05, "mode")
    assert AgentOptions.decode("3,2,0.05,nonsense").timer == "mode"


def test_without_a_compiler_the_dispatch_mode_times_the_step_and_says_why(no_library: Path) -> None:
    recorder = NativeRecorder(build=True)  # would start a build: there is no compiler, so none starts
    assert recorder.lib is None
    assert native_build.why_not() == native_build.NO_COMPILER
    recorder.start()
    assert recorder.mode is not None and not recorder.native  # the dispatch mode records
    torch.ones(2).add(1)
    recorder.stop()
    assert any(getattr(r, "op", None) is not None for r in recorder.take())
    assert recorder.ran == "mode"
    assert "no C++ compiler" in recorder.timer()


def test_a_library_that_does_not_load_falls_back_to_the_dispatch_mode(no_library: Path) -> None:
    path = native_build.library_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a shared object")
    assert native_build.load() is None
    assert "could not be loaded" in native_build.why_not()
    recorder = NativeRecorder()
    recorder.start()
    assert recorder.mode is not None
    recorder.stop()


def test_the_library_is_named_by_torch_and_source_in_a_private_folder(no_library: Path) -> None:
    path = native_build.library_path()
    assert path.parent == no_library / "fxtui" / "native"
    assert torch.__version__.replace("+", "_") in path.name
    assert native_build._private_dir().stat().st_mode & 0o777 == 0o700


def _watched_with_the_native_timer() -> fxtui.Report:
    """Eight training steps of a toy model under ``fxtui.watch(timer="native")``; its report."""
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with fxtui.watch(warmup=1, every=2, timer="native") as w:
        for _ in range(8):
            opt.zero_grad()
            model(torch.randn(3, 4)).sum().backward()
            opt.step()
    return w.report()


def test_a_watched_program_without_a_compiler_runs_with_the_dispatch_mode_and_the_header_says_why(
    no_library: Path,
) -> None:
    report = _watched_with_the_native_timer()
    assert report.rows  # nodes were timed, by the dispatch mode
    text = report.header()
    assert "(a dispatch mode: the native timer is not in use, no C++ compiler" in text  # one line: which, and why
    assert "a C++ RecordFunction callback" not in text


def test_while_its_library_is_built_the_dispatch_mode_times_the_steps_and_the_capture_line_says_so(
    no_library: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first run on a machine with the native timer (no library in the cache yet): the build is left for the
    program's end (here it is only asked for), the steps are timed as today, and one line says by what and why."""
    builds: list[bool] = []
    monkeypatch.setattr(native_build, "compiler", lambda: "g++")
    monkeypatch.setattr("fxtui.ops.native_recorder.build_at_exit", lambda: builds.append(True))
    report = _watched_with_the_native_timer()
    assert builds == [True] and report.rows
    assert report.program is not None and report.program.timer == "mode"
    capture = [line for line in report.header().splitlines() if line.startswith("capture")]
    assert (
        len(capture) == 1
        and f"(a dispatch mode: the native timer is not in use, {native_build.BUILDS_AT_EXIT})" in capture[0]
    )
    assert "warning" not in report.header()


def test_the_dispatch_mode_stops_at_the_op_limit_and_the_step_is_set_aside() -> None:
    mode = OpRecorder()
    mode.limit = 100
    mode.start()
    block = torch.nn.Identity()
    x = torch.zeros(3)
    for _ in range(300):
        x = block(x + 1)  # the limit is checked where module calls begin
    mode.stop()
    assert mode.overflowed >= 100
    assert len(mode.take()) <= 102
    assert not mode.active
    assert "200,000" in aside_text(OPS, 1, "training steps")


def test_a_watched_step_of_too_many_ops_is_set_aside(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("fxtui.agent.step_recording.OP_LIMIT", 40)
    model = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(30)])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with fxtui.watch(warmup=1, every=1, timer="mode") as w:  # the dispatch mode's path
        for _ in range(4):
            opt.zero_grad()
            model(torch.randn(2, 4)).sum().backward()
            opt.step()
    steps = w.report().steps
    assert steps is not None
    assert dict(steps.kinds[0].aside).get(OPS, 0) >= 2, steps.kinds[0].aside


def test_the_library_is_built_as_the_process_ends_never_beside_the_program(
    no_library: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build beside the program made a VAE-pattern program's steps 44 times as long on two cores: the recorder
    asks for it at the process's end, once, and starts nothing while the program runs."""
    at_exit: list[object] = []
    started: list[bool] = []
    monkeypatch.setattr(native_build, "_at_exit", False)
    monkeypatch.setattr(native_build.atexit, "register", at_exit.append)
    monkeypatch.setattr(native_build, "start_build", lambda: started.append(True) or True)
    monkeypatch.setattr(native_build, "compiler", lambda: "g++")
    from fxtui.ops.native_recorder import NativeRecorder

    NativeRecorder(build=True)
    NativeRecorder(build=True)
    assert started == [] and len(at_exit) == 1  # nothing built now; one build, at the end
    assert native_build.pending() == native_build.BUILDS_AT_EXIT
