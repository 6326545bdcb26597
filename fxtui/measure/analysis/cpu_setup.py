"""How torch is set up to use the CPU: thread counts, affinity, and the libraries it was built with.

PyTorch's CPU performance guides start here: intra-op threads beyond the cores
the process may run on make threads take turns on a core (oversubscription), and a
build without oneDNN runs convolutions on slower fallback kernels. :func:`thread_limit`
sets the intra-op thread count for a block (a session, a ``threads=N`` what-if, the
peaks' benchmark); :func:`usable_cores` is how many cores this process may run on.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from fxtui.core.errors import FxtuiError

_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass(frozen=True, slots=True)
class ThreadInfo:
    """Thread settings and CPU build facts of this process, with warnings about them."""

    intra_op: int
    """``torch.get_num_threads()``: threads one operator may use."""
    inter_op: int
    """``torch.get_num_interop_threads()``: threads for independent operators run concurrently."""
    cores_available: int
    """CPUs this process may run on (its affinity mask)."""
    cpu_count: int
    """CPUs the machine has (``os.cpu_count()``)."""
    affinity: tuple[int, ...]
    env: tuple[tuple[str, str], ...]
    """``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS`` as set, ``""`` when unset."""
    parallel_backend: str
    """ATen's parallel backend, e.g. ``"OpenMP"``; ``""`` if torch did not say."""
    mkldnn: bool
    """oneDNN is built in and enabled (it provides the fast CPU convolutions)."""
    mkl: bool
    openmp: bool
    cpu_capability: str
    """The widest vector instruction set torch's kernels use, e.g. ``"AVX512"``."""
    libraries: tuple[str, ...]
    """Versions of the math libraries torch reports (OpenMP, MKL, oneDNN)."""
    warnings: tuple[str, ...]

    def lines(self) -> list[str]:
        """A short human-readable description for a headless report, warnings last."""
        env = ", ".join(f"{k}={v or 'unset'}" for k, v in self.env)
        out = [
            f"threads: {self.intra_op} intra-op, {self.inter_op} inter-op ({env})",
            f"cores: {self.cores_available} available to this process of {self.cpu_count} on the machine",
            f"backend: {self.parallel_backend or 'unknown'}; oneDNN {_yes(self.mkldnn)}, MKL {_yes(self.mkl)},"
            f" OpenMP {_yes(self.openmp)}; CPU capability {self.cpu_capability or 'unknown'}",
        ]
        out += [f"  {lib}" for lib in self.libraries]
        out += [f"warning: {w}" for w in self.warnings]
        return out


@contextlib.contextmanager
def thread_limit(threads: int | None) -> Iterator[int]:
    """Run torch's intra-op work on ``threads`` threads inside the block; yields the value in force."""
    if threads is None:
        yield torch.get_num_threads()
        return
    if threads < 1:
        raise FxtuiError(f"--threads must be at least 1, not {threads}")
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask; the machine's count where there is none)."""
    return len(_affinity()) or os.cpu_count() or 1


def _affinity() -> tuple[int, ...]:
    """The CPUs this process may run on; every CPU of the machine where the system has no affinity call."""
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS and Windows have no affinity call
        return tuple(range(os.cpu_count() or 1))


def thread_info() -> ThreadInfo:
    """Read the current thread settings and build information (cheap; no benchmark)."""
    intra = torch.get_num_threads()
    inter = torch.get_num_interop_threads()
    cpu_count = os.cpu_count() or 1
    affinity = _affinity()
    cores = len(affinity) or cpu_count
    env = tuple((k, os.environ.get(k, "")) for k in _ENV_VARS)
    parallel = torch.__config__.parallel_info()
    backend_match = re.search(r"ATen parallel backend: (.+)", parallel)
    backend = backend_match.group(1).strip() if backend_match else ""
    mkldnn = bool(torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled)
    mkl = bool(torch.backends.mkl.is_available())
    openmp = bool(torch.backends.openmp.is_available())
    try:
        capability = str(torch.backends.cpu.get_cpu_capability())
    except Exception:  # older builds lack it; the fact is optional
        capability = ""
    warnings = _warnings(intra, cores, cpu_count, env, mkldnn)
    return ThreadInfo(
        intra_op=intra,
        inter_op=inter,
        cores_available=cores,
        cpu_count=cpu_count,
        affinity=affinity,
        env=env,
        parallel_backend=backend,
        mkldnn=mkldnn,
        mkl=mkl,
        openmp=openmp,
        cpu_capability=capability,
        libraries=_libraries(parallel),
        warnings=warnings,
    )


def _warnings(
    intra: int, cores: int, cpu_count: int, env: tuple[tuple[str, str], ...], mkldnn: bool
) -> tuple[str, ...]:
    out = []
    if intra > cores:
        out.append(
            f"{intra} intra-op threads but only {cores} core{'s' if cores != 1 else ''} available to this process:"
            f" threads take turns on a core; set --threads {cores} or torch.set_num_threads({cores})"
        )
    for key, value in env:
        if value.isdigit() and int(value) > cores:
            out.append(f"{key}={value} exceeds the {cores} cores available to this process")
    if cores < cpu_count:
        # Not wrong in itself (taskset, containers), but it explains lower peaks than the machine's spec.
        out.append(f"this process may run on {cores} of the machine's {cpu_count} CPUs (affinity mask)")
    if not mkldnn:
        out.append("oneDNN (mkldnn) is unavailable or disabled: convolutions run on slower fallback kernels")
    return tuple(out)


def _libraries(parallel_info: str) -> tuple[str, ...]:
    """The version lines of OpenMP, MKL and oneDNN from ``torch.__config__.parallel_info()``."""
    keep = ("OpenMP", "Math Kernel Library", "MKL-DNN", "oneDNN")
    out = []
    for line in parallel_info.splitlines():
        text = line.strip()
        if text and not line.startswith(("\t", " ")) and any(k in text for k in keep) and ":" not in text:
            out.append(re.sub(r"\s*\(Git Hash [0-9a-f]+\)", "", text))
    return tuple(out)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"
