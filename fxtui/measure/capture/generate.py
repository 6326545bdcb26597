"""``--generate N``: one run is one ``generate()`` call, every ATen op timed and charged to its module and phase.

Built on the eager capture's per-op timer (:mod:`fxtui.ops.recorder`): nothing is traced,
so a cache that grows by one token per step costs nothing to follow, where a captured graph
would be specialised to each length (TorchDynamo recompiles as the cache grows; see the README's
*Text generation* for what was measured). Each outermost call of the model inside ``generate()``
is a forward; a hook on the model notes where each starts, and the op records between two starts
are one *step*: the first the **prefill** (from the call of ``generate()``, so the setup and the
choice of the first token are in it), every other a **decode** step. Each step's records are
named apart (a repeat in a module counts from 1 in every step), so an op is the same node in
every decode step and a node's decode time is per token: its time over the call's decode steps
÷ their number. Times per decode step, the step's context length, and the cache's bytes are
kept as :class:`~fxtui.core.generation.GenerationSummary` (``GenerationRuns``, the captured model's notes).

The uninstrumented calls run the same ``generate()`` with the same hook (one clock reading per
forward), so the time to first token and per token come from calls nothing else slows. Generation
is greedy and fixed-length (``min_new_tokens = max_new_tokens``): an end-of-sequence token cannot
end a call early, so every call does the same work.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import math
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

import numpy as np
import torch

from fxtui.core.errors import FxtuiError, NodeError, exception_text
from fxtui.core.generation import MAX_BINS, GenerationSummary, phase_share, split_steps
from fxtui.core.op_graph import eager_graph
from fxtui.core.op_nodes import OpTime
from fxtui.core.snapshot import GraphInfo
from fxtui.measure.capture.captured import CapturedModel
from fxtui.measure.capture.eager import EagerTimer
from fxtui.measure.capture.generate_model import check_can_generate, has_eos, pad_token, quiet_transformers
from fxtui.measure.inputs import Inputs
from fxtui.ops.model_bytes import cache_bytes, weight_bytes
from fxtui.ops.recorder import OpRecorder
from fxtui.ops.records import ModuleEnter, PhaseEnter, make

_clock = time.perf_counter_ns
#: Calls whose decode steps the time per token and the per-position figures come from.
RECENT_CALLS = 32
#: Profiled calls whose per-node, per-position times are kept (their median is shown).
RECENT_PROFILED = 5


class GenerationRuns:
    """The ``generate()`` calls of one captured model: how to make one, and what their steps took (its notes)."""

    def __init__(self, module: torch.nn.Module, new_tokens: int, prompt_tokens: int, batch: int, eos: bool) -> None:
        self.root = module
        self.new_tokens = new_tokens
        self.prompt_tokens = prompt_tokens
        self.batch = batch
        self.eos_suppressed = eos
        steps = max(new_tokens - 1, 1)
        self.bin_steps = math.ceil(steps / MAX_BINS)
        self.bins = math.ceil(steps / self.bin_steps)
        pad = pad_token(module)
        self.options: dict[str, Any] = dict(
            max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False, num_beams=1, use_cache=True
        )
        if pad is not None:
            self.options["pad_token_id"] = pad
        self.weight_bytes = weight_bytes(module)
        self.cache: tuple[int, tuple[int, ...], str] | None = None
        self.last_forwards = 0
        self.decode_names: list[str] = []
        """The decode nodes' names, in the order of :attr:`node_bins`' rows."""
        self.reset()

    def reset(self) -> None:
        """Forget the calls so far."""
        self.plain_calls: collections.deque[int] = collections.deque(maxlen=256)
        self.plain_ttft: collections.deque[int] = collections.deque(maxlen=256)
        self.plain_mean: collections.deque[float] = collections.deque(maxlen=256)
        self.plain_steps: collections.deque[list[int]] = collections.deque(maxlen=RECENT_CALLS)
        self.profiled_calls: collections.deque[int] = collections.deque(maxlen=256)
        self.profiled_ttft: collections.deque[int] = collections.deque(maxlen=256)
        self.profiled_mean: collections.deque[float] = collections.deque(maxlen=256)
        self.node_bins: collections.deque[np.ndarray] = collections.deque(maxlen=RECENT_PROFILED)
        self.last_unit_ns = 0

    # -- calls ---------------------------------------------------------------------------------

    def generate(self, inputs: Inputs) -> Any:
        """One fixed-length greedy ``generate()`` call on ``inputs``."""
        with quiet_transformers():
            return self.root.generate(*inputs.args, **{**dict(inputs.kwargs), **self.options})  # type: ignore[operator]

    @contextlib.contextmanager
    def forwards(self, recorder: OpRecorder | None = None) -> Iterator[tuple[list[int], list[int]]]:
        """Inside the block, each forward's start (clock) and, while ``recorder`` runs, its first record's index."""
        starts: list[int] = []
        marks: list[int] = []
        root = self.root

        def pre(module: torch.nn.Module, args: Any) -> None:
            starts.append(_clock())
            if recorder is not None:
                records = recorder.records
                # The recorder's global hook ran first and noted the model's entry: the step starts there.
                at = len(records) - 1
                entered = at >= 0 and type(records[at]) is ModuleEnter and records[at].module is root  # type: ignore[union-attr]
                marks.append(at if entered else at + 1)

        def post(module: torch.nn.Module, args: Any, out: Any) -> None:
            if self.cache is None:
                self._last_cache = getattr(out, "past_key_values", None)

        handles = [root.register_forward_pre_hook(pre), root.register_forward_hook(post)]
        try:
            yield starts, marks
        finally:
            for handle in handles:
                handle.remove()
            if self.cache is None and getattr(self, "_last_cache", None) is not None:
                self.cache = cache_bytes(self._last_cache)
            self._last_cache = None

    def plain(self, inputs: Inputs) -> Any:
        """An uninstrumented call (the hook's clock readings only); its steps are noted."""
        with self.forwards() as (starts, _):
            t0 = _clock()
            out = self.generate(inputs)
            t1 = _clock()
        ttft, steps = split_steps(t0, starts, t1)
        self.plain_calls.append(t1 - t0)
        self.plain_ttft.append(ttft)
        mean = statistics.fmean(steps) if steps else 0.0
        self.plain_mean.append(mean)
        self.plain_steps.append(steps)
        self.last_unit_ns = ttft + round(mean)
        self.last_forwards = len(starts)
        return out

    def whole_run(self) -> tuple[float, float, float] | None:
        """p25, median and p75 of the uninstrumented calls so far, seconds (a what-if's figures: whole calls)."""
        if not self.plain_calls:
            return None
        q = np.quantile(np.asarray(self.plain_calls, dtype=np.float64), [0.25, 0.5, 0.75]) / 1e9
        return float(q[0]), float(q[1]), float(q[2])

    def run_ns(self, wall_ns: int) -> int:
        """What the uninstrumented call just made counts as in the figures: its prompt and one mean token."""
        return self.last_unit_ns or wall_ns

    def add_profiled(self, wall_ns: int, ttft_ns: int, mean_ns: float, bins: np.ndarray | None) -> None:
        """A profiled call: its wall time, time to first token, mean step, and the decode nodes' time per bin."""
        self.profiled_calls.append(wall_ns)
        self.profiled_ttft.append(ttft_ns)
        self.profiled_mean.append(mean_ns)
        if bins is not None:
            self.node_bins.append(bins)

    # -- figures -------------------------------------------------------------------------------

    def summary(self) -> GenerationSummary:
        """The calls so far as figures."""
        cache = self.cache
        steps = [s for call in self.plain_steps for s in call]
        ttft = sorted(self.plain_ttft)
        node_positions: dict[str, tuple[float, ...]] = {}
        if self.node_bins and self.decode_names:
            medians = np.median(np.stack(list(self.node_bins)), axis=0) / 1e9
            node_positions = {n: tuple(map(float, row)) for n, row in zip(self.decode_names, medians, strict=False)}
        return GenerationSummary(
            new_tokens=self.new_tokens,
            prompt_tokens=self.prompt_tokens,
            batch=self.batch,
            calls=len(self.plain_calls),
            generate_s=_median_s(self.plain_calls),
            generate_profiled_s=_median_s(self.profiled_calls),
            ttft_s=_median_s(ttft),
            ttft_q25_s=_quantile_s(ttft, 0.25),
            ttft_q75_s=_quantile_s(ttft, 0.75),
            tpot_s=_median_s(steps),
            tpot_p90_s=_quantile_s(sorted(steps), 0.9),
            tpot_mean_s=_median_s(self.plain_mean),
            profiled_ttft_s=_median_s(self.profiled_ttft),
            profiled_tpot_mean_s=_median_s(self.profiled_mean),
            positions=tuple(self.prompt_tokens + 1 + b * self.bin_steps for b in range(self.bins)),
            bin_steps=self.bin_steps,
            position_s=self._position_s(),
            node_positions=node_positions,
            kv_cache_bytes=cache[0] if cache else None,
            kv_layer_bytes=cache[1] if cache else (),
            cache=cache[2] if cache else "",
            weight_bytes=self.weight_bytes,
            eos_suppressed=self.eos_suppressed,
            forwards=self.last_forwards,
        )

    def _position_s(self) -> tuple[float, ...]:
        """Per bin, the median over the recent calls of the bin's mean step."""
        per_call = [bin_means(steps, self.bin_steps, self.bins) for steps in self.plain_steps if steps]
        if not per_call:
            return ()
        return tuple(float(v) / 1e9 for v in np.median(np.array(per_call), axis=0))

    def fields(self) -> dict[str, Any]:
        """What every snapshot carries besides the statistics."""
        return {"generation": self.summary()}

    def shares(self, phases: Sequence[str], medians: Sequence[float]) -> list[float]:
        """Each node's median as a share of its phase (percent)."""
        summary = self.summary()
        return [phase_share(p, m, summary) for p, m in zip(phases, medians, strict=True)]


def bin_means(values: Sequence[float], size: int, bins: int) -> list[float]:
    """Means of consecutive runs of ``size`` values, ``bins`` of them (missing ones: the last mean)."""
    out: list[float] = []
    for b in range(bins):
        chunk = values[b * size : (b + 1) * size]
        out.append(statistics.fmean(chunk) if chunk else (out[-1] if out else 0.0))
    return out


class GenerateTimer(EagerTimer):
    """Times one ``generate()`` call per ATen op, step by step (as a :class:`~fxtui.measure.timing.ModelTimer` does).

    ``last_ns`` per node: a prefill node's time in the call, a decode node's time per decode step.
    ``last_run_ns``: the call's time to first token and its mean decode step (what a run counts as).
    """

    capture = "generate"

    def __init__(
        self, captured: CapturedModel, clock: Callable[[], int] = _clock, clock_overhead_ns: int | None = None
    ):
        super().__init__(captured, clock, clock_overhead_ns)
        self.runs = cast(GenerationRuns, captured.notes)
        self.phases: list[str] = []
        self._decode_rows: dict[int, int] = {}

    def run(self, inputs: Inputs) -> Any:
        """One ``generate()`` call on ``inputs``, every op timed. Returns its output (the token ids)."""
        first = self.meta is None
        runs, recorder = self.runs, self.recorder
        with runs.forwards(recorder) as (starts, marks):
            recorder.start(stacks=first)
            t0 = self.clock()
            try:
                out = runs.generate(inputs)
            except Exception as e:  # the model's own failure: one sentence (the session keeps going, or says so)
                recorder.take()
                raise NodeError("", f"generate() raised {exception_text(e)}") from e
            finally:
                t1 = self.clock()
                recorder.stop()
        self.last_run_start_ns = t0
        records = recorder.take()
        ttft, steps = split_steps(t0, starts, t1)
        bounds = [0, *marks[1:], len(records)]
        segments = [
            self.namer.resolve([make(PhaseEnter, ("prefill" if k == 0 else "decode", 0, None)), *records[a:b]])
            for k, (a, b) in enumerate(itertools.pairwise(bounds))
        ]
        if first:
            self._name_nodes()
        bins = self._times(segments)
        mean = statistics.fmean(steps) if steps else 0.0
        self.last_run_ns = ttft + round(mean)
        runs.add_profiled(t1 - t0, ttft, mean, bins)
        runs.last_forwards = len(starts)
        return out

    def _times(self, segments: list[list[OpTime]]) -> np.ndarray | None:
        """Each node's time (prefill per call, decode per step) into ``last_ns``; the decode nodes' times per bin."""
        known = len(self.names)
        ns = [0] * known
        overhead = self.clock_overhead_ns
        runs = self.runs
        decode_steps = max(len(segments) - 1, 1)
        rows = self._decode_rows
        bins = np.zeros((len(rows), runs.bins)) if rows else None
        counts = [0] * runs.bins
        for k, ops in enumerate(segments):
            b = min((k - 1) // runs.bin_steps, runs.bins - 1) if k else -1
            if k:
                counts[b] += 1
            for node, duration, _shape, _began in ops:
                d = max(duration - overhead, 0)
                if node >= known:
                    self.captured.late_graphs += 1  # a code path the first call did not take: timed in no node
                    continue
                ns[node] += d
                if k and bins is not None and (row := rows.get(node)) is not None:
                    bins[row, b] += d
        for node, phase in enumerate(self.phases):
            if phase == "decode":
                ns[node] = round(ns[node] / decode_steps)
        if bins is not None:
            bins /= np.maximum(np.array(counts, dtype=np.float64), 1.0)
        self.last_ns, self.last_start_ns = ns, [self.last_run_start_ns] * known
        return bins

    def _name_nodes(self) -> None:
        """The nodes of the first call, described once, and each node's phase (prefill or decode)."""
        super()._name_nodes()
        self.phases = [n.phase for n in self.nodes]
        decode = [i for i, p in enumerate(self.phases) if p == "decode"]
        self._decode_rows = {node: row for row, node in enumerate(decode)}
        self.runs.decode_names = [self.names[i] for i in decode]


def _describe(timer: GenerateTimer, *, model: str, inputs: tuple[str, ...], dtype: str, threads: int) -> GraphInfo:
    return eager_graph(
        timer.nodes, timer.roots, model=model, inputs=inputs, dtype=dtype, threads=threads, capture="generate"
    )


def _median_s(values: Sequence[float]) -> float | None:
    return statistics.median(values) / 1e9 if values else None


def _quantile_s(ordered: Sequence[float], q: float) -> float | None:
    if not ordered:
        return None
    return float(np.quantile(np.asarray(ordered, dtype=np.float64), q)) / 1e9


def capture_generate(
    module: torch.nn.Module,
    inputs: Inputs,
    *,
    name: str = "model",
    new_tokens: int = 32,
    reason: str = "",
    probe: bool = True,
) -> CapturedModel:
    """The model's ``generate()`` captured: a run is one call of ``new_tokens`` tokens, timed per op and step.

    ``probe=False`` trusts that the model is causal (:func:`check_can_generate`).
    """
    if new_tokens < 1:
        raise FxtuiError(f"--generate must be at least 1, not {new_tokens}")
    started = time.perf_counter()
    batch, length = check_can_generate(module, inputs, name, new_tokens, probe)
    runs = GenerationRuns(module, new_tokens, length, batch, has_eos(module))
    captured = CapturedModel(
        capture="generate",
        root=module,
        call=runs.plain,
        reason=reason,
        timer=lambda **kwargs: GenerateTimer(captured, **kwargs),
        describe=_describe,
        module_classes={"": type(module).__name__},
        notes=runs,
        renew=lambda other: capture_generate(
            other, inputs, name=name, new_tokens=new_tokens, reason=reason, probe=False
        ),
    )
    captured.seconds = time.perf_counter() - started
    return captured
