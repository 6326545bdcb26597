"""Reports as files: one table of formats (JSON, CSV, Chrome trace, speedscope, folded stacks) and writes that
lose nothing.

Each format is one file that renders a report as its text (:mod:`fxtui.report.csv_table`,
:mod:`~fxtui.report.chrome_trace`, :mod:`~fxtui.report.speedscope`, :mod:`~fxtui.report.folded`; JSON's
form is :mod:`~fxtui.report.json_schema`'s) and one entry of :data:`FORMATS`: the command-line option
that asks for it (every command that exports gets it) and that function. An export is rendered whole
before anything is written, then written whole or not at all:

* a regular file (or a new path) through a temporary file beside it, renamed over it, so a
  reader never sees half a file and a failed write leaves the old one;
* anything else at the path — a device (``/dev/null``, ``/dev/full``), a FIFO, a terminal, a
  descriptor (``/dev/stdout``, ``/dev/fd/63`` from ``--csv >(wc -c)``) — is written straight
  into, as a shell redirection would: renaming over it would replace a device file (as root)
  or leave the reader of a pipe waiting forever.

A directory is refused, and so is one path given to two exports (the second would replace
the first), before anything is profiled.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from fxtui.core.errors import FxtuiError
from fxtui.report.data import ReportData
from fxtui.report.formats import FORMATS


def report_json(report: ReportData) -> str:
    """``report`` as JSON text (:meth:`~fxtui.report.data.ReportData.to_dict`; its form:
    :mod:`fxtui.report.json_schema`): the metadata indented, each row and module on a line of its own (one
    node per line reads, greps and diffs well, and writes several times faster than indenting every value)."""
    data = report.to_dict()
    parts = [f" {json.dumps(key)}: {json.dumps(data[key])}" for key in ("schema", "version")]
    parts.append(' "metadata": ' + json.dumps(data["metadata"], indent=1, allow_nan=False).replace("\n", "\n "))
    for key in ("rows", "modules"):
        records = ",\n".join("  " + json.dumps(r, allow_nan=False) for r in data[key])
        parts.append(f' "{key}": [\n{records}\n ]' if records else f' "{key}": []')
    # A newline at the end, as text files have (``--json /dev/stdout`` leaves the shell's prompt on a line of its own).
    return "{\n" + ",\n".join(parts) + "\n}\n"


class ExportError(FxtuiError):
    """Some exports could not be written; :attr:`written` lists those that were."""

    def __init__(self, message: str, written: list[str]) -> None:
        super().__init__(message)
        self.written = written


def check_exports(paths: Mapping[str, str | None]) -> None:
    """Fail early, in one sentence, when an export cannot be written (before any profiling).

    ``paths`` maps a format of :data:`FORMATS` to its path (None: not asked for).
    """
    seen: dict[str, str] = {}
    for name, path in paths.items():
        if not path:
            continue
        check_writable(path)
        key = _identity(path)
        if key in seen:
            raise FxtuiError(
                f"{FORMATS[seen[key]].option} and {FORMATS[name].option} both name {path}: the second would "
                "replace the first; give each export its own file"
            )
        seen[key] = name


def export(report: ReportData, paths: Mapping[str, str | None]) -> list[str]:
    """Write each asked-for export (format → path); returns the paths written.

    Every export is tried; when any fails, :class:`ExportError` says which and lists those written.
    """
    written: list[str] = []
    failed: list[str] = []
    for name, path in paths.items():
        if not path:
            continue
        try:
            write_file(path, FORMATS[name].render(report))
        except FxtuiError as e:
            failed.append(str(e))
        else:
            written.append(path)
    if failed:
        raise ExportError("; ".join(failed), written)
    return written


def check_writable(path: str | os.PathLike[str]) -> Path:
    """Fail early, in one sentence, when ``path`` cannot be written (before any profiling)."""
    p = Path(path)
    if p.is_dir():
        raise FxtuiError(f"cannot write {p}: it is a directory")
    if _is_stream(p):
        if not os.access(p, os.W_OK):
            raise FxtuiError(f"cannot write {p}: it is not writable")
        return p
    target = _regular_target(p)
    parent = target.parent
    if not parent.is_dir():
        raise FxtuiError(f"cannot write {p}: the directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise FxtuiError(f"cannot write {p}: the directory {parent} is not writable")
    if target.exists() and not os.access(target, os.W_OK):
        raise FxtuiError(f"cannot write {p}: the file is not writable")
    return p


def write_file(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all: atomically to a regular file, straight into anything else."""
    p = check_writable(path)
    if _is_stream(p):
        _write_straight(p, text)
    else:
        write_atomic(_regular_target(p), text)


def _is_stream(p: Path) -> bool:
    """True when ``p`` names something other than a regular file or a new path: a device, a FIFO, a socket, a
    terminal, or an open descriptor (``/dev/stdout`` → ``/proc/self/fd/1``, ``/dev/fd/63``) even where the
    descriptor is a regular file (``fxtui … --json /dev/stdout > out.json``): written into as a redirection
    would, not replaced beside it."""
    try:
        mode = os.stat(p).st_mode  # follows links: what is written into
    except OSError:
        return False  # a new file (or a dangling link: written as a new file where the link points)
    return not stat.S_ISREG(mode) or _descriptor_entry(p) is not None


def _descriptor_entry(p: Path) -> tuple[int, int] | None:
    """(pid, descriptor) when ``p`` or a link it leads through is an entry of a process's descriptor table
    (``/proc/N/fd/M``; ``/dev/fd`` and ``/proc/self`` lead there)."""
    seen = 0
    current = str(p)
    while seen < 40:  # the kernel's own limit on links followed
        parent = os.path.realpath(os.path.dirname(os.path.abspath(current)))
        found = _FD_DIR.match(parent)
        name = os.path.basename(current)
        if found and name.isdigit():
            return int(found.group(1)), int(name)
        if not os.path.islink(current):
            return None
        target = os.readlink(current)
        current = target if os.path.isabs(target) else os.path.join(os.path.dirname(current), target)
        seen += 1
    return None


_FD_DIR = re.compile(r"^/proc/(\d+)/fd$")


def names_stdout(paths: Mapping[str, str | None]) -> bool:
    """True when an export would be written into this process's standard output (``--json /dev/stdout``,
    ``--json out.json > out.json``): the command then prints its tables on stderr, so the export stays whole."""
    try:
        out = os.fstat(1)
    except OSError:
        return False
    for path in paths.values():
        if not path:
            continue
        try:
            st = os.stat(path)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (out.st_dev, out.st_ino):
            return True
    return False


def _regular_target(p: Path) -> Path:
    """The file a write should replace: the target of a symbolic link, not the link itself."""
    return Path(os.path.realpath(p)) if p.is_symlink() else p


def _identity(path: str) -> str:
    """What two paths share when they name one file: the device and inode, or the resolved path of a new file."""
    try:
        st = os.stat(path)
    except OSError:
        return os.path.realpath(path)
    return f"{st.st_dev}:{st.st_ino}" if stat.S_ISREG(st.st_mode) else os.path.realpath(path)


def _write_straight(p: Path, text: str) -> None:
    data = text.encode("utf-8")
    entry = _descriptor_entry(p)
    try:
        if entry is not None and entry[0] == os.getpid():
            # One of this process's own descriptors (/dev/stdout, /dev/fd/63): written through it, as a shell
            # writes into /dev/stdout, so its file offset is shared; opened anew, a file behind it would be
            # written from its start, over what is already there.
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            fd = os.dup(entry[1])
        else:
            # No O_TRUNC on a device or a pipe, and no O_CREAT: the path already names what is written into.
            fd = os.open(p, os.O_WRONLY)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
    except OSError as e:
        raise FxtuiError(f"cannot write {p}: {e.strerror or e}") from e


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to the regular file ``path`` whole or not at all (temporary file, then rename)."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent if str(p.parent) else ".")
    try:
        # mkstemp makes the file private (0600); an export should get the mode any new
        # file gets here, or keep the mode of the file it replaces.
        os.fchmod(fd, p.stat().st_mode & 0o7777 if p.exists() else 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise FxtuiError(f"cannot write {p}: {e.strerror or e}") from e
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
