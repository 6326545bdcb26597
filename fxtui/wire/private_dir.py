"""This user's directory for fxtui's sockets, keys and logs: whoever can read it can watch and steer a job."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from fxtui.core.errors import FxtuiError


def private_dir() -> Path:
    """This user's directory for fxtui's sockets and logs: ``$XDG_RUNTIME_DIR/fxtui`` or ``/tmp/fxtui-UID``, 0700.

    Refused, in one sentence, when it exists but another user owns it or others may read it.
    """
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime) and os.access(runtime, os.W_OK):
        path = Path(runtime) / "fxtui"
    else:
        path = Path(tempfile.gettempdir()) / f"fxtui-{os.getuid()}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        info = path.lstat()
    except OSError as e:
        raise FxtuiError(f"cannot make fxtui's directory {path}: {e.strerror or e}") from None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise FxtuiError(f"{path} is not a directory of this user's: fxtui keeps its sockets elsewhere only if asked")
    if info.st_mode & 0o077:
        raise FxtuiError(f"{path} can be read by other users (mode {oct(info.st_mode & 0o777)}); chmod 700 it")
    return path
