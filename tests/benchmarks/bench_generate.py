"""Text generation benchmark: what ``--generate`` measures against the same generate() calls without fxtui.

For a Llama (4 layers, hidden 512, 8 heads, intermediate 1408, the default 32,000-token vocabulary)
and GPT-2 (its default configuration), a 128-token prompt and 64 new tokens, greedy, fixed length:

* fidelity per phase: Σ decode node medians (each per token) ÷ the uninstrumented mean decode step,
  and Σ prefill node medians ÷ the uninstrumented time to first token (both from the session's own
  uninstrumented calls);
* TTFT and TPOT as fxtui reports them against the same generate() call run with nothing of fxtui,
  timed the way a user would (a streamer noting each token), rounds interleaved: fxtui's session step
  (a profiled and an uninstrumented call) and a plain call, the order alternating;
* what profiling costs a call (profiled ÷ uninstrumented);
* the per-module prefill/decode split, modules of the same kind summed over the layers;
* what TorchDynamo makes of the same calls (graphs compiled as the cache grows, the first call's
  time, later calls against eager), with the model's growing cache and with a static one.

Figures are printed, never asserted; the load average is printed before and after (the machine is shared).

    python tests/benchmarks/bench_generate.py [--rounds N] [--threads T] [--only llama|gpt2] [--new N] [--prompt N]
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import statistics
import sys
import time
from collections import defaultdict
from typing import Any

import torch

from fxtui.core.units import format_seconds
from fxtui.measure.allocator import keep_freed_memory
from fxtui.measure.capture import capture_with
from fxtui.measure.inputs import Inputs
from fxtui.measure.session import Session

CONFIGS: dict[str, dict[str, Any]] = {
    "llama": dict(num_hidden_layers=4, hidden_size=512, intermediate_size=1408, num_attention_heads=8,
                  num_key_value_heads=8),
    "gpt2": {},
}  # fmt: skip


class TokenClock:
    """A streamer that notes when generate() hands it each token (the prompt first): how users time TTFT/TPOT."""

    def __init__(self) -> None:
        self.times: list[int] = []

    def put(self, value: Any) -> None:
        self.times.append(time.perf_counter_ns())

    def end(self) -> None:
        pass


def plain_call(model: torch.nn.Module, inputs: Inputs, options: dict[str, Any]) -> tuple[float, float, list[float]]:
    """One generate() call with nothing of fxtui: its wall time, TTFT and decode steps (seconds)."""
    clock = TokenClock()
    kwargs = {**dict(inputs.fresh().kwargs), **options}
    with torch.inference_mode():
        t0 = time.perf_counter_ns()
        model.generate(**kwargs, streamer=clock)  # type: ignore[operator]
        t1 = time.perf_counter_ns()
    tokens = clock.times[1:]  # the first put is the prompt
    steps = [(b - a) / 1e9 for a, b in itertools.pairwise(tokens)]
    return (t1 - t0) / 1e9, (tokens[0] - t0) / 1e9, steps


def kind_of(path: str) -> str:
    """A module path with its layer index starred, ``model.layers.*.self_attn``: one kind over all the layers."""
    return re.sub(r"\.\d+(\.|$)", r".*\1", path)


def bench(name: str, rounds: int, prompt: int, new: int, dynamo: bool) -> None:
    import transformers

    torch.manual_seed(0)
    config = transformers.AutoConfig.for_model(name, **CONFIGS[name])
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    ids = torch.randint(0, config.vocab_size, (1, prompt))
    inputs = Inputs((), {"input_ids": ids, "attention_mask": torch.ones_like(ids)})
    params = sum(p.numel() for p in model.parameters())
    print(f"\n== {name}: {params / 1e6:.1f} M parameters, prompt {prompt}, {new} new tokens, "
          f"{torch.get_num_threads()} threads")  # fmt: skip
    captured = capture_with("generate", model, inputs, name=name, new_tokens=new)
    started = time.perf_counter()
    session = Session(captured, inputs, model=name, keep_disturbed=True)
    session.warm_up(2)
    options = dict(captured.notes.options)
    plain_call(model, inputs, options)  # warm
    print(f"   set up and warmed in {time.perf_counter() - started:.1f} s")
    walls, ttfts, steps, means = [], [], [], []
    for k in range(rounds):
        if k % 2:
            session.run_pair()
        wall, ttft, st = plain_call(model, inputs, options)
        walls.append(wall)
        ttfts.append(ttft)
        steps += st
        means.append(statistics.fmean(st))
        if not k % 2:
            session.run_pair()
        print(f"\r   round {k + 1} of {rounds}", end="", file=sys.stderr, flush=True)
    print("\r\x1b[K", end="", file=sys.stderr)
    snap = session.snapshot()
    g = snap.generation
    assert g is not None
    phases = snap.phases
    overhead = g.generate_profiled_s / g.generate_s
    print(f"   uninstrumented calls: fxtui's {format_seconds(g.generate_s)}, without fxtui "
          f"{format_seconds(statistics.median(walls))} (×{g.generate_s / statistics.median(walls):.3f}); "
          f"profiled {format_seconds(g.generate_profiled_s)} (overhead ×{overhead:.2f})")  # fmt: skip
    print(f"   TTFT  fxtui {format_seconds(g.ttft_s)}   without fxtui {format_seconds(statistics.median(ttfts))}   "
          f"ratio {g.ttft_s / statistics.median(ttfts):.3f}")  # fmt: skip
    plain_tpot = statistics.median(steps)
    print(f"   TPOT  fxtui {format_seconds(g.tpot_s)} median, p90 {format_seconds(g.tpot_p90_s)}   without fxtui "
          f"{format_seconds(plain_tpot)}, p90 {format_seconds(statistics.quantiles(steps, n=10)[-1])}   "
          f"ratio {g.tpot_s / plain_tpot:.3f}")  # fmt: skip
    plain_mean = statistics.median(means)
    print(f"   mean decode step: fxtui {format_seconds(g.tpot_mean_s)}, without fxtui "
          f"{format_seconds(plain_mean)} (ratio {g.tpot_mean_s / plain_mean:.3f})")  # fmt: skip
    decode, prefill = phases.get("decode", 0.0), phases.get("prefill", 0.0)
    print(f"   fidelity  decode: Σ node medians per step {format_seconds(decode)} ÷ uninstrumented mean step "
          f"{format_seconds(g.tpot_mean_s)} = {decode / g.tpot_mean_s:.3f}   (÷ the plain calls' "
          f"{decode / statistics.median(means):.3f})")  # fmt: skip
    print(f"             prefill: Σ node medians {format_seconds(prefill)} ÷ uninstrumented TTFT "
          f"{format_seconds(g.ttft_s)} = {prefill / g.ttft_s:.3f}")  # fmt: skip
    print(f"   tokens/s {g.tokens_per_s:.1f} (whole call), {g.decode_tokens_per_s:.1f} decoding; KV cache "
          f"{g.cache_text()}")  # fmt: skip
    if g.position_s:
        print(f"   decode step {format_seconds(g.position_s[0])} at {g.positions[0]} tokens → "
              f"{format_seconds(g.position_s[-1])} at {g.positions[-1]}")  # fmt: skip
    kinds: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for path, m in snap.modules.items():
        if path and counted(path, snap.modules):
            kinds[kind_of(path)][0] += m.prefill_s
            kinds[kind_of(path)][1] += m.decode_s
    kinds["(the root model's own ops, outside its submodules)"] = [
        prefill - sum(p for p, _ in kinds.values()),
        decode - sum(d for _, d in kinds.values()),
    ]
    print("   per module kind, the layers summed: share of the phase's Σ node medians")
    for kind, (p, d) in sorted(kinds.items(), key=lambda kv: -kv[1][1]):
        print(f"     {kind:<52} prefill {format_seconds(p):>9} {100 * p / prefill:5.1f}%   "
              f"decode/token {format_seconds(d):>9} {100 * d / decode:5.1f}%")  # fmt: skip
    if dynamo:
        dynamo_alternatives(model, inputs, options, statistics.median(walls))


def counted(path: str, modules: Any) -> bool:
    """A layer's direct child (``model.layers.3.mlp``), or a module outside the layers that holds none."""
    parent = path.rpartition(".")[0]
    if parent.rpartition(".")[2].isdigit():
        return True

    def has_layers(p: str) -> bool:
        return any(re.search(r"\.\d+(\.|$)", q) for q in modules if q.startswith(p + ".") or (not p and q))

    return not re.search(r"\d", path) and not has_layers(path) and (parent == "" or has_layers(parent))


def dynamo_alternatives(model: torch.nn.Module, inputs: Inputs, options: dict[str, Any], eager_s: float) -> None:
    """What TorchDynamo makes of the same calls: graphs compiled as the cache grows, the first call, later calls.

    Its ``eager`` backend runs each graph as captured (what fxtui's timing interpreter would be handed);
    with the model's own growing cache and with a static one (``cache_implementation="static"``).
    """
    import torch._dynamo
    from torch._dynamo.utils import counters

    graphs: list[int] = []

    def backend(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
        graphs.append(len(gm.graph.nodes))
        return gm.forward

    forward = model.forward
    for cache in ("dynamic", "static"):
        torch._dynamo.reset()
        counters.clear()
        graphs.clear()
        model.forward = torch.compile(forward, backend=backend)  # type: ignore[method-assign]
        extra = {"cache_implementation": "static"} if cache == "static" else {}
        times = []
        for _ in range(4):
            started = time.perf_counter()
            with torch.inference_mode():
                model.generate(**dict(inputs.fresh().kwargs), **options, **extra)  # type: ignore[operator]
            times.append(time.perf_counter() - started)
        model.forward = forward  # type: ignore[method-assign]
        print(f"   TorchDynamo, {cache} cache: {len(graphs)} graphs ({', '.join(map(str, graphs))} nodes), "
              f"first call {times[0]:.1f} s, later calls {format_seconds(statistics.median(times[1:]))} "
              f"(×{statistics.median(times[1:]) / eager_s:.2f} the eager calls)")  # fmt: skip
    torch._dynamo.reset()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", default="llama,gpt2")
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new", type=int, default=64)
    parser.add_argument("--no-dynamo", action="store_true", help="skip the TorchDynamo alternatives")
    args = parser.parse_args()
    keep_freed_memory()
    torch.set_num_threads(args.threads)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    for name in args.only.split(","):
        bench(name, args.rounds, args.prompt, args.new, not args.no_dynamo)
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
