"""Text generation as data: what one ``generate()`` call measured — time to first token, time per token, the cache.

Torch-free, for the app, the reports and ``fxtui diff``. A generation is profiled one
``generate()`` call per run (``--generate N`` on a model; ``fxtui run`` on a script that
calls it). Each outermost call of the model inside it is a *forward*: the first is the
**prefill** (the whole prompt), each later one a **decode** step (one token against the
cache). A step spans from the start of its forward to the start of the next one, so it holds
the loop's own work too (choosing the token, the stopping check); the first step, from the
call of ``generate()`` on, is the time to first token, and the steps add up to the call.

Node times: a prefill node's time is per call, a decode node's **per token** (its time over
the call's decode steps ÷ their number), so Σ decode node medians is comparable to the time
per output token. For the figures every run is counted as *the prompt and one token*
(time to first token + the mean decode step): Σ node medians ÷ that is the fidelity, and a
node's share is of its own phase (:func:`phase_share`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fxtui.core.units import format_bytes, format_seconds

#: The phases of a generation's nodes, in the order a call runs them.
GENERATE_PHASES = ("prefill", "decode")
#: Decode positions are kept in at most this many bins (a plot's width; the JSON's per-position list).
MAX_BINS = 64


@dataclass(frozen=True, slots=True)
class GenerationSummary:
    """The figures of the ``generate()`` calls so far: uninstrumented unless said otherwise (seconds, bytes)."""

    new_tokens: int
    """Tokens generated per sequence per call (fixed: the end-of-sequence token cannot stop it early)."""
    prompt_tokens: int
    """Tokens of the prompt per sequence (the longest one's, for the user's own calls)."""
    batch: int = 1
    """Sequences per call."""
    calls: int = 0
    """Uninstrumented calls the figures come from."""
    generate_s: float | None = None
    """Median wall time of a whole uninstrumented ``generate()`` call."""
    generate_profiled_s: float | None = None
    """The same for the profiled calls (every ATen op timed)."""
    ttft_s: float | None = None
    """Time to first token: median over the calls, from calling ``generate()`` to the second forward's start."""
    ttft_q25_s: float | None = None
    ttft_q75_s: float | None = None
    tpot_s: float | None = None
    """Time per output token: the median decode step over every decode step of the recent calls."""
    tpot_p90_s: float | None = None
    tpot_mean_s: float | None = None
    """Median over the calls of each call's mean decode step: the unit of the decode nodes' times."""
    profiled_ttft_s: float | None = None
    """Time to first token of the profiled calls (the prefill share's reference)."""
    profiled_tpot_mean_s: float | None = None
    """Mean decode step of the profiled calls (the decode share's reference)."""
    positions: tuple[int, ...] = ()
    """For each bin of decode steps, the context length (tokens attended) at its first step."""
    bin_steps: int = 1
    """Decode steps per bin (1 unless more steps than :data:`MAX_BINS`)."""
    position_s: tuple[float, ...] = ()
    """Per bin, the median uninstrumented decode step (seconds)."""
    node_positions: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    """Per decode node, its median time per bin in the profiled calls (seconds)."""
    kv_cache_bytes: int | None = None
    """The cache's tensors at the end of a call, all layers (None when the model kept no cache)."""
    kv_layer_bytes: tuple[int, ...] = ()
    """The same per layer."""
    cache: str = ""
    """The cache's class (``DynamicCache``)."""
    weight_bytes: int = 0
    """The model's parameters and buffers."""
    eos_suppressed: bool = False
    """The model has an end-of-sequence token, kept from ending the call early (fixed-length generation)."""
    recompiles: int = 0
    """Graphs compiled after the first (a compiled capture); 0 for the eager capture."""
    forwards: int = 0
    """Forwards in the latest call (1 + decode steps)."""
    forced: bool = True
    """fxtui made the calls, greedy and fixed-length (``--generate``); False: a program's own calls (``fxtui run``),
    whose prompts and lengths are its own (the figures: its latest call's)."""

    @property
    def decode_steps(self) -> int:
        """Decode steps per call: every new token but the first, which the prefill chooses."""
        return max(self.new_tokens - 1, 0)

    @property
    def tokens_per_s(self) -> float | None:
        """Generated tokens (all sequences) per second of a whole uninstrumented call."""
        return self.new_tokens * self.batch / self.generate_s if self.generate_s else None

    @property
    def decode_tokens_per_s(self) -> float | None:
        """Tokens per second while decoding: the batch over the mean decode step."""
        return self.batch / self.tpot_mean_s if self.tpot_mean_s else None

    @property
    def unit_s(self) -> float | None:
        """What a run counts as in the figures: the time to first token and one mean decode step."""
        if self.ttft_s is None:
            return None
        return self.ttft_s + (self.tpot_mean_s or 0.0)

    def reference(self, phase: str) -> float | None:
        """What a node of ``phase`` is a share of: the profiled time to first token, or the profiled mean step (the
        uninstrumented one's while no profiled call counts: the first sampled call notes its nodes' inputs, and its
        time is no figure)."""
        if phase == "prefill":
            return self.profiled_ttft_s or self.ttft_s
        return self.profiled_tpot_mean_s or self.tpot_mean_s

    def to_dict(self) -> dict[str, object]:
        """JSON-ready: the figures, then ``decode_positions`` (one record per bin) and the cache."""
        return {
            "new_tokens": self.new_tokens,
            "prompt_tokens": self.prompt_tokens,
            "batch": self.batch,
            "calls": self.calls,
            "decode_steps": self.decode_steps,
            "generate_s": self.generate_s,
            "generate_profiled_s": self.generate_profiled_s,
            "ttft_s": self.ttft_s,
            "ttft_range_s": [self.ttft_q25_s, self.ttft_s, self.ttft_q75_s],
            "tpot_s": {"median": self.tpot_s, "p90": self.tpot_p90_s, "mean": self.tpot_mean_s},
            "tokens_per_s": self.tokens_per_s,
            "decode_tokens_per_s": self.decode_tokens_per_s,
            "profiled_ttft_s": self.profiled_ttft_s,
            "profiled_tpot_mean_s": self.profiled_tpot_mean_s,
            "kv_cache_bytes": self.kv_cache_bytes,
            "kv_layer_bytes": list(self.kv_layer_bytes),
            "cache": self.cache,
            "weight_bytes": self.weight_bytes,
            "eos_suppressed": self.eos_suppressed,
            "recompiles": self.recompiles,
            "forwards": self.forwards,
            "forced": self.forced,
            "bin_steps": self.bin_steps,
            "decode_positions": [
                {"context": p, "step_s": s} for p, s in zip(self.positions, self.position_s, strict=False)
            ],
            "node_positions": {name: list(values) for name, values in self.node_positions.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> GenerationSummary:
        """The summary :meth:`to_dict` wrote."""
        tpot = data.get("tpot_s") or {}
        ttft_range = data.get("ttft_range_s") or [None, None, None]
        positions = data.get("decode_positions") or []
        nodes = data.get("node_positions") or {}
        assert isinstance(tpot, Mapping) and isinstance(ttft_range, Sequence)
        assert isinstance(positions, Sequence) and isinstance(nodes, Mapping)
        return cls(
            new_tokens=int(data.get("new_tokens", 0)),  # type: ignore[call-overload]
            prompt_tokens=int(data.get("prompt_tokens", 0)),  # type: ignore[call-overload]
            batch=int(data.get("batch", 1)),  # type: ignore[call-overload]
            calls=int(data.get("calls", 0)),  # type: ignore[call-overload]
            generate_s=_opt(data.get("generate_s")),
            generate_profiled_s=_opt(data.get("generate_profiled_s")),
            ttft_s=_opt(data.get("ttft_s")),
            ttft_q25_s=_opt(ttft_range[0]),
            ttft_q75_s=_opt(ttft_range[2]),
            tpot_s=_opt(tpot.get("median")),
            tpot_p90_s=_opt(tpot.get("p90")),
            tpot_mean_s=_opt(tpot.get("mean")),
            profiled_ttft_s=_opt(data.get("profiled_ttft_s")),
            profiled_tpot_mean_s=_opt(data.get("profiled_tpot_mean_s")),
            positions=tuple(int(p["context"]) for p in positions),
            bin_steps=int(data.get("bin_steps", 1)),  # type: ignore[call-overload]
            position_s=tuple(float(p["step_s"]) for p in positions),
            node_positions={str(k): tuple(float(v) for v in vs) for k, vs in nodes.items()},
            kv_cache_bytes=data.get("kv_cache_bytes"),  # type: ignore[arg-type]
            kv_layer_bytes=tuple(int(b) for b in data.get("kv_layer_bytes") or ()),  # type: ignore[attr-defined]
            cache=str(data.get("cache", "")),
            weight_bytes=int(data.get("weight_bytes", 0)),  # type: ignore[call-overload]
            eos_suppressed=bool(data.get("eos_suppressed", False)),
            recompiles=int(data.get("recompiles", 0)),  # type: ignore[call-overload]
            forwards=int(data.get("forwards", 0)),  # type: ignore[call-overload]
            forced=bool(data.get("forced", True)),
        )

    # -- text ------------------------------------------------------------------------------

    def lines(self, phases: Mapping[str, float]) -> list[str]:
        """The header's lines (``phases``: Σ node medians of each phase), for the headless report."""
        sequences = f"{self.new_tokens} new tokens × {self.batch} sequence{'s' if self.batch != 1 else ''}"
        out = [
            f"generate   {sequences} after a {self.prompt_tokens}-token prompt, greedy, fixed length"
            + (" (the end-of-sequence token is suppressed until then)" if self.eos_suppressed else "")
            + f"; {self.calls} uninstrumented calls"
            if self.forced
            else f"generate   {self.calls} unsampled generate() call{'' if self.calls == 1 else 's'} of the program's "
            f"own; the latest: {sequences} after a {self.prompt_tokens}-token prompt",
            f"call       {format_seconds(self.generate_s)} uninstrumented median, "
            f"{format_seconds(self.generate_profiled_s)} profiled (every ATen op timed); "
            f"{_rate(self.tokens_per_s)} tokens/s",
            f"prefill    time to first token {format_seconds(self.ttft_s)}"
            + (f" ({format_seconds(self.ttft_q25_s)}–{format_seconds(self.ttft_q75_s)})" if self.ttft_q25_s else "")
            + f"; Σ prefill node medians {format_seconds(phases.get('prefill'))}"
            + _fidelity(phases.get("prefill"), self.ttft_s),
            f"decode     time per output token {format_seconds(self.tpot_s)} median, {format_seconds(self.tpot_p90_s)} "
            f"p90 over {self.decode_steps} steps a call ({_rate(self.decode_tokens_per_s)} tokens/s); "
            f"Σ decode node medians per step {format_seconds(phases.get('decode'))}"
            + _fidelity(phases.get("decode"), self.tpot_mean_s, "mean step"),
        ]
        if self.position_s:
            first, last = self.position_s[0], self.position_s[-1]
            out.append(
                f"context    decode step {format_seconds(first)} at {self.positions[0]} tokens, "
                f"{format_seconds(last)} at {self.positions[-1]}"
                + (f" ({100 * (last / first - 1):+.0f}%)" if first else "")
            )
        out.append("kv cache   " + self.cache_text())
        if self.forced:
            out.append(f"compiled   {self.recompiles} recompiles (eager: nothing is compiled)")
        return out

    def cache_text(self) -> str:
        """``4.0 MiB at the end (4 layers, 1.0 MiB each) beside 96.0 MiB of weights``."""
        if self.kv_cache_bytes is None:
            return f"none kept by the model; weights {format_bytes(self.weight_bytes)}"
        layers = self.kv_layer_bytes
        each = ""
        if layers:
            same = len(set(layers)) == 1
            each = f" ({len(layers)} layers, {format_bytes(layers[0])} each)" if same else f" ({len(layers)} layers)"
        return (
            f"{format_bytes(self.kv_cache_bytes)} at the end{each} in a {self.cache or 'cache'}, "
            f"beside {format_bytes(self.weight_bytes)} of weights"
        )


def phase_share(phase: str, median_s: float, summary: GenerationSummary | None) -> float:
    """A node's share of its phase, percent: of the profiled time to first token, or of the mean decode step."""
    reference = summary.reference(phase) if summary is not None else None
    return 100.0 * median_s / reference if reference else 0.0


def _opt(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def _fidelity(nodes_s: float | None, reference_s: float | None, what: str = "time to first token") -> str:
    if not nodes_s or not reference_s:
        return ""
    return f" = {nodes_s / reference_s:.3f} of the uninstrumented {what}"


def split_steps(t0: int, starts: Sequence[int], t1: int) -> tuple[int, list[int]]:
    """Time to first token and each decode step (ns) of a call from ``t0`` to ``t1`` whose forwards began at ``starts``.

    A step runs from its forward's start to the next one's (the last to the call's end); the
    first token's time runs from the call to the second forward.
    """
    if len(starts) < 2:
        return t1 - t0, []
    bounds = [*starts[1:], t1]
    return starts[1] - t0, [b - a for a, b in itertools.pairwise(bounds)]
