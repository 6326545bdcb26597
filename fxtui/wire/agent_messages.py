"""What the agent in a program tells its collector: :class:`Hello` when it starts, a :class:`Step` per step,
:class:`Bye` when the program ends.

Torch-free data: the agent (inside the user's program) makes them, the collector (:mod:`fxtui.jobs.collector`)
reads them without importing torch. They travel pickled over a local socket (:mod:`fxtui.agent.sender`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fxtui.core.op_nodes import EagerNode, OpTime, RootModule
from fxtui.core.op_sums import NodeSums, sums_of


@dataclass(frozen=True)
class Hello:
    """The program's agent is running."""

    pid: int
    argv: tuple[str, ...]
    torch: str
    threads: int
    rank: int | None = None
    """The process's rank in a distributed job (``RANK`` as torchrun sets it); None outside one."""
    world_size: int = 1
    host: str = ""
    node: int | None = None
    """The node (torchrun's ``GROUP_RANK``) of a job across nodes; None outside torchrun."""


@dataclass(frozen=True)
class GenerationCall:
    """One ``generate()`` call of the step (:mod:`fxtui.agent.generate_hook`)."""

    wall_ns: int
    ttft_ns: int
    """From the call to the second forward's start."""
    steps_ns: tuple[int, ...]
    """Each decode step: a forward's start to the next one's (the last: to the call's end)."""
    prompt_tokens: int
    new_tokens: int
    batch: int = 1
    kv_cache_bytes: int | None = None
    """Counted in sampled calls only."""
    kv_layer_bytes: tuple[int, ...] = ()
    cache: str = ""
    weight_bytes: int = 0
    """The model's parameters and buffers (sampled calls only)."""


@dataclass(frozen=True)
class Step:
    """One step: its wall time and phases; for a sampled step its ops too; the nodes and roots first seen in it."""

    index: int
    """The step's place among the steps of its kind (0: the first)."""
    kind: str
    """``train``, ``eval`` or ``generate`` (:data:`~fxtui.core.program_run.STEP_KINDS`)."""
    wall_ns: int
    phases_ns: tuple[int, ...]
    sampled: bool
    describing: bool
    """Sampled, and noting new nodes' inputs and source lines: its ops' times count (each is read around the op's
    own call), its wall time does not (it is slower)."""
    ops: list[OpTime] = field(default_factory=list)
    """(node id, ns, output shape, clock at its start) per op, in the order they ran: a step made without
    :attr:`sums` (the collector sums them itself). The agent sends :attr:`sums` and leaves this empty."""
    nodes: list[EagerNode] = field(default_factory=list)
    roots: list[RootModule] = field(default_factory=list)
    dropped: int = 0
    """Messages dropped before this one (the collector fell behind)."""
    start_ns: int = 0
    """The clock (``perf_counter_ns``: one clock for every process of a machine) when the step began."""
    generation: tuple[GenerationCall, ...] = ()
    """The step's ``generate()`` calls (a step is one call in a program without an optimizer)."""
    faults: int = -1
    """A sampled step's minor page faults (the program's process, every thread); -1 where not counted."""
    note: str = ""
    """Something the agent could not do, said once (a compiled graph whose kernels it cannot time)."""
    warm: bool = True
    """Past its kind's warm-up: counted in the figures."""
    holds: tuple[tuple[str, int], ...] = ()
    """What the step holds: ``forward`` (root calls), ``backward``, ``optimizer:AdamW`` (steps), ``data`` (batches)."""
    restart: bool = False
    """The figures of this kind so far are void: its steps held only part of an iteration (an optimizer seen late)."""
    aside: str = ""
    """Why fxtui left this step unsampled on purpose (:data:`~fxtui.core.step_aside.ASIDE`): its wall time is not a
    plain unsampled step's either."""
    wait_ns: int = -1
    """Time the thread that ran the step was ready to run but waited for a CPU (the kernel's run-queue delay, ns);
    -1 where the kernel does not say."""
    timer: str = ""
    """The per-op timer that timed a sampled step: ``mode`` (the dispatch mode) or ``native`` (``""``: unsampled)."""
    sums: NodeSums | None = None
    """A sampled step's ops per node, and a bounded sample of them raw (:mod:`fxtui.core.op_sums`)."""
    timer_why: str = ""
    """Why a sampled step the native timer was asked for was the dispatch mode's: its library is being built, or
    cannot be (``""``: the native timer ran, or was not asked for, or the step is one the mode times by design)."""
    after_ns: int = 0
    """What a sampled step cost the program after its wall time, until this message was made: its timer stopped,
    its ops resolved to nodes and summed (ns; the program loses it between its steps)."""

    def node_sums(self) -> NodeSums:
        """The step's ops per node: as sent, or summed from :attr:`ops`."""
        return self.sums if self.sums is not None else sums_of(self.ops)


@dataclass(frozen=True)
class Bye:
    """The program is ending."""

    steps: int
    failed: str = ""
    """Why the agent stopped watching early, when it did."""


Message = Hello | Step | Bye
