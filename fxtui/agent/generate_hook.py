"""``generate()`` calls in a program under ``fxtui run``: each call a step, split into its prefill and decode steps.

transformers' ``GenerationMixin.generate`` is wrapped (when transformers is imported, now or
later): a call is a step of its own kind (:mod:`fxtui.agent.steps`), the model's forwards inside
it are not steps, and the wrapper notes when each forward starts, so every call gives
its time to first token and its decode steps (:class:`~fxtui.agent.sender.GenerationCall`) as
``--generate`` measures them (:mod:`fxtui.measure.capture.generate`). In a sampled step the op
records of each forward are resolved apart, the first in the **prefill**, the others in
**decode** steps, and a decode node is sent once, per token (its time over the call's decode
steps ÷ their number), so the collector's statistics of it are per token as ``--generate``'s.

What the program pays per call: a clock reading per forward and the wrapper's own few
microseconds; the cache's bytes are counted in sampled calls only.
"""

from __future__ import annotations

import itertools
import time
import types
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from fxtui.core.op_nodes import OpTime
from fxtui.core.op_sums import OpArrays
from fxtui.ops.after_import import AfterImport, after_import, forget
from fxtui.ops.dynamo_skip import run_eagerly, run_eagerly_here
from fxtui.ops.namer import OpNamer
from fxtui.ops.recorder import OpRecorder
from fxtui.ops.records import PhaseEnter, Record, make
from fxtui.wire.agent_messages import GenerationCall

_clock = time.perf_counter_ns
_MODULE = "transformers.generation.utils"


class GenerateWatch:
    """The ``generate()`` calls of the step in progress; ``start``/``end`` are called by the wrapper."""

    def __init__(self, recorder: OpRecorder) -> None:
        self.recorder = recorder
        self.depth = 0
        self.calls: list[_Call] = []
        self._undo: list[Callable[[], None]] = []
        self._finder: AfterImport | None = None

    @property
    def active(self) -> bool:
        """Inside a ``generate()`` call."""
        return self.depth > 0

    def install(self, enter: Callable[[], None], leave: Callable[[], None]) -> None:
        """Wrap ``GenerationMixin.generate`` now or when transformers is imported; ``enter``/``leave`` go around it."""
        self._finder = after_import(_MODULE, lambda m: self._wrap(m, enter, leave))

    def uninstall(self) -> None:
        forget(self._finder)
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()

    def _wrap(self, module: types.ModuleType, enter: Callable[[], None], leave: Callable[[], None]) -> None:
        mixin = getattr(module, "GenerationMixin", None)
        original = getattr(mixin, "generate", None)
        if mixin is None or original is None:
            return
        watch = self

        def generate(model: Any, *args: Any, **kwargs: Any) -> Any:
            if watch.depth:  # a generate() inside one (assisted decoding): part of the outer call
                return original(model, *args, **kwargs)
            enter()
            call = watch._start(model, args, kwargs)
            try:
                out = original(model, *args, **kwargs)
                call.output(out)
                return out
            finally:
                watch._end(call)
                leave()  # the call's step ends: it is sent with this call's figures

        run_eagerly_here(generate)  # the model's forwards inside are compiled as usual
        run_eagerly(self._start, self._end)
        generate.__wrapped__ = original  # type: ignore[attr-defined]
        generate.__doc__ = original.__doc__
        mixin.generate = generate
        self._undo.append(lambda: setattr(mixin, "generate", original))

    def _start(self, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Call:
        self.depth += 1
        recording = self.recorder.active
        call = _Call(model, _prompt(args, kwargs), _clock(), len(self.recorder.records) if recording else -1)
        self.calls.append(call)
        return call

    def _end(self, call: _Call) -> None:
        self.depth -= 1
        call.t1 = _clock()
        call.end = len(self.recorder.records) if call.start >= 0 and self.recorder.active else -1

    def forward(self, model: Any) -> None:
        """A forward of the model starts inside the call, before the recorder notes the model's entry."""
        call = self.calls[-1] if self.calls else None
        if call is None or model is not call.model:
            return
        call.starts.append(_clock())
        if call.start >= 0:
            call.marks.append(len(self.recorder.records))

    def cache(self, out: Any) -> None:
        """A forward of the model ended (sampled steps): keep its cache to count at the call's end."""
        if self.calls and self.recorder.active:
            self.calls[-1].cache_ref = getattr(out, "past_key_values", None)

    def take(self) -> list[_Call]:
        """The calls of the step that ends (the one still running, if any, stays)."""
        done = [c for c in self.calls if c.t1]
        self.calls = [c for c in self.calls if not c.t1]
        return done


class _Call:
    """One ``generate()`` call as it runs."""

    __slots__ = ("batch", "cache_ref", "end", "marks", "model", "new", "prompt", "start", "starts", "t0", "t1")

    def __init__(self, model: Any, prompt: tuple[int, int], t0: int, start: int) -> None:
        self.model = model
        self.batch, self.prompt = prompt
        self.new = 0
        self.t0, self.t1 = t0, 0
        self.start, self.end = start, -1
        self.starts: list[int] = []
        self.marks: list[int] = []
        self.cache_ref: Any = None

    def output(self, out: Any) -> None:
        sequences = getattr(out, "sequences", out)
        shape = getattr(sequences, "shape", None)
        if shape is not None and len(shape) == 2:
            self.new = max(int(shape[1]) - self.prompt, 0)

    def summary(self) -> GenerationCall:
        """What the collector gets: the call's time to first token, decode steps, tokens and cache."""
        from fxtui.core.generation import split_steps
        from fxtui.ops.model_bytes import cache_bytes, weight_bytes

        ttft, steps = split_steps(self.t0, self.starts, self.t1)
        cache = cache_bytes(self.cache_ref) if self.cache_ref is not None else None
        weights = weight_bytes(self.model) if self.start >= 0 else 0  # a sampled call's (a model without a cache too)
        self.cache_ref = None
        return GenerationCall(
            wall_ns=self.t1 - self.t0,
            ttft_ns=ttft,
            steps_ns=tuple(steps),
            prompt_tokens=self.prompt,
            new_tokens=self.new or len(self.starts),
            batch=self.batch,
            kv_cache_bytes=cache[0] if cache else None,
            kv_layer_bytes=cache[1] if cache else (),
            cache=cache[2] if cache else "",
            weight_bytes=weights,
        )


def resolve_step(namer: OpNamer, records: list[Record], calls: Sequence[_Call]) -> list[OpTime] | OpArrays:
    """A sampled step's ops, its ``generate()`` calls' split into the prefill and decode steps, decode ops per token.

    Records outside the calls resolve as any step's; each forward's records inside a call are
    resolved apart (a repeat counts from 1 in every step), so an op is one node in every decode
    step, sent once with its time over the steps ÷ their number (and no shape: it grows with the cache).
    """
    spans = [c for c in calls if c.start >= 0 and c.end >= c.start]
    if not spans:  # a native step of a known shape stays arrays
        return namer.resolve_arrays(records)
    out: list[OpTime] = []
    at = 0
    for call in spans:
        out += namer.resolve(records[at : call.start])
        bounds = [call.start, *call.marks[1:], call.end]
        decode: dict[int, int] = defaultdict(int)
        began: dict[int, int] = {}  # a decode node's first start in the call, where a trace draws its total
        steps = max(len(bounds) - 2, 1)
        for k, (a, b) in enumerate(itertools.pairwise(bounds)):
            ops = namer.resolve([make(PhaseEnter, ("prefill" if k == 0 else "decode", 0, None)), *records[a:b]])
            if k == 0:
                out += ops
            else:
                for node, ns, _shape, start in ops:
                    decode[node] += ns
                    began.setdefault(node, start)
        out += [(node, round(ns / steps), "", began[node]) for node, ns in decode.items()]
        at = call.end
    return out + namer.resolve(records[at:])


def _prompt(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, int]:
    """(batch, length) of the call's token ids; (1, 0) when it has none (``inputs_embeds``)."""
    ids = kwargs.get("input_ids", kwargs.get("inputs", args[0] if args else None))
    shape = getattr(ids, "shape", None)
    if shape is None or len(shape) != 2:
        return 1, 0
    return int(shape[0]), int(shape[1])
