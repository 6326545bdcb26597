"""fxtui run's figures: what it costs a program, how honest its node times are, how soon a viewer sees them.

    python tests/benchmarks/bench_run.py [slowdown] [fidelity] [modules] [latency] [attach] [compiled]

* ``slowdown``: whole-program wall time under ``fxtui run --once`` (and detached, no viewer) against plain
  ``python``, interleaved pairs, on a ≥30 s training script and an inference loop;
* ``fidelity``: fidelity and overhead (``--json``) for a small CNN training script, a transformers ``Trainer``
  fine-tune and a resnet18 inference loop;
* ``modules``: per-module forward and backward time of resnet18's training step under ``fxtui run`` against
  fxtui's own ``train`` capture of the same model and batch (ratio per top-level module above 1 ms);
* ``latency``: from a program's step to that step on a viewer's screen;
* ``attach``: a viewer attaching to a job 10,000 steps in: first figures, and the job's step time meanwhile;
* ``compiled``: scripts that ``torch.compile`` resnet18 (inference, and a training step): their median step,
  and their first (compiling) call, under ``fxtui run --once`` against plain ``python``; fidelity and overhead
  of the sampled steps, whose kernels fxtui times (not part of the default set: it compiles 12 times).

Every comparison runs its sides in turn, pair by pair, so a drift of the machine reaches both; medians
are quoted. The machine's load is printed at the start and the end: read the figures with it.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

PY = sys.executable
THREADS = {"OMP_NUM_THREADS": "2"}

TRAIN = """
import sys, time, torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32)
        self.conv2, self.bn2 = nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64)
        self.fc = nn.Linear(64, 10)
    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(x.mean((2, 3)))
seconds = float(sys.argv[1])
data = DataLoader(TensorDataset(torch.randn(2048, 3, 64, 64), torch.randint(0, 10, (2048,))), batch_size=32,
                  shuffle=True)
model = Net()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, 10_000)
end = time.monotonic() + seconds
steps, took, last = 0, [], time.perf_counter()
while time.monotonic() < end:
    for x, y in data:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(); sched.step(); loss.item()
        steps += 1
        now = time.perf_counter(); took.append(now - last); last = now
        if time.monotonic() >= end:
            break
took.sort()
print("steps", steps, "median_step_s", took[len(took) // 2])
"""

INFER = """
import sys, time, torch, torchvision
torch.manual_seed(0)
model = torchvision.models.resnet18().eval()
x = torch.randn(5, 3, 224, 224)
end = time.monotonic() + float(sys.argv[1])
calls, took, last = 0, [], time.perf_counter()
with torch.inference_mode():
    while time.monotonic() < end:
        model(x); calls += 1
        now = time.perf_counter(); took.append(now - last); last = now
took.sort()
print("calls", calls, "median_step_s", took[len(took) // 2])
"""

TRAINER = """
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments
config = BertConfig(vocab_size=2048, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=512, max_position_embeddings=128, num_labels=3)
model = BertForSequenceClassification(config)
class Data(torch.utils.data.Dataset):
    def __len__(self):
        return 100_000
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return {"input_ids": torch.randint(0, 2048, (64,), generator=g), "labels": torch.tensor(i % 3)}
args = TrainingArguments(output_dir="out", max_steps=300, per_device_train_batch_size=8, report_to=[], use_cpu=True,
                         logging_steps=10_000, save_strategy="no", disable_tqdm=True)
Trainer(model=model, args=args, train_dataset=Data()).train()
"""

RESNET_STEP = """
import sys, torch, torchvision, torch.nn.functional as F
torch.manual_seed(0)
model = torchvision.models.resnet18().train()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x, y = torch.randn(4, 3, 128, 128), torch.randint(0, 1000, (4,))
for _ in range(int(sys.argv[1])):
    opt.zero_grad(); F.cross_entropy(model(x), y).backward(); opt.step()
"""


COMPILED = """
import sys, time, torch, torchvision, torch.nn.functional as F
torch.manual_seed(0)
train = sys.argv[2] == "train"
model = torchvision.models.resnet18().train(train)
compiled = torch.compile(model)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x, y = (torch.randn(4, 3, 128, 128), torch.randint(0, 1000, (4,))) if train else (torch.randn(5, 3, 224, 224), None)
def step():
    if train:
        opt.zero_grad(); F.cross_entropy(compiled(x), y).backward(); opt.step()
    else:
        with torch.no_grad():
            compiled(x)
t0 = time.perf_counter(); step(); first = time.perf_counter() - t0
end = time.monotonic() + float(sys.argv[1])
calls, took, last = 0, [], time.perf_counter()
while time.monotonic() < end:
    step(); calls += 1
    now = time.perf_counter(); took.append(now - last); last = now
took.sort()
print("calls", calls, "median_step_s", took[len(took) // 2], "first_s", first)
"""


def compiled(work: Path, pairs: int = 3, seconds: float = 30.0) -> None:
    """A compiled model's program under fxtui run against plain python: each step, and the compile."""
    script = work / "compiled.py"
    script.write_text(textwrap.dedent(COMPILED))
    for kind in ("infer", "train"):
        steps, firsts, costs, fidelities, overheads = [], [], [], [], []
        for _ in range(pairs):
            plain = _run([PY, str(script), str(seconds), kind], work)
            out = work / "compiled.json"
            watched = _run(fxtui("--json", str(out), str(script), str(seconds), kind), work)
            meta = json.loads(out.read_text())["metadata"]
            steps.append(watched[1] / plain[1])
            firsts.append(watched[2] / plain[2])
            costs.append(meta["steps"]["sampled"])
            fidelities.append(meta["fidelity"])
            overheads.append(meta["overhead"])
            print(f"  {kind}: plain {plain}, watched {watched} (calls, median step s, first call s)")
        print(f"compiled resnet18 ({kind}): median step under fxtui ÷ plain {statistics.median(steps):.3f} "
              f"({min(steps):.3f}–{max(steps):.3f}); first (compiling) call ÷ plain {statistics.median(firsts):.3f} "
              f"({min(firsts):.3f}–{max(firsts):.3f}); fidelity {statistics.median(fidelities):.3f} "
              f"({min(fidelities):.3f}–{max(fidelities):.3f}), overhead of a sampled step "
              f"{statistics.median(overheads):.3f}; sampled steps {costs}")  # fmt: skip


def _run(command: list[str], cwd: Path) -> tuple[int, float, float]:
    """The compiled script's calls, median step and first call (seconds)."""
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env={**os.environ, **THREADS})
    if done.returncode != 0:
        raise SystemExit(f"{command} failed:\n{done.stderr[-2000:]}")
    line = next(line for line in done.stdout.splitlines() if line.startswith("calls")).split()
    return int(line[1]), float(line[3]), float(line[5])


def load() -> str:
    return "load average " + " ".join(f"{v:.2f}" for v in os.getloadavg())


def fxtui(*args: str) -> list[str]:
    return [PY, "-m", "fxtui", "run", "--once", *args]


def slowdown(work: Path, pairs: int = 4, seconds: float = 30.0) -> None:
    """Wall time of the whole program, interleaved pairs; the script's own duration is fixed, so what differs is
    how much work it got done and what fxtui added around it: both scripts print their count of steps too.

    Steps done in 30 s move with the machine's bursts (on a shared VM the same plain script did 495–699); the
    scripts also print their median step, which bursts barely move: its ratio is what fxtui adds to every step
    (its hooks), and the header's cost line what the sampled steps add on top.
    """
    for name, body in (("training script (small CNN, DataLoader, AdamW, clipping)", TRAIN),
                       ("inference loop (resnet18 5×3×224×224)", INFER)):  # fmt: skip
        script = work / f"{name.split()[0]}.py"
        script.write_text(textwrap.dedent(body))
        ratios, detached, counts, per_step, costs = [], [], [], [], []
        for _ in range(pairs):
            plain = _steps([PY, str(script), str(seconds)], work)
            watched = _steps(fxtui(str(script), str(seconds)), work)
            alone = _detached_steps(script, seconds)
            ratios.append(plain[0] / watched[0])
            detached.append(plain[0] / alone)
            per_step.append(watched[1] / plain[1])
            costs.append(watched[2])
            counts.append((plain[0], watched[0], alone))
        print(f"{name}: steps done in {seconds:.0f} s plain, under fxtui run --once, detached with no viewer: "
              f"{counts}; slowdown (plain ÷ watched steps) median {statistics.median(ratios):.3f} "
              f"({min(ratios):.3f}–{max(ratios):.3f}), detached {statistics.median(detached):.3f} "
              f"({min(detached):.3f}–{max(detached):.3f}); median step under fxtui ÷ plain "
              f"{statistics.median(per_step):.3f} ({min(per_step):.3f}–{max(per_step):.3f}); sampling cost "
              f"{statistics.median(costs):.2f}% ({min(costs):.2f}–{max(costs):.2f}%)")  # fmt: skip


def _detached_steps(script: Path, seconds: float) -> int:
    """The program's own count of steps, run as a detached job that no viewer watches."""
    from fxtui.core.settings import ProgramSettings
    from fxtui.jobs.job_start import start_detached
    from fxtui.wire.job_directory import find_job

    os.environ.update(THREADS)
    job, directory = start_detached(ProgramSettings((str(script), str(seconds))))
    while find_job(job.id).running:
        time.sleep(0.5)
    line = next(
        line for line in (directory / "output.log").read_text().splitlines() if line.startswith(("steps", "calls"))
    )
    return int(line.split()[1])


def _steps(command: list[str], cwd: Path) -> tuple[int, float, float]:
    """The program's steps, its median step (seconds) and, under fxtui, the header's sampling cost (%)."""
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env={**os.environ, **THREADS})
    if done.returncode != 0:
        raise SystemExit(f"{command} failed:\n{done.stderr[-2000:]}")
    line = next(line for line in done.stdout.splitlines() if line.startswith(("steps", "calls"))).split()
    cost = next((c for c in done.stdout.splitlines() if c.startswith("cost ")), "")
    share = float(cost.split("about ")[1].split("%")[0]) if "about " in cost else 0.0
    return int(line[1]), float(line[3]), share


#: The same fine-tune on a model whose ops outweigh the Python around them (the small one's do not: its fidelity
#: says how much of a step is transformers' and the Trainer's own Python).
TRAINER_BASE = (
    TRAINER.replace("hidden_size=128, num_hidden_layers=2, num_attention_heads=2,",
                    "hidden_size=256, num_hidden_layers=4, num_attention_heads=4,")
    .replace("intermediate_size=512,", "intermediate_size=1024,")
    .replace("(64,)", "(128,)")
    .replace("max_steps=300", "max_steps=120")
)  # fmt: skip


def fidelity(work: Path) -> None:
    for name, body, args in (("small CNN training script", TRAIN, ["30"]),
                             ("transformers Trainer fine-tune (BERT 2 layers, 128 wide, 64 tokens)", TRAINER, []),
                             ("transformers Trainer fine-tune (BERT 4 layers, 256 wide, 128 tokens)", TRAINER_BASE, []),
                             ("resnet18 inference loop", INFER, ["30"])):  # fmt: skip
        script = work / "fid.py"
        script.write_text(textwrap.dedent(body))
        out = work / "fid.json"
        subprocess.run(fxtui("--json", str(out), str(script), *args), cwd=work, capture_output=True,
                       env={**os.environ, **THREADS}, check=True)  # fmt: skip
        meta = json.loads(out.read_text())["metadata"]
        steps = meta["steps"]
        extra = max(steps["sampled_median_s"] - steps["step_median_s"], 0.0) * steps["sampled"]
        whole = (
            steps["step_median_s"] * (steps["steps"] - steps["sampled"]) + steps["sampled_median_s"] * steps["sampled"]
        )
        print(
            f"{name}: fidelity {meta['fidelity']:.3f} overhead {meta['overhead']:.3f} "
            f"({steps['steps']} steps, {steps['sampled']} sampled; fidelity range {meta.get('fidelity_range')}); "
            f"sampling cost {100 * extra / whole:.2f}% of the steps' time (sampled steps' extra, from the medians)"
        )


def modules(work: Path, steps: int = 60) -> None:
    """Per module, forward and backward under fxtui run against fxtui's train capture of the same step.

    Like with like: fxtui's own process keeps freed memory (``--malloc keep``), so the program runs with glibc told
    the same (``GLIBC_TUNABLES``); under glibc's default a program maps its large gradients afresh every step and
    pays the page faults in the ops that fill them (printed too: that is what the user's program pays).
    """
    import torch
    import torchvision

    from fxtui import profile
    from fxtui.measure.allocator import keep_freed_memory

    torch.set_num_threads(2)
    script = work / "resnet_step.py"
    script.write_text(textwrap.dedent(RESNET_STEP))
    keep = {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=2147483647:glibc.malloc.mmap_max=0"}
    runs = {}
    for name, env in (("keep", keep), ("default", {})):
        out = work / f"mods-{name}.json"
        subprocess.run(fxtui("--json", str(out), "--sample-every", "3", str(script), str(steps)), cwd=work,
                       capture_output=True, env={**os.environ, **THREADS, **env}, check=True)  # fmt: skip
        runs[name] = {m["path"]: m for m in json.loads(out.read_text())["modules"]}
    keep_freed_memory()
    torch.manual_seed(0)
    reference = profile(torchvision.models.resnet18(), torch.randn(4, 3, 128, 128), train=True, runs=20)
    theirs = {m.path: m for m in reference.modules}
    print("module        run fwd   train fwd  ratio   run bwd   train bwd  ratio   (ms; glibc default: fwd, bwd)")
    for path in ("conv1", "bn1", "maxpool", "layer1", "layer2", "layer3", "layer4", "fc"):
        a, b, c = runs["keep"].get(path), theirs.get(path), runs["default"].get(path)
        if a is None or b is None or c is None:
            continue
        print(
            f"{path:<12} {a['forward_s'] * 1e3:8.2f} {b.forward_s * 1e3:10.2f} {a['forward_s'] / b.forward_s:6.2f} "
            f"{a['backward_s'] * 1e3:9.2f} {b.backward_s * 1e3:10.2f} {a['backward_s'] / max(b.backward_s, 1e-12):6.2f}"
            f"   {c['forward_s'] * 1e3:.2f}, {c['backward_s'] * 1e3:.2f}"
        )


def latency(work: Path) -> None:
    """From the program's step 20 (it notes the time) to a viewer seeing 20 − warm-up steps."""
    from fxtui.core.settings import ProgramSettings
    from fxtui.jobs.job_start import start_detached
    from fxtui.wire.attach_source import AttachSource

    script = work / "lat.py"
    # The job runs in this process's directory: the mark goes to ``work`` by its whole path.
    mark = work / "step20"
    script.write_text(textwrap.dedent(TRAIN).replace("steps += 1", "steps += 1\n        "
                      f"if steps == 20: open({str(mark)!r}, 'w').write(repr(time.time()))"))  # fmt: skip
    job, _ = start_detached(ProgramSettings((str(script), "20"), warmup=5))
    source = AttachSource(job)
    seen: list[float] = []

    def watch(snapshot: object) -> None:
        steps = getattr(snapshot, "steps", None)
        if steps is not None and steps.steps >= 15 and not seen:
            seen.append(time.time())

    import threading

    threading.Thread(target=source.run, args=(watch,), daemon=True).start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (seen and mark.exists()):
        time.sleep(0.05)
    stepped = float(mark.read_text())
    print(f"step 20 of the program to a viewer seeing it: {seen[0] - stepped:.3f} s")
    from fxtui.wire.viewer_commands import StopProgram

    source.send(StopProgram())


def attach(work: Path) -> None:
    """A job 10,000 steps in: how soon a viewer sees its figures, and its step time before, during and after."""
    from fxtui.core.settings import ProgramSettings
    from fxtui.jobs.job_start import start_detached
    from fxtui.wire.attach_source import AttachSource
    from fxtui.wire.job_directory import find_job
    from fxtui.wire.viewer_commands import Stop, StopProgram

    script = work / "many.py"
    script.write_text(textwrap.dedent("""
        import torch, time, sys
        model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        step, last = 0, time.perf_counter()
        while True:
            opt.zero_grad(); model(torch.randn(16, 64)).sum().backward(); opt.step(); step += 1
            if step % 1000 == 0:
                now = time.perf_counter()
                print(step, (now - last) / 1000 * 1e6, flush=True)
                last = now
    """))  # fmt: skip
    job, directory = start_detached(ProgramSettings((str(script),)))
    log = directory / "output.log"
    while find_job(job.id).steps < 10_000:
        time.sleep(0.5)
    started = time.perf_counter()
    source = AttachSource(job)
    snapshot = source.take(30)
    first = time.perf_counter() - started
    time.sleep(3)
    paces = [float(line.split()[1]) for line in log.read_text().splitlines() if line.split()[0].isdigit()]
    print(f"attach after {find_job(job.id).steps} steps: first figures in {first:.2f} s "
          f"({snapshot.steps.steps if snapshot and snapshot.steps else 0} steps in them); µs per step, "
          f"each 1,000 steps, the last twelve: {[round(p) for p in paces[-12:]]}")  # fmt: skip
    stopper = AttachSource(job)
    stopper.send(StopProgram())
    stopper.send(Stop())


def main() -> None:
    wanted = set(sys.argv[1:]) or {"slowdown", "fidelity", "modules", "latency", "attach"}
    print(load())
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name in ("slowdown", "fidelity", "modules", "latency", "attach", "compiled"):
            if name in wanted:
                print(f"== {name}")
                globals()[name](work)
    print(load())


if __name__ == "__main__":
    main()
