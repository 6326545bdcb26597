"""How much memory this process may still use, and refusing inputs that cannot fit before they are allocated.

The machine's ``MemAvailable`` is not the whole answer: in a container or a systemd slice the memory
cgroup's limit is, and a process past it is killed by the OOM killer with no message (exit 137). The
headroom is the smallest of the machine's available memory and, for each memory cgroup this process is
in and its ancestors, the limit less what is in use (page cache the kernel would reclaim first not counted).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from fxtui.core.errors import FxtuiError
from fxtui.core.units import format_bytes

#: A limit at or above this is "no limit" (cgroup v1 writes 2**63 rounded down to a page).
_UNLIMITED = 2**60


@dataclass(frozen=True, slots=True)
class Headroom:
    """Memory this process may still use, and what sets it."""

    bytes: int
    where: str
    """``this machine's available memory`` or ``the memory cgroup's limit of 2.5 GiB``."""


def headroom(
    proc: str | os.PathLike[str] = "/proc", cgroup_root: str | os.PathLike[str] = "/sys/fs/cgroup"
) -> Headroom | None:
    """The memory this process may still use (None when neither the machine nor a cgroup says)."""
    found: list[Headroom] = []
    available = _meminfo_available(Path(proc) / "meminfo")
    if available is not None:
        found.append(Headroom(available, "this machine's available memory"))
    found.extend(_cgroup_headrooms(Path(proc) / "self" / "cgroup", Path(cgroup_root)))
    return min(found, key=lambda h: h.bytes) if found else None


def check_inputs_fit(
    shapes: list[tuple[int, ...]], itemsize: int, copies: int = 2, room: Headroom | None = None, dtype: str = ""
) -> None:
    """Refuse, in one sentence, inputs whose ``copies`` (the session keeps one and gives each run a fresh one)
    would not fit in the memory this process may use; ``room`` defaults to :func:`headroom`."""
    size = sum(math.prod(shape) for shape in shapes) * itemsize
    room = room if room is not None else headroom()
    if room is None or size * copies <= room.bytes:
        return
    shown = ", ".join("×".join(map(str, s)) for s in shapes)
    what = f" {dtype}" if dtype else ""
    raise FxtuiError(
        f"the input {shown}{what} takes {format_bytes(size)}, {format_bytes(size * copies)} with the fresh copy "
        f"each run gets, more than the {format_bytes(room.bytes)} left by {room.where}; give a smaller --input-shape"
    )


def _meminfo_available(path: Path) -> int | None:
    try:
        for line in path.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_headrooms(membership: Path, root: Path) -> list[Headroom]:
    """Limit less use for each limited memory cgroup this process is in, its ancestors included."""
    try:
        lines = membership.read_text().splitlines()
    except OSError:
        return []
    out: list[Headroom] = []
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":  # cgroup v2: one unified hierarchy
            base, limit_file, use_file, cache_key = root, "memory.max", "memory.current", "inactive_file"
            if (root / "unified").is_dir() and not (root / "cgroup.controllers").exists():
                base = root / "unified"  # a hybrid layout: v2 mounted beside the v1 controllers
        elif "memory" in controllers.split(","):
            base, limit_file, use_file, cache_key = (
                root / "memory",
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
                "total_inactive_file",
            )
        else:
            continue
        directory = base / path.lstrip("/")
        while True:
            room = _one_cgroup(directory, limit_file, use_file, cache_key)
            if room is not None:
                out.append(room)
            if directory == base or base not in directory.parents:
                break
            directory = directory.parent
    return out


def _one_cgroup(directory: Path, limit_file: str, use_file: str, cache_key: str) -> Headroom | None:
    try:
        text = (directory / limit_file).read_text().strip()
        if text == "max":
            return None
        limit = int(text)
        used = int((directory / use_file).read_text().strip())
    except (OSError, ValueError):
        return None
    if limit >= _UNLIMITED:
        return None
    cache = 0
    try:
        for line in (directory / "memory.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == cache_key:
                cache = int(value)
                break
    except (OSError, ValueError):
        pass
    return Headroom(max(0, limit - max(0, used - cache)), f"the memory cgroup's limit of {format_bytes(limit)}")
