"""What the machine allows: inputs larger than the memory this process may use (the machine's or its cgroup's) are
refused before they are allocated; a name too long for the file system is a sentence; threads beyond the cores
are warned of without --hints and not blamed on other processes."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from fxtui.commands.cli import main
from fxtui.core.findings import Disturbance
from fxtui.measure import memory_limit
from fxtui.measure.memory_limit import Headroom, check_inputs_fit, headroom

pytestmark = pytest.mark.e2e

GiB = 2**30


def fake_proc(tmp_path: Path, available_kib: int, cgroup: str) -> Path:
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text(f"MemTotal: 99999999 kB\nMemAvailable: {available_kib} kB\n")
    (proc / "self" / "cgroup").write_text(cgroup)
    return proc


def write(directory: Path, **files: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name.replace("_", ".", 1)).write_text(text)


def test_without_a_cgroup_limit_the_machine_s_available_memory_is_the_headroom(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, 8 * 1024 * 1024, "0::/user.slice\n")
    write(tmp_path / "cg" / "user.slice", memory_max="max\n", memory_current="123\n")
    assert headroom(proc, tmp_path / "cg") == Headroom(8 * GiB, "this machine's available memory")


def test_a_cgroup_v2_limit_below_the_machine_s_memory_sets_the_headroom(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, 64 * 1024 * 1024, "0::/job/step\n")
    # the job's own cgroup has no limit; its parent allows 2.5 GiB, of which 1 GiB is in use, 256 MiB of it cache
    write(tmp_path / "cg" / "job" / "step", memory_max="max\n", memory_current="100\n")
    write(
        tmp_path / "cg" / "job",
        memory_max=f"{int(2.5 * GiB)}\n",
        memory_current=f"{GiB}\n",
        memory_stat=f"anon 1\ninactive_file {GiB // 4}\n",
    )
    room = headroom(proc, tmp_path / "cg")
    assert room == Headroom(int(2.5 * GiB) - (GiB - GiB // 4), "the memory cgroup's limit of 2.50 GiB")


def test_a_cgroup_v1_memory_limit_sets_the_headroom(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, 64 * 1024 * 1024, "4:memory:/box\n1:cpu:/\n0::/\n")
    write(tmp_path / "cg" / "memory" / "box", memory_limit_in_bytes=f"{GiB}\n", memory_usage_in_bytes=f"{GiB // 2}\n")
    write(tmp_path / "cg" / "memory", memory_limit_in_bytes="9223372036854771712\n", memory_usage_in_bytes="5\n")
    assert headroom(proc, tmp_path / "cg") == Headroom(GiB // 2, "the memory cgroup's limit of 1.00 GiB")


def test_inputs_that_fit_twice_pass_and_others_are_one_sentence_with_the_sizes() -> None:
    room = Headroom(GiB, "the memory cgroup's limit of 2.50 GiB")
    check_inputs_fit([(1, 3, 4000, 4000)], 4, room=room)  # 183 MiB, twice: fits
    with pytest.raises(Exception) as caught:
        check_inputs_fit([(1, 3, 8000, 8000)], 4, room=room, dtype="float32")
    assert str(caught.value) == (
        "the input 1×3×8000×8000 float32 takes 732 MiB, 1.43 GiB with the fresh copy each run gets, more than "
        "the 1.00 GiB left by the memory cgroup's limit of 2.50 GiB; give a smaller --input-shape"
    )


def one_sentence(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fxtui: ") and "internal error" not in err, err
    return lines[0]


def test_a_40_gb_input_is_refused_before_it_is_allocated(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_limit, "headroom", lambda: Headroom(20 * GiB, "this machine's available memory"))
    assert main(["resnet18", "--once", "--input-shape", "100000,100000"]) == 2
    line = one_sentence(capsys.readouterr().err)
    assert "100000×100000 float32 takes 37.3 GiB" in line and "20.0 GiB left by this machine's available" in line


def test_an_input_shape_that_fits_the_machine_but_not_the_cgroup_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    room = Headroom(GiB, "the memory cgroup's limit of 2.50 GiB")
    monkeypatch.setattr(memory_limit, "headroom", lambda: room)
    assert main(["resnet18", "--once", "--input-shape", "1,3,8000,8000"]) == 2
    assert "the memory cgroup's limit of 2.50 GiB" in one_sentence(capsys.readouterr().err)


def test_a_file_name_too_long_is_one_short_sentence(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["a" * 10_000 + ".py:make", "--once"]) == 2
    line = one_sentence(capsys.readouterr().err)
    assert "File name too long" in line and "(10,003 characters)" in line and len(line) < 200


MODEL = textwrap.dedent(
    """
    import torch
    from torch import nn

    def make():
        return nn.Sequential(nn.Linear(8, 8), nn.ReLU()), (torch.randn(2, 8),)
    """
)


def test_threads_beyond_the_cores_are_warned_of_headless_without_hints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "m.py").write_text(MODEL)
    cores = len(os.sched_getaffinity(0))
    code = main([f"{tmp_path / 'm.py'}:make", "--once", "--runs", "2", "--warmup", "0", "--threads", str(cores + 1)])
    out = capsys.readouterr().out
    assert code == 0
    assert f"warning    {cores + 1} intra-op threads but only {cores} core" in out


def test_oversubscription_by_the_session_s_own_threads_is_not_blamed_on_other_processes() -> None:
    own = Disturbance(
        steps=30, disturbed=30, median_lost=0.9, worst_lost=0.96, used=30, in_window=30, threads=64, cores=2
    )
    assert own.line().startswith(
        "30 of 30 steps disturbed: the session's own 64 threads on 2 cores waited for one another 90% of their time "
        "(median; worst 96%), perhaps other processes too; --threads 2 avoids it"
    )
    assert "hypervisor" not in own.line()
    others = Disturbance(
        steps=30, disturbed=3, median_lost=0.2, worst_lost=0.3, used=30, in_window=3, threads=2, cores=2
    )
    assert others.line().startswith("3 of 30 steps disturbed: other processes or the hypervisor took 20%")
