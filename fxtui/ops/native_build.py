"""The native per-op timer's library: built once per torch and source into the user's cache, in the background.

``op_timer.cpp`` (beside this file) is compiled with the system's C++ compiler against the running torch's
headers and libraries into ``~/.cache/fxtui/native/`` (``$XDG_CACHE_HOME`` honoured; the folder 0700), named by
the torch version, its C++ ABI and a hash of the source and the command, so a new torch or a new fxtui builds
afresh and never loads a stale library. The compiler writes a temporary file renamed into place only once
complete, so a reader sees the whole library or none.

Building never runs beside the program: on a 2-core machine a build beside a VAE-pattern program made its steps
44 times as long (7.4 → 323 ms; a nice-19 busy loop beside it cost nothing: the compiler's memory traffic, not its
CPU share, is what hurts). So a first run times ops with the dispatch mode and says why, and :func:`build_at_exit`
starts the build as the program's process ends: :func:`start_build` runs the compiler as a detached child at nice
19 (about 4–30 s of one core, depending on the machine's load), and the next run finds the library (:func:`load`).
A build that failed leaves a ``.failed`` note beside it, so later runs do not try again: they time with the
dispatch mode and say why (:func:`why_not`). ``python -m fxtui.ops.native_build`` builds it ahead, in the
foreground.
"""

from __future__ import annotations

import atexit
import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

SOURCE = Path(__file__).with_name("op_timer.cpp")
#: Seconds a foreground build may take before it is given up.
BUILD_TIMEOUT_S = 600.0
#: Why the native timer is not in use, as the header says it (the dispatch mode times ops instead).
NO_COMPILER = "no C++ compiler (g++ or c++) on PATH"
NO_HEADERS = "this torch ships no C++ headers"
BUILDING = "its library is being built"
BUILDS_AT_EXIT = "its library is built when this program ends, for the next run"

_loaded: ctypes.CDLL | None = None
_load_error = ""
_child: subprocess.Popen[bytes] | None = None
_at_exit = False


def cache_dir() -> Path:
    """The user's private folder for built libraries."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fxtui" / "native"


def compiler() -> str | None:
    """The C++ compiler to build with (``$CXX``, g++, c++), or None."""
    for name in (os.environ.get("CXX", ""), "g++", "c++"):
        if name and shutil.which(name):
            return name
    return None


def _torch_dirs() -> tuple[list[str], str]:
    """torch's include folders and its library folder."""
    root = Path(torch.__file__).parent
    return [str(root / "include"), str(root / "include" / "torch" / "csrc" / "api" / "include")], str(root / "lib")


def command(output: str, cxx: str = "g++") -> list[str]:
    """The compiler's command line writing the library to ``output`` (``-DNDEBUG`` as torch's own release build:
    torch's headers check, in debug builds only, fields its release build never sets)."""
    includes, lib = _torch_dirs()
    abi = int(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True))
    return [
        cxx, "-O2", "-DNDEBUG", "-shared", "-fPIC", "-std=c++20", f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
        *(f"-I{d}" for d in includes), str(SOURCE), "-o", output,
        f"-L{lib}", "-lc10", "-ltorch_cpu", f"-Wl,-rpath,{lib}",
    ]  # fmt: skip


def library_path() -> Path:
    """Where the library for this torch and this source lives (built or not)."""
    digest = hashlib.sha256(SOURCE.read_bytes())
    digest.update(" ".join(command("out")).encode())
    abi = int(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True))
    version = torch.__version__.replace("+", "_")
    return cache_dir() / f"op_timer-torch{version}-abi{abi}-{digest.hexdigest()[:16]}.so"


def why_not() -> str:
    """Why the native timer cannot run here now ("" if it can, or could once built)."""
    if _load_error:
        return _load_error
    if compiler() is None and not library_path().exists():
        return NO_COMPILER
    if not Path(_torch_dirs()[0][0], "ATen", "record_function.h").exists():
        return NO_HEADERS
    failed = library_path().with_suffix(".failed")
    if failed.exists():
        return f"its build failed ({failed})"
    return ""


def _private_dir() -> Path:
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(folder, 0o700)
    return folder


def start_build() -> bool:
    """Start building the library in a detached child at nice 19, unless it exists, is being built, or cannot be;
    whether a build runs now."""
    global _child
    if _child is not None and _child.poll() is None:
        return True
    target = library_path()
    cxx = compiler()
    if target.exists() or cxx is None or why_not():
        return False
    folder = _private_dir()
    if _recent_tmp(folder, target.name):
        return False  # another process of this user builds it (a torchrun job's ranks start together)
    tmp = f"{target}.{os.getpid()}.tmp"
    failed = target.with_suffix(".failed")
    # sh: the rename, or the failure note, happen when the compiler ends, even if this process has ended by then.
    # $0 is the temporary file, $1 and $2 the library and the note; the compiler's command is what follows them.
    script = (
        'tmp="$0" target="$1" failed="$2"; shift 2; '
        'nice -n 19 "$@" 2>"$tmp.err" && mv -f "$tmp" "$target" && rm -f "$tmp.err" || '
        '{ mv -f "$tmp.err" "$failed"; rm -f "$tmp"; }'
    )
    try:
        _child = subprocess.Popen(
            ["sh", "-c", script, tmp, str(target), str(failed), *command(tmp, cxx)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # the program's Ctrl-C does not reach it
            close_fds=True,
        )
    except OSError:
        return False
    return True


def build_at_exit() -> None:
    """Build the library when this process ends (:func:`start_build` from ``atexit``), once, not beside the program
    it watches (the module's docstring says why)."""
    global _at_exit
    if not _at_exit:
        _at_exit = True
        atexit.register(start_build)


def pending() -> str:
    """Why the library, missing, is not in use yet: another process builds it now, or this one will as it ends."""
    folder = cache_dir()
    return BUILDING if folder.is_dir() and _recent_tmp(folder, library_path().name) else BUILDS_AT_EXIT


def _recent_tmp(folder: Path, name: str) -> bool:
    """A temporary library, or a build's error file (the compiler writes the library only at its end), younger than
    the build's timeout (an older one is a build that died)."""
    import time

    now = time.time()
    for path in folder.glob(name + ".*.tmp*"):
        try:
            if now - path.stat().st_mtime < BUILD_TIMEOUT_S:
                return True
        except OSError:  # renamed or removed since: that build ended
            continue
    return False


def build() -> Path:
    """Build the library now, in the foreground (``fxtui``'s tests, ``python -m fxtui.ops.native_build``); its
    path. RuntimeError with the compiler's message when it cannot be built."""
    target = library_path()
    if target.exists():
        return target
    cxx = compiler()
    if cxx is None:
        raise RuntimeError(NO_COMPILER)
    folder = _private_dir()
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=folder)
    os.close(fd)
    try:
        done = subprocess.run(command(tmp, cxx), capture_output=True, timeout=BUILD_TIMEOUT_S, check=False)
        if done.returncode != 0:
            raise RuntimeError(done.stderr.decode(errors="replace")[-2000:])
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def load() -> ctypes.CDLL | None:
    """The library, loaded once it exists (None before, and when it cannot be loaded: :func:`why_not` says why)."""
    global _loaded, _load_error
    if _loaded is not None or _load_error:
        return _loaded
    path = library_path()
    if not path.exists():
        return None
    try:
        # PyDLL: its calls keep the GIL (a CDLL's release and take it back at each call, a few µs when the program
        # has another thread, such as the agent's sender); none of them runs Python or waits
        lib = ctypes.PyDLL(str(path))
        _declare(lib)
        if lib.fx_columns() != 7:
            raise OSError("a library of another layout")
    except (OSError, AttributeError) as e:
        _load_error = f"its library could not be loaded ({e})"
        return None
    _loaded = lib
    return lib


def _declare(lib: ctypes.CDLL) -> None:
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    lib.fx_start.argtypes = [ptr, i64, ptr, i64]
    lib.fx_start.restype = ctypes.c_int
    lib.fx_flow.argtypes = [ctypes.c_int]
    lib.fx_flow.restype = None
    lib.fx_pause.argtypes = [ctypes.c_int]
    lib.fx_pause.restype = None
    lib.fx_inner.argtypes = [ctypes.c_int]
    lib.fx_inner.restype = ctypes.c_int
    for name in ("fx_columns", "fx_count", "fx_dropped", "fx_flow_count", "fx_stop", "fx_name_count"):
        getattr(lib, name).argtypes = []
        getattr(lib, name).restype = i64
    lib.fx_name.argtypes = [i64, ctypes.c_char_p, i64]
    lib.fx_name.restype = i64


if __name__ == "__main__":
    try:
        print(build())
    except RuntimeError as e:
        print(f"fxtui: the native timer could not be built: {str(e).strip().splitlines()[-1:]}", file=sys.stderr)
        sys.exit(1)
