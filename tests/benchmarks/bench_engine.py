"""Engine benchmark: prints fidelity, overhead, stability, memory and start-up figures.

    python tests/benchmarks/bench_engine.py            # everything (about 15 minutes on 2 cores)
    python tests/benchmarks/bench_engine.py train      # one part (PARTS at the end names them all)

Every ratio is measured side by side in one process, runs interleaved, medians
taken, because a shared machine drifts by 10-15% between sessions. Stability is
the exception: it compares independent sessions, so each runs in its own process
(about 12 minutes for 36 sessions). The baseline
is the approach of the FX profiling tutorial: an Interpreter whose run_node is
wrapped with time.time(), everything else stock.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from typing import Any

import torch
import torch.fx

from fxtui.core.settings import Target
from fxtui.measure.pipeline import session_for_target
from fxtui.measure.session import Session

CASES = [
    ("resnet18", (5, 3, 224, 224)),
    ("mobilenet_v3_small", (1, 3, 224, 224)),
    ("resnet18", (1, 3, 64, 64)),
]


class TutorialInterpreter(torch.fx.Interpreter):
    """The tutorial's measurement: time.time() around the stock run_node."""

    def __init__(self, gm: torch.fx.GraphModule) -> None:
        super().__init__(gm)
        self.node_s: dict[str, list[float]] = {}
        self.run_s: list[float] = []

    def run(self, *args: Any, **kwargs: Any) -> Any:
        t0 = time.time()
        out = super().run(*args, **kwargs)
        self.run_s.append(time.time() - t0)
        return out

    def run_node(self, n: torch.fx.Node) -> Any:
        t0 = time.time()
        out = super().run_node(n)
        self.node_s.setdefault(n.name, []).append(time.time() - t0)
        return out


def session(name: str, shape: tuple[int, ...]) -> Session:
    return session_for_target(Target(name, input_shapes=(shape,)))


def fidelity(runs: int = 30) -> None:
    print("== fidelity and overhead (30 runs each, interleaved with uninstrumented runs; medians)")
    print(
        f"{'model':<22}{'input':<16}{'fxtui fidelity':>15}{'tutorial':>10}{'fxtui overhead':>16}{'tutorial':>10}"
        f"{'unattributed':>14}"
    )
    for name, shape in CASES:
        s = session(name, shape)
        tut = TutorialInterpreter(s.gm)
        eager_for_tutorial: list[float] = []
        s.warm_up(3)
        with torch.inference_mode():
            for _ in range(3):
                tut.run(*s.inputs.fresh().args)
            tut.node_s.clear()
            tut.run_s.clear()
            for _ in range(runs):
                s.run_pair()
                inputs = s.inputs.fresh().args
                tut.run(*s.inputs.fresh().args)
                t0 = time.perf_counter()
                s.gm(*inputs)
                eager_for_tutorial.append(time.perf_counter() - t0)
        snap = s.snapshot()
        eager_t = statistics.median(eager_for_tutorial)
        tut_fid = sum(statistics.median(v) for v in tut.node_s.values()) / eager_t
        tut_ovh = statistics.median(tut.run_s) / eager_t
        unattr = (snap.unattributed_s or 0) / (snap.eager_median_s or 1)
        print(
            f"{name:<22}{'×'.join(map(str, shape)):<16}{snap.fidelity:>15.3f}{tut_fid:>10.3f}"
            f"{snap.overhead:>16.3f}{tut_ovh:>10.3f}{unattr:>13.1%}"
        )


#: TorchDynamo captures: transformers models from their default configurations (random weights),
#: token ids 1×128, and the fx-traceable resnet18 captured both ways for comparison.
CAPTURE_CASES = [
    ("hf:bert", None, "auto"),
    ("hf:gpt2", None, "auto"),
    ("resnet18", (5, 3, 224, 224), "fx"),
    ("resnet18", (5, 3, 224, 224), "dynamo"),
]


def capture(runs: int = 30) -> None:
    print("== capture: fidelity and overhead per capture mode (30 runs interleaved with uninstrumented runs)")
    print(
        f"{'model':<12}{'input':<14}{'capture':<9}{'graphs':>7}{'nodes':>7}{'capture s':>11}{'fidelity':>10}"
        f"{'overhead':>10}{'uninstr.':>11}{'eager':>10}"
    )
    for name, shape, mode in CAPTURE_CASES:
        t0 = time.perf_counter()
        s = session_for_target(Target(name, input_shapes=(shape,) if shape else None, capture=mode), analyse=False)
        setup = time.perf_counter() - t0
        s.warm_up(3)
        for _ in range(runs):
            s.run_pair()
        snap = s.snapshot()
        ref = f"{snap.reference_median_s * 1e3:.1f} ms" if snap.reference_median_s else "–"
        shown = "×".join(map(str, shape)) if shape else "ids 1×128"
        print(
            f"{name:<12}{shown:<14}{s.graph.capture:<9}{s.graph.graphs:>7}{len(s.graph.nodes):>7}{setup:>11.1f}"
            f"{snap.fidelity:>10.3f}{snap.overhead:>10.3f}{(snap.eager_median_s or 0) * 1e3:>8.1f} ms{ref:>10}"
        )


#: Training steps: resnet18 at the issue's 4×3×128×128 with SGD, and a 2-layer BERT.
TRAIN_CASES = [
    ("resnet18", (4, 3, 128, 128), ()),
    ("hf:bert", None, (("num_hidden_layers", "2"),)),
]


def train(runs: int = 30, soak: int = 1000) -> None:
    print("== --train: one training step per run, interleaved with the same compiled step uninstrumented")
    print(
        f"{'model':<10}{'input':<14}{'nodes':>7}{'capture s':>11}{'fidelity':>10}{'overhead':>10}"
        f"{'step':>11}{'eager step':>12}{'bwd÷fwd':>9}{'optimizer':>11}"
    )
    for name, shape, config in TRAIN_CASES:
        t0 = time.perf_counter()
        target = Target(name, input_shapes=(shape,) if shape else None, hf_config=config, train=True)
        s = session_for_target(target, analyse=False)
        setup = time.perf_counter() - t0
        s.warm_up(3)
        for _ in range(runs):
            s.run_pair()
        snap = s.snapshot()
        phases = snap.phases
        shown = "×".join(map(str, shape)) if shape else "ids 1×128"
        ref = f"{snap.reference_median_s * 1e3:.1f} ms" if snap.reference_median_s else "–"
        print(
            f"{name:<10}{shown:<14}{len(s.graph.nodes):>7}{setup:>11.1f}{snap.fidelity:>10.3f}{snap.overhead:>10.3f}"
            f"{(snap.run_median_s or 0) * 1e3:>8.1f} ms{ref:>12}{phases['backward'] / phases['forward']:>9.2f}"
            f"{phases.get('optimizer', 0) * 1e3:>8.2f} ms"
        )
    print(f"== --train memory: RSS over {soak} steps of resnet18 1×3×64×64 after warm-up")
    s = session_for_target(Target("resnet18", input_shapes=((1, 3, 64, 64),), train=True), analyse=False)
    s.warm_up(10)
    start = _rss_mb()
    marks = []
    for i in range(1, soak + 1):
        s.run_pair()
        if i % (soak // 4) == 0:
            s.snapshot()
            marks.append(f"{i}: {_rss_mb() - start:+.1f} MB")
    print("  RSS after warm-up " + f"{start:.0f} MB; growth " + ", ".join(marks))


def _spearman(a: list[float], b: list[float]) -> float:
    def ranks(v: list[float]) -> list[float]:
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r

    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.mean(ra), statistics.mean(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    return cov / (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5


_BURNER = """
import time
end = time.time() + {seconds}
while time.time() < end:
    t = time.time()
    while time.time() - t < 0.15:
        pass
    time.sleep(0.6)
"""


def _one_session(threads: str, malloc: str, runs: int = 30) -> None:
    """Child process: one 30-run session as `fxtui resnet18 --once` runs it; JSON on stdout."""
    import json

    if malloc == "keep":
        from fxtui.measure.allocator import keep_freed_memory

        keep_freed_memory()
    if threads != "default":
        torch.set_num_threads(int(threads))
    s = session("resnet18", (5, 3, 224, 224))
    s.warm_up(3)
    for _ in range(runs):
        s.run_pair()
    snap = s.snapshot()
    names = [n.name for n in snap.graph.nodes if n.op not in ("placeholder", "output")]
    print(
        json.dumps(
            {
                "median": [snap.nodes[n].median_s for n in names],
                "min": [snap.nodes[n].min_s for n in names],
                "pct": [snap.nodes[n].pct for n in names],
                "unsteady": sum(snap.nodes[n].unsteady for n in names),
                "faults": snap.faults_per_run,
                "disturbed": snap.disturbance.disturbed if snap.disturbance else 0,
                "steps": snap.disturbance.steps if snap.disturbance else runs,
                "eager": snap.eager_median_s,
                "threads": torch.get_num_threads(),
                "names": names,
            }
        )
    )


def _session_in_child(threads: str, malloc: str) -> dict[str, Any]:
    import json

    out = subprocess.run(
        [sys.executable, __file__, "_session", threads, malloc], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


STABILITY_SETTINGS = (("default", "keep"), ("default", "glibc"), ("1", "keep"))
"""(threads, malloc): fxtui's defaults, glibc's own allocator policy, and one thread."""


def stability(pairs: int = 3) -> None:
    print(
        "== stability: pairs of independent 30-run sessions (each its own process, as two `fxtui --once` calls)"
        " on resnet18 5×3×224×224"
    )
    print(
        "   Spearman over all nodes, of the medians (what the table ranks by) and of the fastest runs;"
        " largest share difference; each session's uninstrumented median, unsteady nodes and page faults per run"
    )
    modes = ("quiet", "with a competing process (150 ms busy every 750 ms)")
    results: dict[tuple[str, tuple[str, str]], list[str]] = {
        (mode, setting): [] for mode in modes for setting in STABILITY_SETTINGS
    }
    # Quiet and competing pairs, and the settings within them, are interleaved pair by pair:
    # the machine drifts over minutes, and a drift must reach every column alike.
    for _ in range(pairs):
        for mode in modes:
            burner = None
            if mode != "quiet":
                burner = subprocess.Popen([sys.executable, "-c", _BURNER.format(seconds=3600)])
            try:
                for threads, malloc in STABILITY_SETTINGS:
                    a, b = _session_in_child(threads, malloc), _session_in_child(threads, malloc)
                    results[mode, (threads, malloc)].append(_pair_line(a, b))
            finally:
                if burner:
                    burner.terminate()
                    burner.wait()
    for mode in modes:
        print(f"  {mode}")
        for threads, malloc in STABILITY_SETTINGS:
            print(f"    threads {threads}, --malloc {malloc}")
            for line in results[mode, (threads, malloc)]:
                print(f"      {line}")


def _pair_line(a: dict[str, Any], b: dict[str, Any]) -> str:
    rho = _spearman(a["median"], b["median"])
    rho_min = _spearman(a["min"], b["min"])
    delta, worst = max((abs(x - y), n) for x, y, n in zip(a["pct"], b["pct"], a["names"], strict=True))
    return (
        f"median {rho:.3f}  fastest {rho_min:.3f}  share {delta:.2f} pp ({worst})"
        f"  uninstrumented {a['eager'] * 1e3:.1f}/{b['eager'] * 1e3:.1f} ms"
        f"  unsteady {a['unsteady']}/{b['unsteady']}  faults {a['faults']:.0f}/{b['faults']:.0f}"
        f"  disturbed steps {a['disturbed']}/{a['steps']}, {b['disturbed']}/{b['steps']} (left out)"
    )


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def memory() -> None:
    print("== memory: RSS after 100 and after 5,000 reruns of a small model")
    model = torch.nn.Sequential(*(torch.nn.Linear(64, 64) for _ in range(8))).eval()
    gm = torch.fx.symbolic_trace(model)
    s = Session(gm, (torch.randn(4, 64),))
    for _ in range(100):
        s.run_pair()
        s.snapshot()
    at_100 = _rss_mb()
    for k in range(4900):
        s.run_pair()
        if k % 50 == 0:
            s.snapshot()
    at_5000 = _rss_mb()
    print(f"  RSS after 100: {at_100:.1f} MB   after 5,000: {at_5000:.1f} MB   growth {at_5000 - at_100:+.2f} MB")


def startup(reps: int = 5) -> None:
    print("== start-up: `fxtui resnet18 --once --runs 1` against `python -c 'import torch, torchvision'`")
    fx = [sys.executable, "-m", "fxtui", "resnet18", "--once", "--runs", "1"]
    base = [sys.executable, "-c", "import torch, torchvision"]
    t_fx, t_base = [], []
    for _ in range(reps):
        for cmd, out in ((base, t_base), (fx, t_fx)):
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            out.append(time.perf_counter() - t0)
    mf, mb = statistics.median(t_fx), statistics.median(t_base)
    print(f"  import torch, torchvision {mb:.2f} s   fxtui --once --runs 1 {mf:.2f} s   difference {mf - mb:+.2f} s")


def _first_timings(target: str) -> None:
    """Child of :func:`first`: the live engine's path to its first timings, timed from after ``import torch``."""
    import json

    t0 = globals().get("TORCH_IMPORTED", time.perf_counter())
    from fxtui.core.snapshot import State
    from fxtui.measure.live import LiveSource
    from fxtui.measure.pipeline import session_for_target as build
    from fxtui.wire.viewer_commands import Stop

    phases: list[tuple[str, float]] = []
    source: LiveSource

    def progress(state: State, message: str) -> None:
        phases.append((message, time.perf_counter() - t0))

    def publish(snapshot: Any) -> None:
        if snapshot.state is State.WARMING_UP:
            phases.append(("warming up", time.perf_counter() - t0))
        if snapshot.runs and phases[-1][0] != "first timings":
            phases.append(("first timings", time.perf_counter() - t0))
            source.send(Stop())

    source = LiveSource(lambda p: build(Target(target), lambda s, m: (progress(s, m), p(s, m))[1], analyse=False))
    source.run(publish)
    print(json.dumps(phases))


def _floor(model_type: str) -> None:
    """Child of :func:`first`: what no profiler can skip: import transformers, build, one TorchDynamo capture."""
    import json

    t0 = globals().get("TORCH_IMPORTED", time.perf_counter())
    import transformers

    config = transformers.AutoConfig.for_model(model_type)
    with torch.device("meta"):
        model = transformers.AutoModel.from_config(config)
    model = model.to_empty(device="cpu")
    model.init_weights()
    built = time.perf_counter() - t0
    ids = torch.randint(0, config.vocab_size, (1, 128))
    compiled = torch.compile(model.eval(), backend=lambda gm, _: gm.forward, dynamic=False)
    with torch.inference_mode():
        compiled(input_ids=ids, attention_mask=torch.ones_like(ids))
    print(json.dumps([("import transformers and build", built), ("one TorchDynamo capture", time.perf_counter() - t0)]))


def first(reps: int = 3) -> None:
    print("== first timings of the live engine for hf:bert, seconds after `import torch` (fresh process each)")
    import json

    def child(*argv: str) -> list[tuple[str, float]]:
        code = (
            "import torch, sys, time; TORCH_IMPORTED = time.perf_counter(); "
            f"sys.argv[1:] = {list(argv)!r}; exec(open({__file__!r}).read())"
        )
        out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
        return [tuple(p) for p in json.loads(out.strip().splitlines()[-1])]

    engine, floor = [], []
    for _ in range(reps):  # interleaved: the machine drifts
        engine.append(child("_first", "hf:bert"))
        floor.append(child("_floor", "bert"))
    for label, runs in (("fxtui live engine", engine), ("floor: transformers + TorchDynamo alone", floor)):
        print(f"  {label}:")
        for i, (what, _) in enumerate(runs[0]):
            seconds = statistics.median(r[i][1] for r in runs)
            print(f"    {seconds:6.2f} s  {what}")


PARTS = {
    "fidelity": fidelity,
    "capture": capture,
    "stability": stability,
    "memory": memory,
    "startup": startup,
    "first": first,
    "train": train,
}

if __name__ == "__main__":
    if sys.argv[1:2] == ["_session"]:
        _one_session(*sys.argv[2:4])
        sys.exit(0)
    if sys.argv[1:2] == ["_first"]:
        _first_timings(sys.argv[2])
        sys.exit(0)
    if sys.argv[1:2] == ["_floor"]:
        _floor(sys.argv[2])
        sys.exit(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} cores")
    for part in sys.argv[1:] or list(PARTS):
        PARTS[part]()
