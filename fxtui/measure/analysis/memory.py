"""Where the memory goes: bytes each FX node creates, allocates and leaves alive, from one analysis pass.

Three figures per node, measured in one run of the model outside the timed runs:

* **output bytes** — the new memory holding the node's outputs, counted per storage. A view
  (``flatten``, ``getitem``, a ``reshape`` that needs no copy) or an in-place operator (``ReLU(inplace=True)``)
  shares its input's storage and creates **0** new bytes; its storage is counted once, at the node
  that allocated it.
* **allocated bytes** — everything the allocator handed out while the node ran: its outputs plus
  temporaries and workspaces freed before it returned. These come from the profiler's memory events
  (``profile_memory=True``) inside a range around the node, as :mod:`~fxtui.measure.analysis.aten`
  attributes operators.
* **live bytes** — the activation memory alive right after the node: every storage a node has
  created that a later node still reads (the graph's liveness; ``torch.fx.Interpreter`` frees a value
  after its last use, as the graph's own code does). Parameters, buffers and the model's inputs
  exist before and after the run and are counted apart. Values that flow from one graph to a later
  one (across a graph break, or a forward output saved for the backward graph) stay alive between
  the two graphs and are counted there too.
"""

from __future__ import annotations

import bisect
import resource
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from torch.fx.node import Node
from torch.profiler import ProfilerActivity, profile, record_function

from fxtui.core.errors import NodeError
from fxtui.core.findings import MemorySummary
from fxtui.measure.analysis.aten import _silenced_fd
from fxtui.measure.capture.captured import CapturedModel, GraphPart
from fxtui.measure.inputs import Inputs
from fxtui.measure.values import storage_block, tensors_in

#: Prefix of the profiler ranges the memory pass opens around nodes (distinct from the aten pass's).
RANGE_PREFIX = "fxtui-memory::"
_COMPUTING = ("call_module", "call_function", "call_method")
#: Device types whose memory events are host memory (as torch.autograd.profiler counts them).
_HOST_DEVICES = ("CPU", "MKLDNN", "IDEEP")


@dataclass(frozen=True, slots=True)
class NodeMemory:
    """The memory figures of one node in one run of the model, in bytes (see the module's docstring)."""

    output_bytes: int
    alloc_bytes: int | None
    """None when the profiler could not run (another profiler active)."""
    live_bytes: int
    saved_bytes: int = 0
    """In a training step, for a forward node: its outputs that a backward graph takes (saved for backward)."""
    page_faults: int = 0
    """Minor page faults of the process while the node ran (first touches of freshly mapped memory)."""

    @property
    def temp_bytes(self) -> int:
        """Allocated but not kept as output: temporaries and workspaces (0 when unknown)."""
        return max((self.alloc_bytes or 0) - self.output_bytes, 0)


@dataclass(frozen=True)
class MemoryProfile:
    """What the memory pass found: per-node figures keyed by display name, and the run's summary."""

    nodes: dict[str, NodeMemory]
    summary: MemorySummary


def measure_captured_memory(captured: CapturedModel, inputs: Inputs, *, quiet: bool = True) -> MemoryProfile:
    """Run ``captured`` once on ``inputs`` and measure every node's memory (one profiled, interpreted run).

    Raises :class:`NodeError` naming the node if the model fails. ``quiet`` as in
    :func:`~fxtui.measure.analysis.aten.program_aten_breakdown`.
    """
    tracker = _Tracker()
    events: list[Any] | None = None
    with captured.running():
        # Copied before the profiler starts (the copies are not the run's allocations), and inside the
        # run's autograd mode as the timed runs copy them: TorchDynamo guards on it, and inputs made
        # outside inference mode would make it compile new graphs that run past the parts.
        given = inputs.fresh()
        try:
            with _silenced_fd(2, quiet), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
                captured.run_each(given, tracker.visit)
            events = list(prof.profiler.kineto_results.events()) if prof.profiler is not None else None
        except RuntimeError as e:
            if isinstance(e, NodeError) or "profiler" not in str(e).lower():
                raise
            # Another profiler is active: the liveness figures do not need one, only the allocations.
            tracker = _Tracker()
            captured.run_each(inputs.fresh(), tracker.visit)
    allocs, high_water = _allocations(events) if events is not None else (None, None)
    return tracker.result(captured, inputs, allocs, high_water)


@dataclass
class _Flight:
    """A storage one graph call returned, and the later calls that took it as an input."""

    nbytes: int
    producer: str
    call: int
    phase: str
    consumers: list[int] = field(default_factory=list)
    consumer_phases: list[str] = field(default_factory=list)


@dataclass
class _Call:
    """One graph call of the run: its nodes' display names, what each created, what was live after each."""

    part: GraphPart
    output: list[int]
    live: list[int]
    faults: list[int]


class _Tracker:
    """Follows every graph call of one run: per-graph liveness, and storages passed between graphs."""

    def __init__(self) -> None:
        self.calls: list[_Call] = []
        self.flights: dict[int, _Flight] = {}

    def visit(self, part: GraphPart, args: tuple[Any, ...]) -> Any:
        index = len(self.calls)
        carried = set()
        for t in tensors_in(args):
            key, _ = storage_block(t)
            flight = self.flights.get(key)
            if flight is not None and flight.call < index:
                carried.add(key)
                if index not in flight.consumers:
                    flight.consumers.append(index)
                    flight.consumer_phases.append(part.phase)
        interp = _MemoryInterpreter(part, carried)
        out = interp.run(*args)
        self.calls.append(_Call(part, interp.output_bytes, interp.live_after(), interp.faults))
        for key, (nbytes, node) in interp.returned().items():
            self.flights[key] = _Flight(nbytes, part.names[node], index, part.phase)
        return out

    def result(
        self,
        captured: CapturedModel,
        inputs: Inputs,
        allocs: dict[str, int] | None,
        high_water: tuple[int, str] | None,
    ) -> MemoryProfile:
        # Between the call that returned a storage and the last call that takes it, the storage is held
        # by the code between graphs (TorchDynamo's frame, autograd's saved variables).
        between = [0] * len(self.calls)
        saved: dict[str, int] = {}
        for flight in self.flights.values():
            if not flight.consumers:
                continue
            for k in range(flight.call + 1, max(flight.consumers)):
                if k not in flight.consumers:
                    between[k] += flight.nbytes
            if flight.phase == "forward" and "backward" in flight.consumer_phases:
                saved[flight.producer] = saved.get(flight.producer, 0) + flight.nbytes
        output: dict[str, int] = {}
        live: dict[str, int] = {}
        faults: dict[str, int] = {}
        peak, peak_node = 0, ""
        phase_peaks: dict[str, int] = {}
        for call, extra in zip(self.calls, between, strict=True):
            for name, made, alive, faulted in zip(call.part.names, call.output, call.live, call.faults, strict=True):
                alive += extra
                faults[name] = faults.get(name, 0) + faulted
                output[name] = output.get(name, 0) + made  # a graph called twice creates its outputs twice
                live[name] = max(live.get(name, 0), alive)
                if alive > peak:
                    peak, peak_node = alive, name
                phase_peaks[call.part.phase] = max(phase_peaks.get(call.part.phase, 0), alive)
        nodes = {
            name: NodeMemory(
                made, None if allocs is None else allocs.get(name, 0), live[name], saved.get(name, 0), faults[name]
            )
            for name, made in output.items()
        }
        rss, max_rss = _rss()
        summary = MemorySummary(
            peak_live_bytes=peak,
            peak_node=peak_node,
            param_bytes=_bytes_once((*captured.root.parameters(), *captured.root.buffers())),
            input_bytes=_bytes_once(inputs.tensors()),
            high_water_bytes=high_water[0] if high_water else None,
            high_water_node=high_water[1] if high_water else "",
            rss_bytes=rss,
            max_rss_bytes=max_rss,
            saved_bytes=sum(saved.values()) if captured.training else None,
            forward_peak_bytes=phase_peaks.get("forward") if captured.training else None,
            backward_peak_bytes=phase_peaks.get("backward") if captured.training else None,
        )
        return MemoryProfile(nodes, summary)


class _MemoryInterpreter(torch.fx.Interpreter):
    """Runs each node inside a profiler range and records which storages it creates and how long they live."""

    def __init__(self, part: GraphPart, carried: set[int]) -> None:
        super().__init__(part.gm)
        self.part = part
        self.carried = carried
        nodes = list(part.gm.graph.nodes)
        self.position = {n: i for i, n in enumerate(nodes)}
        # Index of each node's last user (its own index when nothing reads it): the interpreter frees
        # the value right after that user runs.
        self.last_use = [max((self.position[u] for u in n.users), default=i) for i, n in enumerate(nodes)]
        self.dies_after: dict[int, list[int]] = {}
        for i, last in enumerate(self.last_use):
            self.dies_after.setdefault(last, []).append(i)
        self.output_bytes = [0] * len(nodes)
        self.faults = [0] * len(nodes)
        # Storages referenced by values still held, by address: {address: [storage id, values holding it]}.
        self.held: dict[int, list[int]] = {}
        self.node_storages: list[tuple[int, ...]] = [()] * len(nodes)
        self.storage_bytes: list[int] = []
        self.storage_born: list[int] = []
        self.storage_counted: list[bool] = []
        self.storage_last: list[int] = []
        self.storage_keys: list[int] = []

    def run_node(self, n: Node) -> Any:
        i = self.position[n]
        self._release(i - 1)
        name = self.part.names[i]
        try:
            with record_function(RANGE_PREFIX + name):
                faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                out = super().run_node(n)
                self.faults[i] = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
        except Exception as e:
            raise NodeError(name, f"node {name} raised {type(e).__name__} while measuring its memory: {e}") from e
        ids = []
        for t in tensors_in(out):
            key, nbytes = storage_block(t)
            if nbytes == 0:
                continue
            held = self.held.get(key)
            if held is None:
                # An address no held value uses is new memory (an address freed earlier and reused is new too).
                sid = len(self.storage_bytes)
                counted = n.op in _COMPUTING or (n.op == "placeholder" and key in self.carried)
                self.storage_bytes.append(nbytes)
                self.storage_born.append(i)
                self.storage_counted.append(counted)
                self.storage_last.append(i)
                self.storage_keys.append(key)
                if n.op in _COMPUTING:
                    self.output_bytes[i] += nbytes
                held = self.held[key] = [sid, 0]
            if held[0] not in ids:
                ids.append(held[0])
                held[1] += 1
        self.node_storages[i] = tuple(ids)
        for sid in ids:
            self.storage_last[sid] = max(self.storage_last[sid], self.last_use[i])
        if n.op == "output":
            self._release(i)
        return out

    def _release(self, position: int) -> None:
        """Forget the values whose last user ran at ``position``: the interpreter has dropped them."""
        for j in self.dies_after.pop(position, ()):
            for sid in self.node_storages[j]:
                key = self.storage_keys[sid]
                held = self.held.get(key)
                if held is not None and held[0] == sid:
                    held[1] -= 1
                    if held[1] == 0:
                        del self.held[key]

    def live_after(self) -> list[int]:
        """Activation bytes alive right after each node: created by then, still read by a later node."""
        delta = [0] * (len(self.output_bytes) + 1)
        for nbytes, born, last, counted in zip(
            self.storage_bytes, self.storage_born, self.storage_last, self.storage_counted, strict=True
        ):
            if counted and last > born:
                delta[born] += nbytes
                delta[last] -= nbytes
        out, running = [], 0
        for d in delta[:-1]:
            running += d
            out.append(running)
        return out

    def returned(self) -> dict[int, tuple[int, int]]:
        """Storages the graph returns that its nodes created: {address: (bytes, creating node's position)}."""
        found: dict[int, tuple[int, int]] = {}
        output = next(n for n in reversed(self.part.gm.graph.nodes) if n.op == "output")
        for sid in self.node_storages[self.position[output]]:
            if self.storage_counted[sid]:
                found[self.storage_keys[sid]] = (self.storage_bytes[sid], self.storage_born[sid])
        return found


def _allocations(events: Iterable[Any]) -> tuple[dict[str, int], tuple[int, str] | None]:
    """Bytes allocated inside each node's range, and the allocator's high-water mark with its node."""
    ranges: list[tuple[int, int, str]] = []
    memory: list[tuple[int, int]] = []
    for ev in events:
        name = ev.name()
        if name.startswith(RANGE_PREFIX):
            ranges.append((ev.start_ns(), ev.end_ns(), name[len(RANGE_PREFIX) :]))
        elif name == "[memory]" and str(ev.device_type()).rpartition(".")[2] in _HOST_DEVICES:
            memory.append((ev.start_ns(), ev.nbytes()))
    ranges.sort()
    memory.sort()
    starts = [r[0] for r in ranges]

    def node_at(ts: int) -> str:
        k = bisect.bisect_right(starts, ts) - 1
        return ranges[k][2] if k >= 0 and ts <= ranges[k][1] else ""

    allocs: dict[str, int] = {}
    held = top = 0
    top_node = ""
    for ts, nbytes in memory:
        node = node_at(ts)
        if nbytes > 0 and node:
            allocs[node] = allocs.get(node, 0) + nbytes
        held += nbytes
        if held > top:
            top, top_node = held, node
    return allocs, (top, top_node) if memory else None


def _bytes_once(tensors: Sequence[torch.Tensor]) -> int:
    """Bytes of the storages behind ``tensors``, each storage once (tied weights count once)."""
    seen: dict[int, int] = {}
    for t in tensors:
        key, nbytes = storage_block(t)
        seen[key] = nbytes
    return sum(seen.values())


def _rss() -> tuple[int | None, int | None]:
    """The process's resident bytes now, and its high-water mark (Linux figures; None where unknown)."""
    now = None
    try:
        with open("/proc/self/statm") as f:
            now = int(f.read().split()[1]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux
    return now, peak or None
