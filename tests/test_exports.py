"""Exports never destroy what is at their path: a device, a FIFO, a descriptor are written into; a regular file is
replaced whole; a directory, or one path for two exports, is refused before anything runs."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from fxtui.core.errors import FxtuiError
from fxtui.report.export import check_exports, names_stdout, write_file

pytestmark = pytest.mark.e2e


def device(tmp_path: Path, name: str, major: int, minor: int) -> Path:
    """A character device of our own (``/dev/null`` is 1,3, ``/dev/full`` 1,7): a regression that replaced the
    device at the path it writes would replace this one, never the machine's (it did, once, run as root)."""
    path = tmp_path / name
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(major, minor))
    except PermissionError:
        pytest.skip("making a device node needs root")
    return path


def stdout_link(tmp_path: Path) -> Path:
    """A link to this process's standard output, as /dev/stdout is, but ours to lose."""
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    return link


TINY = textwrap.dedent(
    """
    import torch
    from torch import nn

    def make():
        return nn.Sequential(nn.Linear(8, 8), nn.ReLU()), (torch.randn(2, 8),)
    """
)


def test_a_regular_file_is_replaced_whole_and_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "out.csv"
    path.write_text("old")
    path.chmod(0o640)
    write_file(path, "new")
    assert path.read_text() == "new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]  # no temporary file left beside it


def test_a_symlink_to_a_regular_file_stays_a_link_and_its_target_gets_the_text(tmp_path: Path) -> None:
    target = tmp_path / "real.csv"
    target.write_text("old")
    link = tmp_path / "link.csv"
    link.symlink_to(target.name)
    write_file(link, "new")
    assert link.is_symlink() and os.readlink(link) == "real.csv"
    assert target.read_text() == "new"


def test_a_fifo_is_written_into_and_its_reader_gets_everything(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_file(fifo, "x" * 200_000)  # more than a pipe's buffer: the writer must wait for the reader
    reader.join(timeout=30)
    assert got == [b"x" * 200_000]
    assert stat.S_ISFIFO(fifo.stat().st_mode)  # still a FIFO, not a regular file renamed over it


def test_a_descriptor_of_this_process_is_written_through_not_replaced(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    try:
        write_file(f"/dev/fd/{write_end}", "through the pipe")
        os.close(write_end)
        assert os.read(read_end, 100) == b"through the pipe"
    finally:
        os.close(read_end)
    assert not list(Path("/dev/fd").glob(".*.tmp"))


def test_a_null_device_stays_a_device(tmp_path: Path) -> None:
    null = device(tmp_path, "null", 1, 3)
    write_file(null, "gone")
    assert stat.S_ISCHR(null.stat().st_mode)


def test_a_full_device_is_one_sentence_and_stays_a_device(tmp_path: Path) -> None:
    full = device(tmp_path, "full", 1, 7)
    with pytest.raises(FxtuiError, match=rf"^cannot write {full}: No space left on device$"):
        write_file(full, "x" * 10_000)
    assert stat.S_ISCHR(full.stat().st_mode)


def test_a_directory_is_refused_in_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(FxtuiError, match=r"^cannot write .*: it is a directory$"):
        check_exports({"csv": str(tmp_path)})


def test_one_path_for_two_exports_is_refused_even_through_a_link(tmp_path: Path) -> None:
    (tmp_path / "same.out").write_text("")
    (tmp_path / "alias.out").symlink_to("same.out")
    with pytest.raises(FxtuiError, match="--json and --csv both name"):
        check_exports({"json": str(tmp_path / "same.out"), "csv": str(tmp_path / "alias.out")})
    with pytest.raises(FxtuiError, match="--json and --csv both name"):
        check_exports({"json": str(tmp_path / "new.out"), "csv": str(tmp_path / "new.out")})
    check_exports({"json": str(tmp_path / "a.json"), "csv": str(tmp_path / "a.csv")})  # distinct: fine


def test_an_export_into_stdout_is_recognised(tmp_path: Path) -> None:
    assert names_stdout({"json": str(stdout_link(tmp_path))}) and names_stdout({"csv": None, "json": "/dev/fd/1"})
    assert not names_stdout({"json": str(tmp_path / "x.json"), "csv": None})


# -- the command, through a shell ---------------------------------------------------------


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    (tmp_path / "tiny.py").write_text(TINY)
    return tmp_path


def bash(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # One run, kept even when another process disturbs it (a disturbed run would otherwise be replaced by another):
    # these tests are of the exports, and the report they write is of exactly one run.
    fxtui = f"{sys.executable} -m fxtui tiny.py:make --once --runs 1 --warmup 0 --keep-disturbed"
    return subprocess.run(
        ["bash", "-c", script.replace("FXTUI", fxtui)], cwd=cwd, capture_output=True, text=True, timeout=300
    )


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_json_to_a_stdout_link_piped_is_the_json_alone_and_the_table_goes_to_stderr(tiny: Path) -> None:
    stdout_link(tiny)  # what /dev/stdout is: a link to /proc/self/fd/1
    done = bash("FXTUI --json stdout | cat > piped.json; FXTUI --json stdout > redirected.json", tiny)
    assert done.returncode == 0, done.stderr
    for name in ("piped.json", "redirected.json"):
        data = json.loads((tiny / name).read_text())  # nothing but the JSON: no table, no "wrote" line
        assert data["schema"] == "fxtui.report"
    assert "wrote stdout" in done.stderr and "op type" in done.stderr
    assert (tiny / "stdout").is_symlink()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_csv_into_a_process_substitution_reaches_the_reader(tiny: Path) -> None:
    done = bash("FXTUI --csv >(cat > seen.csv); sleep 1", tiny)
    assert done.returncode == 0, done.stderr
    assert "internal error" not in done.stderr
    lines = (tiny / "seen.csv").read_text().splitlines()
    assert lines[0].startswith("name,") and len(lines) == 1 + 4  # header, x, 0, 1, output


def test_an_export_that_fails_names_it_and_exits_non_zero_after_writing_the_others(tiny: Path) -> None:
    full = device(tiny, "full", 1, 7)
    done = bash("FXTUI --json ok.json --csv full", tiny)
    assert done.returncode == 2
    assert "wrote ok.json" in done.stdout
    assert done.stderr.strip() == "fxtui: cannot write full: No space left on device"
    assert json.loads((tiny / "ok.json").read_text())["metadata"]["runs"] == 1
    assert stat.S_ISCHR(full.stat().st_mode)
