"""What the user asked to profile, as plain data (no torch: it crosses into the engine's child process)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fxtui.core.errors import FxtuiError
from fxtui.core.filters import FilterSpec


@dataclass(frozen=True)
class Target:
    """A model to profile and the inputs to give it, as the user named them."""

    target: str
    """``resnet18``, ``hf:bert``, ``package.module:attr`` or ``path/file.py:attr``."""
    input_shapes: tuple[tuple[int, ...], ...] | None = None
    dtype: str | None = None
    submodule: str | None = None
    capture: str = "auto"
    """``auto``, ``fx`` or ``dynamo`` (see :mod:`fxtui.measure.capture`)."""
    hf_config: tuple[tuple[str, str], ...] = ()
    """``--hf-config`` overrides for an ``hf:`` target, as (key, value text) pairs."""
    train: bool = False
    """Profile a whole training step (forward, loss, backward, optimizer) instead of inference."""
    optimizer: str = "sgd"
    """The optimizer of a training step: ``sgd`` or ``adamw``."""
    generate: int = 0
    """Profile ``generate()`` calls of this many new tokens (a causal language model) instead of one forward."""
    compile: bool = False
    """Compile the model with Inductor and time its kernels, the eager model measured beside it."""
    compile_mode: str = "default"
    """Inductor's mode with ``compile``: ``default`` or ``max-autotune-no-cudagraphs``."""


def parse_shape(text: str) -> tuple[int, ...]:
    """Parse ``"5,3,224,224"``, ``"5x3x224x224"`` or ``"5×3×224×224"`` into a tuple of sizes."""
    parts = re.split(r"\s*[,x×X]\s*", text.strip())
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise FxtuiError(
            f"cannot read the shape {text!r}: write sizes separated by commas or x, like 1,3,224,224"
        ) from None
    if any(s < 1 for s in shape):
        raise FxtuiError(f"cannot use the shape {text!r}: every size must be at least 1")
    return shape


def parse_hf_config(text: str) -> tuple[tuple[str, str], ...]:
    """``"num_hidden_layers=2,hidden_size=64"`` → ``(("num_hidden_layers", "2"), ("hidden_size", "64"))``."""
    pairs = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise FxtuiError(f"--hf-config takes key=value pairs separated by commas, not {item!r}")
        pairs.append((key.strip(), value.strip()))
    return tuple(pairs)


@dataclass(frozen=True)
class ModelSettings:
    """What the user asked of one profile of a model (``fxtui MODEL``), whole and never changed once made (the
    command line builds it; the headless command and the app's engine process read it).

    What was measured is a :class:`~fxtui.report.data.ReportData`; how it is shown is
    :class:`OutputSettings`.
    """

    target: Target
    threads: tuple[int, ...] = ()
    """Intra-op thread counts: the session runs at the first; each other one is measured as ``threads=N``."""
    runs: int = 30
    """Profiled runs of a headless profile."""
    warmup: int = 3
    malloc: str = "keep"
    """``keep``: freed memory stays in the process (:mod:`fxtui.measure.allocator`); ``glibc``: its own policy."""
    keep_disturbed: bool = False
    memory: bool = False
    """Measure each node's memory in one run before the timed ones."""
    what_ifs: tuple[str, ...] = ()
    """What-ifs to measure after the profile (``--what-if`` and the extra thread counts)."""
    hints: bool = False
    aten: int | None = None
    """Explain the top N nodes of the table with their aten operators."""
    analyse: bool = True
    """Measure FLOPs, bytes, source lines and the machine's peaks (about a second more)."""

    @property
    def session_threads(self) -> int | None:
        """The thread count the session runs at (None: torch's default)."""
        return self.threads[0] if self.threads else None


@dataclass(frozen=True)
class OutputSettings:
    """How the headless command shows a profile: the table, its filters, and the files it writes."""

    sort: str = "median"
    top: int | None = 20
    spec: FilterSpec = field(default_factory=FilterSpec)
    """Which nodes the table shows (its path filter applies to ``--modules`` too)."""
    modules: bool = False
    """A table of modules instead of nodes."""
    columns: tuple[str, ...] = ()
    exports: tuple[tuple[str, str], ...] = ()
    """(format, path) pairs: ``("json", "run.json")`` (:data:`fxtui.report.export.FORMATS`)."""
    kind: str = ""
    """A program's profile: the kind of step whose nodes the table shows (``train``, ``eval``, ``generate``; ``""``:
    training when there is any)."""

    @property
    def export_paths(self) -> dict[str, str]:
        """Format → path of every export asked for."""
        return dict(self.exports)


@dataclass(frozen=True)
class ProgramSettings:
    """What the user asked of ``fxtui run``: the program to run and how to sample its steps."""

    command: tuple[str, ...]
    """``("train.py", "--epochs", "3")`` or ``("-m", "pkg.train", …)``: what ``python`` would be given."""
    warmup: int = 5
    """Steps at the start left out of every figure."""
    every: int = 0
    """Time one step in ``every`` per node (0: as often as the budget allows)."""
    budget: float = 0.02
    """The share of the program's time the sampled steps may cost it."""
    keep_freed_memory: bool = False
    """Run the program with glibc keeping the memory it frees (no page faults for blocks allocated afresh each
    step; its peak stays resident)."""
    keep_disturbed: bool = False
    """Keep the sampled steps that waited for a CPU beyond the threshold in the node figures."""
    timer: str = "native"
    """The per-op timer of sampled steps: ``native`` (a C++ RecordFunction callback; the dispatch mode while its
    library is built, and where it cannot be) or ``mode`` (:class:`~fxtui.wire.agent_contract.AgentOptions`)."""

    def program_env(self) -> dict[str, str]:
        """What the program's environment gets besides the caller's (glibc reads these as it starts)."""
        if not self.keep_freed_memory:
            return {}
        return {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(2**31 - 1)}
