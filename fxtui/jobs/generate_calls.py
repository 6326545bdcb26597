"""A program's ``generate()`` calls as the collector keeps them: the figures ``--generate`` shows, for its own calls.

Unsampled calls give the time to first token, per token, tokens/s and the decode step per
position; sampled ones (every op timed) the references of the nodes' shares. A program's
calls need not be alike (prompts of any length, a call that stops at its end-of-sequence
token): positions are counted from the latest call's prompt, each bin over the calls' decode
steps of that index. Torch-free, numpy only.
"""

from __future__ import annotations

import math
import statistics
from collections import deque

import numpy as np

from fxtui.core.generation import MAX_BINS, GenerationSummary
from fxtui.wire.agent_messages import GenerationCall

#: Calls the figures come from (the time per token and the positions: the most recent of them).
KEPT = 256
RECENT = 32


class GenerationCalls:
    """The calls so far; :meth:`summary` freezes them (None before the first)."""

    def __init__(self) -> None:
        self.reset()
        self.cache: GenerationCall | None = None
        self.weights = 0
        """The model's parameters and buffers, as the latest sampled call counted them."""

    def reset(self) -> None:
        self.plain: deque[GenerationCall] = deque(maxlen=KEPT)
        self.sampled: deque[GenerationCall] = deque(maxlen=KEPT)
        self.latest: GenerationCall | None = None

    def add(self, call: GenerationCall, sampled: bool) -> None:
        (self.sampled if sampled else self.plain).append(call)
        self.note(call)

    def note(self, call: GenerationCall) -> None:
        """A call's facts — its sizes, its cache, the model's weights — without its times (a sampled call that noted
        its nodes' inputs: slower, no figure)."""
        self.latest = call
        if call.kv_cache_bytes is not None:
            self.cache = call
        if call.weight_bytes:
            self.weights = call.weight_bytes

    def summary(self) -> GenerationSummary | None:
        latest = self.latest
        if latest is None:
            return None
        plain = list(self.plain)
        recent = plain[-RECENT:]
        steps = sorted(s for c in recent for s in c.steps_ns)
        longest = max((len(c.steps_ns) for c in recent), default=0)
        size = math.ceil(longest / MAX_BINS) if longest else 1
        bins = math.ceil(longest / size) if longest else 0
        position_s = []
        for b in range(bins):
            values = [s for c in recent for s in c.steps_ns[b * size : (b + 1) * size]]
            position_s.append(statistics.median(values) / 1e9 if values else 0.0)
        cache = self.cache
        return GenerationSummary(
            new_tokens=latest.new_tokens,
            prompt_tokens=latest.prompt_tokens,
            batch=latest.batch,
            calls=len(plain),
            generate_s=_median([c.wall_ns for c in plain]),
            generate_profiled_s=_median([c.wall_ns for c in self.sampled]),
            ttft_s=_median([c.ttft_ns for c in plain]),
            ttft_q25_s=_quantile([c.ttft_ns for c in plain], 0.25),
            ttft_q75_s=_quantile([c.ttft_ns for c in plain], 0.75),
            tpot_s=_median(steps),
            tpot_p90_s=_quantile(steps, 0.9),
            tpot_mean_s=_median([statistics.fmean(c.steps_ns) for c in plain if c.steps_ns]),
            profiled_ttft_s=_median([c.ttft_ns for c in self.sampled]),
            profiled_tpot_mean_s=_median([statistics.fmean(c.steps_ns) for c in self.sampled if c.steps_ns]),
            positions=tuple(latest.prompt_tokens + 1 + b * size for b in range(bins)),
            bin_steps=size,
            position_s=tuple(position_s),
            kv_cache_bytes=cache.kv_cache_bytes if cache else None,
            kv_layer_bytes=cache.kv_layer_bytes if cache else (),
            cache=cache.cache if cache else "",
            weight_bytes=self.weights,
            forwards=len(latest.steps_ns) + 1,
            forced=False,
        )


def _median(values: list[int] | list[float]) -> float | None:
    return statistics.median(values) / 1e9 if values else None


def _quantile(values: list[int], q: float) -> float | None:
    return float(np.quantile(np.asarray(values, dtype=np.float64), q)) / 1e9 if values else None
