"""The per-op timers side by side: the Python dispatch mode (``--timer mode``) and the C++ callback (``native``).

    python tests/benchmarks/bench_timer.py [--rounds 30] [--length 400] [--corpus NAME …] [--skip-per-op]
                                           [--skip-lbfgs] [--skip-agreement] [--inner WAY …]
                                           [--calls agent|hooks|both]

One process, one run, the two timers interleaved round by round, medians; the load average printed beside each
part (the machine is shared: read the figures with it).

1. **Per op, in this process** (one intra-op thread; the thread's CPU time, which a busy machine stretches less
   than wall time): a char-level GPT's training step (the corpus's
   ``char_gpt.py`` pattern, small) and a VAE's (``vae_sampling.py``): µs per op a sampled step costs over an
   unsampled one, the sampled ÷ unsampled step median, µs per op to resolve the step after it (the native step's:
   merged into per-op records and walked, as before, and from its rows, :mod:`fxtui.ops.native_steps`, on the
   same recording; checked equal), and the sampled steps per minute the default budget (2%) allows: one in
   N = ⌈(ratio − 1 + resolve) ÷ 0.02⌉ steps, 2 ≤ N ≤ 200, the resolve after the step counted as the pace counts
   it (:mod:`fxtui.agent.pace`; the message's sums and send after it are not in this figure). Module calls are
   seen as the agent sees them (``--calls agent``: ``Module.__call__`` replaced, :mod:`fxtui.agent.module_calls`)
   or through global module hooks (``hooks``); the native timer runs once a round per way of passing an op's inner
   ops by (``--inner``: ``callback``, the default, ``rf-off``, as before, ``lazy``; ``fx_inner`` in ``op_timer.cpp``).
2. **A step of about a million ops** (the corpus's ``lbfgs_sine.py`` pattern: LBFGS over two LSTMCells unrolled
   ``--length`` times, 20 closures a step; 400: about 10⁶ ops): the extra CPU time of its first sampled step (which
   describes nodes, as the agent's first does), and of a later one, recording and resolving included, against an
   unsampled step run just before — before (no op limit) and now (the limit: the step stops at it and is set
   aside).
3. **Fidelity per corpus program** under ``fxtui run --once --json`` (``--corpus``; paced as the corpus tests
   pace them): Σ node medians ÷ unsampled step and the sampled ÷ unsampled step median, per kind, for each timer.
4. **Agreement with torch.profiler** (:mod:`tests.benchmarks.timer_agreement`): the same two steps under
   torch.profiler with a range per module call and under each timer: per module above ``--agree-ms`` of op time,
   fxtui ÷ torch.profiler (goal 0.93–1.10), and each one's Σ op time ÷ the unsampled step's wall time.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from fxtui.agent.module_calls import ModuleCalls
from fxtui.agent.pace import MAX_EVERY, MIN_EVERY
from fxtui.core import step_aside
from fxtui.ops import native_build
from fxtui.ops.namer import OpNamer
from fxtui.ops.native_recorder import NativeRecorder
from fxtui.ops.native_steps import NativeStep
from fxtui.ops.recorder import OpRecorder
from fxtui.ops.records import OpCall
from tests.benchmarks.timer_agreement import agreement
from tests.program_runs import run_fxtui, step_kinds

#: The clock of part 1: this thread's CPU time, which other processes on the cores do not stretch (the step runs on
#: one intra-op thread); part 2 and the corpus read wall time.
_cpu = time.thread_time_ns
ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests" / "programs"
#: The corpus programs and arguments of tests/test_corpus.py (small: seconds each under python).
CORPUS = {
    "char_gpt": ("char_gpt.py", "--iters", "30", "--eval-iters", "10", "--log-interval", "10"),
    "vae_sampling": ("vae_sampling.py", "--epochs", "2", "--batches", "12", "--test-batches", "4"),
    "reused_module": ("reused_module.py", "--epochs", "2", "--batches", "10", "--test-batches", "3"),
    "word_lm": ("word_lm.py", "--words", "8000", "--epochs", "2", "--log-interval", "5"),
    "gan": ("gan.py", "--iters", "24", "--ngf", "64"),
    "grad_accum": ("grad_accum.py", "--steps", "20"),
    "autocast_bf16": ("autocast_bf16.py", "--steps", "24"),
    "lbfgs_sine": ("lbfgs_sine.py", "--steps", "5", "--length", "20"),
}
PACED = ("--warmup-steps", "2", "--sample-every", "2")
BUDGET = 0.02


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


# -- 1. per op -------------------------------------------------------------------------------------------------------


class _Gpt(torch.nn.Module):
    """A char-level GPT of two blocks (the corpus's char_gpt.py pattern, smaller)."""

    def __init__(self, vocab: int = 65, d: int = 64, heads: int = 4, layers: int = 2, block: int = 32) -> None:
        super().__init__()
        self.tok, self.pos = torch.nn.Embedding(vocab, d), torch.nn.Embedding(block, d)
        self.blocks = torch.nn.ModuleList(_Block(d, heads) for _ in range(layers))
        self.ln, self.head = torch.nn.LayerNorm(d), torch.nn.Linear(d, vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


class _Block(torch.nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.up, self.down = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.down(torch.nn.functional.gelu(self.up(self.ln2(x))))


Mark = Callable[[str, bool, Any], None]


def _unmarked(phase: str, enter: bool, owner: Any) -> None:
    """An unsampled step marks no phase."""


def gpt_step() -> Callable[..., None]:
    model = _Gpt()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    idx, tgt = torch.randint(0, 65, (8, 32)), torch.randint(0, 65, (8, 32))

    def step(mark: Mark = _unmarked) -> None:
        logits = model(idx)
        loss = torch.nn.functional.cross_entropy(logits.view(-1, 65), tgt.view(-1))
        mark("backward", True, None)
        loss.backward()
        mark("backward", False, None)
        mark("optimizer", True, opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        mark("optimizer", False, None)

    step.model = model  # type: ignore[attr-defined]
    return step


class _Vae(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc21, self.fc22 = torch.nn.Linear(784, 400), torch.nn.Linear(400, 20), torch.nn.Linear(400, 20)
        self.fc3, self.fc4 = torch.nn.Linear(20, 400), torch.nn.Linear(400, 784)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h = torch.relu(self.fc1(x.view(-1, 784)))
        mu, logvar = self.fc21(h), self.fc22(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return torch.sigmoid(self.fc4(torch.relu(self.fc3(z)))), mu, logvar


def vae_step() -> Callable[..., None]:
    model = _Vae()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.rand(16, 1, 28, 28)

    def step(mark: Mark = _unmarked) -> None:
        mark("optimizer", True, opt)
        opt.zero_grad()
        mark("optimizer", False, None)
        recon, mu, logvar = model(x)
        bce = torch.nn.functional.binary_cross_entropy(recon, x.view(-1, 784), reduction="sum")
        kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        mark("backward", True, None)
        (bce + kld).backward()
        mark("backward", False, None)
        mark("optimizer", True, opt)
        opt.step()
        mark("optimizer", False, None)

    step.model = model  # type: ignore[attr-defined]
    return step


#: How a recorded op's inner ops are passed by (``fx_inner``, op_timer.cpp): the native timer's variants of part 1.
INNER_WAYS = {"rf-off": 0, "callback": 1, "lazy": 2}


class AgentCalls:
    """Module calls seen as the agent sees them (:class:`~fxtui.agent.module_calls.ModuleCalls`: ``Module.__call__``
    replaced, for the plain steps too) and given to the recorder of the round (made with ``hooks=False``)."""

    def __init__(self) -> None:
        self.recorder: OpRecorder | None = None
        self.calls = ModuleCalls(self._root, self._inner)

    def use(self, recorder: OpRecorder | None) -> None:
        self.recorder = recorder
        self.calls.recording = recorder is not None

    def _root(self, module: torch.nn.Module, call: Callable[..., Any], args: tuple[Any, ...], kwargs: Any) -> Any:
        recorder = self.recorder
        if recorder is None:
            return call(module, *args, **kwargs)
        recorder.enter(module, args)
        self.calls.inside = True
        out = None
        try:
            out = call(module, *args, **kwargs)
        finally:
            self.calls.inside = False
            recorder.exit(module, out)
        return out

    def _inner(self, module: torch.nn.Module, call: Callable[..., Any], args: tuple[Any, ...], kwargs: Any) -> Any:
        """As the agent's ``_inner_call``: only while recording."""
        recorder = self.recorder
        assert recorder is not None
        recorder.enter(module)
        try:
            return call(module, *args, **kwargs)
        finally:
            recorder.exit(module)


def per_op(name: str, step: Callable[..., None], rounds: int, lib: Any, ways: list[str], agent: bool) -> None:
    """Phases are marked as the agent marks them (the backward, the optimizer); module calls are seen through global
    module hooks, or (``agent``) as the agent sees them. The native timer runs once a round per way of ``ways``
    (the first is the one whose resolving is timed and checked)."""
    calls = AgentCalls() if agent else None
    mode = OpRecorder(hooks=not agent)
    native = NativeRecorder(lib, hooks=not agent)
    namers = {"mode": OpNamer(), "native": OpNamer(), "rows": OpNamer()}
    if calls is not None:
        calls.calls.install()
    try:
        for _ in range(3):
            step()
        timers: list[tuple[str, OpRecorder | None, int]] = [("plain", None, -1), ("mode", mode, -1)]
        timers += [(f"native {way}", native, INNER_WAYS[way]) for way in ways]
        walls: dict[str, list[int]] = {label: [] for label, _, _ in timers}
        resolve: dict[str, list[float]] = {"mode": [], "native": [], "rows": []}
        ops = 0
        for k in range(rounds):
            # each timer after each other as often (a step pays for the garbage and caches of the one before it),
            # the garbage of the one before collected first
            for timer, recorder, inner in timers[k % len(timers) :] + timers[: k % len(timers)]:
                if calls is not None:
                    calls.use(recorder)
                if inner >= 0:
                    lib.fx_inner(inner)
                gc.collect()
                t0 = _cpu()
                if recorder is None:
                    step()
                    walls[timer].append(_cpu() - t0)
                    continue
                recorder.start()
                step(recorder.mark)
                recorder.stop()
                t1 = _cpu()
                walls[timer].append(t1 - t0)
                if timer == "mode":
                    records = recorder.take()
                    resolved = namers[timer].resolve(records)
                    resolve[timer].append((_cpu() - t1) / max(len(resolved), 1))
                    ops = sum(1 for r in records if type(r) is OpCall and r.op.namespace != "profiler")
                    continue
                (taken,) = native.take_step()  # the native step's rows, unmerged (as the agent takes them)
                if timer != timers[2][0]:
                    continue
                t1 = _cpu()
                resolved = namers["native"].resolve(taken.records())  # before: merged into a record per op, walked
                t2 = _cpu()
                from_rows = namers["rows"].resolve([taken])  # now: from the rows (the long way on a new shape)
                t3 = _cpu()
                assert from_rows == resolved, "resolved from the rows, the step's ops differ from the long way's"
                resolve["native"].append((t2 - t1) / max(len(resolved), 1))
                resolve["rows"].append((t3 - t2) / max(len(resolved), 1))
    finally:
        if calls is not None:
            calls.use(None)
            calls.calls.uninstall()
        lib.fx_inner(INNER_WAYS[ways[0]])
    plain = statistics.median(walls["plain"])
    seen = "the agent's module calls" if agent else "global module hooks"
    print(f"\n{name}: {ops} ops a step (the mode's count), plain step {plain / 1e6:.2f} ms of CPU; {seen}; {load()}")
    print(
        f"  {'timer':<17} {'µs/op':>7} {'sampled÷unsampled':>18} {'resolve µs/op: records':>23} {'rows':>6}"
        f" {'sampled/min at 2%':>18}"
    )
    for timer, _, _ in timers[1:]:
        # paired with the plain step of the same round (a busy machine drifts over a run: the median of each round's
        # difference moves less than the difference of two medians)
        extra = statistics.median(w - p for w, p in zip(walls[timer], walls["plain"], strict=True))
        ratio = statistics.median(w / p for w, p in zip(walls[timer], walls["plain"], strict=True))
        first = timer in ("mode", timers[2][0])
        kind = "mode" if timer == "mode" else "native"
        # What the agent does after a sampled step ends counts in the pace: the mode's records, the native rows.
        after = statistics.median(resolve["mode" if timer == "mode" else "rows"]) * ops / plain
        every = min(MAX_EVERY, max(MIN_EVERY, math.ceil(max(ratio - 1 + after, 0) / BUDGET - 1e-9)))
        per_minute = 60e9 / (every * plain)
        records = f"{statistics.median(resolve[kind]) / 1e3:.2f}" if first else "-"
        rows = f"{statistics.median(resolve['rows']) / 1e3:.2f}" if timer == timers[2][0] else "-"
        print(
            f"  {timer:<17} {extra / 1e3 / max(ops, 1):>7.2f} {ratio:>18.2f} "
            f"{records:>23} {rows:>6} {per_minute:>18.1f}"
        )


# -- 2. a million ops ------------------------------------------------------------------------------------------------


class _Sequence(torch.nn.Module):
    def __init__(self, hidden: int = 51) -> None:
        super().__init__()
        self.hidden = hidden
        self.lstm1, self.lstm2 = torch.nn.LSTMCell(1, hidden), torch.nn.LSTMCell(hidden, hidden)
        self.linear = torch.nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h1 = c1 = h2 = c2 = torch.zeros(x.size(0), self.hidden, dtype=x.dtype)
        outputs = []
        for x_t in x.split(1, dim=1):
            h1, c1 = self.lstm1(x_t, (h1, c1))
            h2, c2 = self.lstm2(h1, (h2, c2))
            outputs.append(self.linear(h2))
        return torch.cat(outputs, dim=1)


def lbfgs(length: int, native: NativeRecorder) -> None:
    torch.manual_seed(0)
    model = _Sequence().double()
    x, y = torch.randn(3, length, dtype=torch.double), torch.randn(3, length, dtype=torch.double)
    opt = torch.optim.LBFGS(model.parameters(), lr=0.8)
    loss_fn = torch.nn.MSELoss()

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        return loss

    def step() -> None:
        opt.step(closure)

    step()

    def plain_step() -> int:
        started = _cpu()
        step()
        return _cpu() - started

    plain = plain_step()
    print(f"\nLBFGS over two LSTMCells unrolled {length}×, 20 closures a step: {plain / 1e9:.2f} s of CPU; {load()}")

    def sampled(recorder: OpRecorder, describing: bool, limit: int) -> tuple[float, int, bool]:
        recorder.limit = limit
        if isinstance(recorder, NativeRecorder):
            recorder._rows = None  # made at this limit
        t0 = _cpu()
        recorder.start(stacks=describing)
        step()
        recorder.stop()
        # as the agent takes a step: a native one's rows unmerged (a step set aside drops them unresolved)
        records = recorder.take_step() if isinstance(recorder, NativeRecorder) else recorder.take()
        aside = bool(recorder.overflowed)
        n = sum(len(r.rows) if isinstance(r, NativeStep) else type(r) is OpCall for r in records)
        if not aside:
            OpNamer().resolve(records)
        del records
        return (_cpu() - t0 - plain) / 1e9, n, aside

    rows = [
        ("mode, before (no limit)", OpRecorder(), 10**9),
        ("mode, op limit", OpRecorder(), step_aside.OP_LIMIT),
        ("native, op limit", native, step_aside.OP_LIMIT),
    ]
    print(f"  {'timer':<24} {'first sampled (describing)':>30} {'a later sampled step':>30}")
    for label, recorder, limit in rows:
        plain = plain_step()  # an unsampled step right before each pair: the reference of its extra
        first = sampled(recorder, True, limit)
        later = sampled(recorder, False, limit)
        text = [f"+{s:.1f} s, {n:,} ops{' (set aside)' if a else ''}" for s, n, a in (first, later)]
        print(f"  {label:<24} {text[0]:>30} {text[1]:>30}", flush=True)


# -- 3. fidelity per corpus program ----------------------------------------------------------------------------------


def corpus(names: list[str]) -> None:
    print(f"\ncorpus programs under fxtui run --once --json {' '.join(PACED)} --timer T; {load()}")
    print(
        f"  {'program':<14} {'kind':<6} {'fidelity mode':>14} {'native':>8} {'Δ':>7}"
        f" {'overhead mode':>14} {'native':>8}"
    )
    for name in names:
        command = CORPUS[name]
        figures = {}
        for timer in ("mode", "native"):
            run = run_fxtui((str(PROGRAMS / command[0]), *command[1:]), ROOT, (*PACED, "--timer", timer))
            figures[timer] = step_kinds(run.meta)
        for kind in figures["mode"]:
            m, n = figures["mode"][kind], figures["native"].get(kind)
            if n is None:
                continue
            delta = n.fidelity - m.fidelity if n.fidelity is not None and m.fidelity is not None else None
            print(
                f"  {name:<14} {kind:<6} {_f(m.fidelity):>14} {_f(n.fidelity):>8} {_f(delta, '+.3f'):>7} "
                f"{_f(m.overhead):>14} {_f(n.overhead):>8}",
                flush=True,
            )
    print(f"  ({load()})")


def _f(value: Any, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--length", type=int, default=400, help="the LSTMCells' unrolled length (400: ~10⁶ ops)")
    parser.add_argument("--corpus", nargs="*", default=["char_gpt", "vae_sampling", "reused_module"])
    parser.add_argument("--skip-lbfgs", action="store_true")
    parser.add_argument("--skip-per-op", action="store_true")
    parser.add_argument("--skip-agreement", action="store_true")
    parser.add_argument(
        "--inner",
        nargs="+",
        choices=sorted(INNER_WAYS),
        default=["callback", "rf-off"],
        help="part 1: the native timer's ways of passing an op's inner ops by, interleaved (the first: the default)",
    )
    parser.add_argument(
        "--calls",
        choices=("agent", "hooks", "both"),
        default="agent",
        help="part 1: module calls seen as the agent sees them, or through global module hooks",
    )
    parser.add_argument("--agree-ms", type=float, default=1.0, help="modules above this op time a step (part 4)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}; 1 intra-op thread; {load()}")
    print(f"native library: {native_build.build()}")
    lib = native_build.load()
    if lib is None:
        sys.exit(f"the native library does not load: {native_build.why_not()}")
    native = NativeRecorder(lib)
    torch.manual_seed(0)
    if not args.skip_per_op:
        for agent in (True, False) if args.calls == "both" else (args.calls == "agent",):
            per_op("char-level GPT training step", gpt_step(), args.rounds, lib, args.inner, agent)
            per_op("VAE training step", vae_step(), args.rounds, lib, args.inner, agent)
    if not args.skip_agreement:
        for name, make_step in (("char-level GPT", gpt_step), ("VAE", vae_step)):
            step = make_step()
            agreement(name, step, step.model, args.rounds, native, args.agree_ms, load)  # type: ignore[attr-defined]
    if not args.skip_lbfgs:
        lbfgs(args.length, native)
    if args.corpus:
        corpus(args.corpus)
    print(f"\nend: {load()}")


if __name__ == "__main__":
    main()
