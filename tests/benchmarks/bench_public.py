"""fxtui run on real public programs, run as their READMEs say (small sizes, data made locally), beside python.

    python tests/benchmarks/bench_public.py --examples CHECKOUT --nanogpt CHECKOUT --lightning CHECKOUT
        --timm CHECKOUT [--only NAME,…] [--full] [--pairs N] [--keep DIR] [--corpus] [--timer mode native]
        [--threads N] [--bytecode-cache DIR]

The checkouts are pytorch/examples, karpathy/nanoGPT, Lightning-AI/pytorch-lightning and
huggingface/pytorch-image-models. Each program runs from its
checkout, in a temporary working directory where its data is made (nothing of theirs is copied into the project;
nanoGPT's data folder is a temporary copy, as its prepare.py writes beside itself):

* ``nanogpt``: ``train.py config/train_shakespeare_char.py --device=cpu --compile=False …`` on a text made here,
  prepared by its ``data/shakespeare_char/prepare.py`` (or, when that cannot run offline, the same
  ``train.bin``/``val.bin``/``meta.pkl`` made here in its format); smaller than issue 37's recipe unless ``--full``;
* ``word_language_model``: ``main.py`` (an LSTM, no optimizer object, ``torch.save(model)`` at the end) on a small
  corpus made here in the ``train.txt``/``valid.txt``/``test.txt`` layout it reads;
* ``dcgan``: ``main.py --dataset fake`` (torchvision's FakeData), one epoch;
* ``time_sequence_prediction``: ``generate_sine_wave.py``, then ``train.py`` (LBFGS over an unrolled ``LSTMCell``);
  the waves are cut shorter unless ``--full``; ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` lets its ``torch.load`` of a
  numpy array run on torch ≥ 2.6;
* ``lightning_bug_report``: Lightning's ``examples/pytorch/bug_report/bug_report_model.py`` (a ``Trainer.fit`` on
  random data), as it is;
* ``mnist_hogwild``: ``main.py --num-processes 2 --epochs 1`` (``torch.multiprocessing`` workers sharing a model,
  then the parent's test) on MNIST files made here in the ``MNIST/raw`` idx layout torchvision reads, in ``../data``
  as its code says (the program runs in a folder below the data's);
* ``vae``: ``main.py --epochs 1`` (a functional loss outside the model, ``model.decode()`` of samples under
  ``no_grad``, ``save_image`` into ``results/``) on the same made MNIST files;
* ``super_resolution``: ``main.py --upscale_factor 3 --nEpochs 1`` (one ``nn.ReLU`` reused at two shapes, an
  ``nn.MSELoss``) on a few random pictures made here in its ``dataset/BSDS300/images/{train,test}`` layout;
* ``timm_ema``: pytorch-image-models' ``train.py --model test_vit --model-ema --device cpu`` (an EMA validated
  under ``inference_mode``, checkpoints saved) on an ``ImageFolder`` of random pictures made here
  (``train/``, ``validation/``), two epochs.

With ``--corpus``, the test corpus's programs too (``tests/programs``: ``corpus_char_gpt``, ``corpus_vae_sampling``,
…), at sizes that run 5–20 s under python rather than the tests' few seconds, so that fxtui's fixed cost (about
0.3 s) is not most of what is measured.

Each runs under ``python`` and under ``python -m fxtui run --once --json`` with fxtui's defaults (as a user would),
in turn, ``--pairs`` times; with ``--timer mode native``, under each timer after python in each pair (their order
rotated pair by pair), each a row of its own, and the two timers' wall ratio printed per program. ``--threads 1``
runs both sides on one intra-op thread.

Printed per program: exit status under each and whether the program's output is the same (lines that print times
left out), steps by kind, sampled steps, fidelity, overhead, the whole program's wall time under fxtui ÷ under
python (median of the pairs, and their range), the same of the runs' CPU time (user and system, of the process
and the children it waited for), root share (Σ node medians charged to no module) and node count. The machine's
load is printed at the start and the end: read the figures with it.
"""

from __future__ import annotations

import argparse
import os
import pickle
import random
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.program_runs import (
    PY,
    ProgramRun,
    load_text,
    root_share,
    run_fxtui,
    run_python,
    step_kinds,
)


@dataclass
class Checkouts:
    examples: Path | None
    nanogpt: Path | None
    lightning: Path | None
    full: bool
    timm: Path | None = None
    corpus: Path | None = None  # tests/programs, with ``--corpus``


@dataclass
class Public:
    """A public program: how to make its data in a working directory and the command that runs it there."""

    name: str
    needs: str  # which checkout ("examples", "nanogpt", "lightning")
    prepare: Callable[[Checkouts, Path], list[str]]
    modules: tuple[str, ...] = ()  # Python modules it imports beyond torch (checked before running)
    env: tuple[tuple[str, str], ...] = ()  # set for both runs
    folder: str = ""  # the folder of the working directory it runs in (its data beside it: ``../data``)
    varies: str = ""  # why its output differs from one python run to the next (then "varies", not "DIFFERS")


# --- Data made here -----------------------------------------------------------------------------------------------


def made_text(chars: int, seed: int = 0) -> str:
    """Lines of made-up words: a text with enough structure for a language model's loss to fall."""
    rng = random.Random(seed)
    words = ["".join(rng.choice("etaoinshrdlucmfwypvbgk") for _ in range(rng.randint(1, 8))) for _ in range(2000)]
    lines, n = [], 0
    while n < chars:
        line = " ".join(rng.choice(words) for _ in range(rng.randint(3, 14)))
        line = line.capitalize() + rng.choice(".,;:!?")
        lines.append(line)
        n += len(line) + 1
    return "\n".join(lines)[:chars] + "\n"


def _char_dataset_files(folder: Path) -> None:
    """nanoGPT's shakespeare_char files made here in its format: uint16 ids, 90/10 split, meta.pkl with the maps."""
    import numpy as np

    data = (folder / "input.txt").read_text()
    chars = sorted(set(data))
    stoi = {ch: i for i, ch in enumerate(chars)}
    itos = dict(enumerate(chars))
    split = int(len(data) * 0.9)
    np.array([stoi[c] for c in data[:split]], dtype=np.uint16).tofile(folder / "train.bin")
    np.array([stoi[c] for c in data[split:]], dtype=np.uint16).tofile(folder / "val.bin")
    with open(folder / "meta.pkl", "wb") as f:
        pickle.dump({"vocab_size": len(chars), "itos": itos, "stoi": stoi}, f)


def prepare_nanogpt(c: Checkouts, work: Path) -> list[str]:
    assert c.nanogpt is not None
    for name in ("train.py", "model.py", "configurator.py", "config"):
        # train.py reads configurator.py and its config from its working directory, and writes out_dir there.
        (work / name).symlink_to(c.nanogpt / name)
    data = work / "data" / "shakespeare_char"
    data.mkdir(parents=True)
    shutil.copy(c.nanogpt / "data" / "shakespeare_char" / "prepare.py", data / "prepare.py")  # it writes beside itself
    (data / "input.txt").write_text(made_text(1_000_000 if c.full else 300_000))
    done = run_python(["prepare.py"], data, timeout=300)
    if done.status != 0 or not (data / "meta.pkl").exists():
        print(f"  (nanoGPT's prepare.py could not run offline: {_last_line(done.stderr)}; its files made here)")
        _char_dataset_files(data)
    recipe = [
        "train.py", "config/train_shakespeare_char.py", "--device=cpu", "--compile=False", "--eval_iters=20",
        "--log_interval=10", "--block_size=64", "--batch_size=12", "--n_layer=4", "--n_head=4", "--n_embd=128",
        "--max_iters=300", "--lr_decay_iters=300", "--dropout=0.0",
    ]  # fmt: skip
    if not c.full:  # issue 37's recipe, shorter: the evaluation at iteration 0 first, then 60 training steps
        recipe = [a.replace("=300", "=60").replace("--eval_iters=20", "--eval_iters=10") for a in recipe]
    return recipe


def prepare_word_lm(c: Checkouts, work: Path) -> list[str]:
    assert c.examples is not None
    data = work / "data" / "made"
    data.mkdir(parents=True)
    text = made_text(1_200_000 if c.full else 240_000, seed=1).splitlines()
    cut1, cut2 = int(len(text) * 0.8), int(len(text) * 0.9)
    for name, lines in (("train", text[:cut1]), ("valid", text[cut1:cut2]), ("test", text[cut2:])):
        (data / f"{name}.txt").write_text("\n".join(lines) + "\n")
    main = str(c.examples / "word_language_model" / "main.py")
    return [main, "--data", str(data), "--epochs", "2" if c.full else "1", "--save", str(work / "model.pt"),
            "--emsize", "100", "--nhid", "100", "--log-interval", "20"]  # fmt: skip


def prepare_dcgan(c: Checkouts, work: Path) -> list[str]:
    assert c.examples is not None
    main = str(c.examples / "dcgan" / "main.py")
    size = [] if c.full else ["--batchSize", "32", "--ngf", "32", "--ndf", "32"]
    return [main, "--dataset", "fake", "--niter", "1", "--outf", str(work / "out"), "--manualSeed", "1", *size]


def prepare_time_sequence(c: Checkouts, work: Path) -> list[str]:
    assert c.examples is not None
    folder = c.examples / "time_sequence_prediction"
    done = run_python([str(folder / "generate_sine_wave.py")], work, timeout=300)
    if done.status != 0:
        raise RuntimeError(f"generate_sine_wave.py failed: {_last_line(done.stderr)}")
    if not c.full:  # the same waves, shorter: 300 time steps (the cells' loop) instead of 1000
        import torch

        with open(work / "traindata.pt", "rb") as f:
            data = torch.load(f, weights_only=False)
        with open(work / "traindata.pt", "wb") as f:
            torch.save(data[:, :300].copy(), f)
    return [str(folder / "train.py"), "--steps", "3" if c.full else "2"]


def prepare_lightning_bug_report(c: Checkouts, work: Path) -> list[str]:
    assert c.lightning is not None
    return [str(c.lightning / "examples" / "pytorch" / "bug_report" / "bug_report_model.py")]


def _mnist_files(root: Path, train: int, test: int) -> None:
    """MNIST as torchvision reads it (``root/MNIST/raw``, idx files, uncompressed), random digits made here."""
    import numpy as np

    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for prefix, n in (("train", train), ("t10k", test)):
        pixels = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, n, dtype=np.uint8)
        # idx: two zero bytes, the type (0x08: unsigned byte), the number of dimensions, each size big-endian
        (raw / f"{prefix}-images-idx3-ubyte").write_bytes(
            bytes([0, 0, 8, 3]) + np.array([n, 28, 28], dtype=">i4").tobytes() + pixels.tobytes()
        )
        (raw / f"{prefix}-labels-idx1-ubyte").write_bytes(
            bytes([0, 0, 8, 1]) + np.array([n], dtype=">i4").tobytes() + labels.tobytes()
        )


def _pictures(folder: Path, n: int, size: int, seed: int, suffix: str = ".jpg") -> None:
    """``n`` random RGB pictures of ``size``² in ``folder``."""
    import numpy as np
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for i in range(n):
        Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)).save(folder / f"{i:04d}{suffix}")


#: A folder of the working directory put first on both runs' ``PYTHONPATH`` when it exists: a stand-in for a module a
#: program imports but never uses here (``six``, where it is not installed).
SHIM = "shim"


def prepare_mnist_hogwild(c: Checkouts, work: Path) -> list[str]:
    assert c.examples is not None
    _mnist_files(work / "data", 1280 if c.full else 640, 400)
    (work / "run").mkdir()
    main = str(c.examples / "mnist_hogwild" / "main.py")
    return [main, "--num-processes", "2", "--epochs", "2" if c.full else "1", "--test-batch-size", "100",
            "--log-interval", "5"]  # fmt: skip


def prepare_vae(c: Checkouts, work: Path) -> list[str]:
    assert c.examples is not None
    _mnist_files(work / "data", 2560 if c.full else 1280, 512)
    (work / "run" / "results").mkdir(parents=True)
    return [str(c.examples / "vae" / "main.py"), "--epochs", "2" if c.full else "1", "--batch-size", "64",
            "--log-interval", "5"]  # fmt: skip


def prepare_super_resolution(c: Checkouts, work: Path) -> list[str]:
    assert c.examples is not None
    if not _importable("six"):  # its data.py imports six.moves.urllib (for a download it does not need here)
        shim = work / SHIM / "six"
        shim.mkdir(parents=True)
        (shim / "__init__.py").write_text("")
        (shim / "moves.py").write_text("import urllib  # the standard library's, as six.moves names it\n")
    images = work / "dataset" / "BSDS300" / "images"
    _pictures(images / "train", 80 if c.full else 40, 256, 1)
    _pictures(images / "test", 8, 256, 2)
    return [str(c.examples / "super_resolution" / "main.py"), "--upscale_factor", "3", "--batchSize", "4",
            "--testBatchSize", "4", "--nEpochs", "2" if c.full else "1", "--threads", "0"]  # fmt: skip


def prepare_timm_ema(c: Checkouts, work: Path) -> list[str]:
    assert c.timm is not None
    for seed, (split, label, n) in enumerate((("train", "a", 24), ("train", "b", 24), ("validation", "a", 8),
                                             ("validation", "b", 8))):  # fmt: skip
        _pictures(work / "images" / split / label, n, 64, seed, ".png")
    return [str(c.timm / "train.py"), "--data-dir", str(work / "images"), "--model", "test_vit", "--model-ema",
            "--device", "cpu", "--num-classes", "2", "--img-size", "64", "--batch-size", "8",
            "--validation-batch-size", "8", "--epochs", "3" if c.full else "2", "-j", "1", "--warmup-epochs", "0",
            "--log-interval", "2", "--output", str(work / "output")]  # fmt: skip


#: The test corpus's programs (tests/programs), at sizes that run 5–20 s under python on one intra-op thread (the
#: corpus tests run them for seconds): each with ``--corpus``, as ``corpus_NAME``.
CORPUS_SIZES = {
    "char_gpt": ("--iters", "200", "--eval-iters", "10", "--log-interval", "10"),
    "vae_sampling": ("--epochs", "4", "--batches", "100", "--test-batches", "6"),
    "word_lm": ("--words", "40000", "--epochs", "2", "--log-interval", "5"),
    "reused_module": ("--epochs", "3", "--batches", "30", "--test-batches", "5"),
    "gan": ("--iters", "60", "--ngf", "64"),
}


def prepare_corpus(name: str) -> Callable[[Checkouts, Path], list[str]]:
    """A corpus program's command at its size above (it makes its own data, in memory)."""

    def prepare(c: Checkouts, work: Path) -> list[str]:
        assert c.corpus is not None
        return [str(c.corpus / f"{name}.py"), *CORPUS_SIZES[name]]

    return prepare


PROGRAMS = [
    Public("nanogpt", "nanogpt", prepare_nanogpt, ("numpy",)),
    Public("word_language_model", "examples", prepare_word_lm),
    Public("dcgan", "examples", prepare_dcgan, ("torchvision",)),
    # Its train.py torch.load()s a numpy array, which torch ≥ 2.6 refuses by default (weights_only): the variable
    # torch reads for such programs lets it run unchanged.
    Public(
        "time_sequence_prediction",
        "examples",
        prepare_time_sequence,
        ("numpy", "matplotlib"),
        (("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1"),),
    ),
    Public("lightning_bug_report", "lightning", prepare_lightning_bug_report, ("lightning",)),
    Public(
        "mnist_hogwild",
        "examples",
        prepare_mnist_hogwild,
        ("torchvision", "numpy"),
        folder="run",
        varies="each worker prints its pid, and hogwild's updates race: losses differ between two python runs too",
    ),
    Public("vae", "examples", prepare_vae, ("torchvision", "numpy"), folder="run"),
    Public("super_resolution", "examples", prepare_super_resolution, ("torchvision", "numpy", "PIL")),
    Public("timm_ema", "timm", prepare_timm_ema, ("timm", "numpy", "PIL")),
    *(Public(f"corpus_{name}", "corpus", prepare_corpus(name)) for name in CORPUS_SIZES),
]


# --- Running and printing -----------------------------------------------------------------------------------------


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no message"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


@dataclass
class Row:
    name: str
    python: list[ProgramRun]
    fxtui: list[ProgramRun]
    varies: str = ""
    cpu: list[float] = field(default_factory=list)  # per pair: CPU seconds under fxtui ÷ under python

    def cells(self) -> list[str]:
        py, fx = self.python[-1], self.fxtui[-1]
        same = "same" if py.program_lines() == fx.program_lines() else "varies" if self.varies else "DIFFERS"
        kinds = step_kinds(fx.meta)
        steps = " ".join(f"{k} {f.steps}" for k, f in kinds.items()) or "none"
        sampled = " ".join(f"{k} {f.sampled}" for k, f in kinds.items()) or "-"
        fidelity = " ".join(f"{_ratio(f.fidelity)}" for f in kinds.values()) or "-"
        overhead = " ".join(f"{_ratio(f.overhead)}" for f in kinds.values()) or "-"
        walls = sorted(f.wall_s / p.wall_s for p, f in zip(self.python, self.fxtui, strict=True))
        slowdown = statistics.median(walls)
        return [
            self.name, f"{py.status}/{fx.status}", same, steps, sampled, fidelity, overhead,
            f"{slowdown:.3f} ({walls[0]:.3f}–{walls[-1]:.3f}; {py.wall_s:.0f}s)",
            f"{statistics.median(self.cpu):.3f} ({min(self.cpu):.3f}–{max(self.cpu):.3f})" if self.cpu else "-",
            f"{100 * root_share(fx.rows):.1f}%",
            str(len(fx.rows)),
        ]  # fmt: skip


HEADER = ["program", "exit py/fx", "output", "steps by kind", "sampled", "fidelity", "overhead", "wall fx÷py",
          "cpu fx÷py", "root", "nodes"]  # fmt: skip


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [HEADER, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def describe(row: Row) -> list[str]:
    """What differed or failed, under the table: the first differing line, the last line of a failure."""
    py, fx = row.python[-1], row.fxtui[-1]
    notes = []
    for label, run in (("python", py), ("fxtui", fx)):
        if run.status != 0:
            notes.append(f"{row.name}: under {label} exited {run.status}: {_last_line(run.stderr)}")
    a, b = py.program_lines(), fx.program_lines()
    if a != b and row.varies:
        notes.append(f"{row.name}: output varies by design ({row.varies}); same number of lines: {len(a) == len(b)}")
    elif a != b:
        first = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        notes.append(
            f"{row.name}: output differs from line {first + 1} "
            f"(python {len(a)} lines, fxtui {len(b)}): {a[first] if first < len(a) else '(end)'!r} vs "
            f"{b[first] if first < len(b) else '(end)'!r}"
        )
    steps_line = next((line for line in fx.stdout.splitlines() if line.startswith("steps ")), "")
    if steps_line:
        notes.append(f"{row.name}: fxtui says: {steps_line.strip()}")
    return notes


#: ``--timer unsampled``: every step a warm-up step (none is timed per op), the cost of ``fxtui run`` itself;
#: ``--timer every5``: the native timer at one step in five, the pace's ceiling before it let cheap samples come one
#: step in two (the comparison of that change, in one run).
TIMER_OPTIONS = {"unsampled": ("--warmup-steps", "1000000000"), "every5": ("--timer", "native", "--sample-every", "5")}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", type=Path, help="a checkout of pytorch/examples")
    p.add_argument("--nanogpt", type=Path, help="a checkout of karpathy/nanoGPT")
    p.add_argument("--lightning", type=Path, help="a checkout of Lightning-AI/pytorch-lightning")
    p.add_argument("--timm", type=Path, help="a checkout of huggingface/pytorch-image-models")
    p.add_argument("--only", default="", help="comma-separated program names: " + ", ".join(x.name for x in PROGRAMS))
    p.add_argument("--full", action="store_true", help="the READMEs' (and issue 37's) sizes, not the small ones")
    p.add_argument("--pairs", type=int, default=1, help="python/fxtui pairs per program (the wall ratio's median)")
    p.add_argument("--keep", type=Path, help="keep each program's working directory under this folder")
    p.add_argument("--corpus", action="store_true", help="the test corpus's programs too (tests/programs), longer")
    p.add_argument(
        "--timer",
        nargs="+",
        choices=("mode", "native", "unsampled", "every5"),
        default=[""],
        help="fxtui run --timer: each one given runs in every pair, in turn (default: fxtui's own default); "
        "unsampled: every step a warm-up step, so no step is timed per op (what fxtui run costs without a sample); "
        "every5: the native timer at one step in five",
    )
    p.add_argument("--threads", type=int, help="OMP_NUM_THREADS for both runs (default: the programs' own)")
    p.add_argument(
        "--bytecode-cache",
        metavar="DIR",
        help="both runs with Python's bytecode cached in DIR (PYTHONPYCACHEPREFIX), as an installed fxtui and the "
        "program's own modules have it; without it, PYTHONDONTWRITEBYTECODE=1 (as this machine sets) compiles every "
        "fxtui module of every process at each start",
    )
    a = p.parse_args(argv)
    if a.bytecode_cache:
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ["PYTHONPYCACHEPREFIX"] = str(Path(a.bytecode_cache).resolve())
    resolved = [path.resolve() if path else None for path in (a.examples, a.nanogpt, a.lightning, a.timm)]
    corpus = Path(__file__).resolve().parents[1] / "programs" if a.corpus else None
    checkouts = Checkouts(*resolved[:3], a.full, resolved[3], corpus)
    chosen = [x for x in PROGRAMS if not a.only or x.name in a.only.split(",")]
    print(f"start: {load_text()}; python {PY}")
    rows: list[Row] = []
    skipped: list[str] = []
    for program in chosen:
        checkout = getattr(checkouts, program.needs)
        if checkout is None or not checkout.is_dir():
            skipped.append(f"{program.name}: no --{program.needs} checkout given")
            continue
        missing = [m for m in program.modules if not _importable(m)]
        if missing:
            skipped.append(f"{program.name}: needs {', '.join(missing)} (pip install {' '.join(missing)})")
            continue
        timed = {timer: Row(f"{program.name} {timer}".strip(), [], [], program.varies) for timer in a.timer}
        for pair in range(a.pairs):
            with tempfile.TemporaryDirectory(prefix=f"bench-{program.name}-") as directory:
                work = Path(directory)
                command = program.prepare(checkouts, work)
                env = {**_env(), **dict(program.env), **({"OMP_NUM_THREADS": str(a.threads)} if a.threads else {})}
                if (work / SHIM).is_dir():
                    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(work / SHIM), env.get("PYTHONPATH")) if p)
                cwd = work / program.folder
                before = _children_cpu()
                python = run_python(command, cwd, env=env, timeout=3600)
                python_cpu = _children_cpu() - before
                _progress(program.name, "python", python)
                # the timers in turn after python, their order rotated each pair: a drift of the machine reaches each
                for timer in a.timer[pair % len(a.timer) :] + a.timer[: pair % len(a.timer)]:
                    options = TIMER_OPTIONS.get(timer, ("--timer", timer) if timer else ())
                    timed[timer].python.append(python)
                    before = _children_cpu()
                    timed[timer].fxtui.append(run_fxtui(command, cwd, options, env=env, timeout=3600))
                    timed[timer].cpu.append((_children_cpu() - before) / python_cpu)
                    _progress(program.name, f"fxtui {timer}".strip(), timed[timer].fxtui[-1])
                if a.keep:
                    shutil.copytree(work, a.keep / program.name, symlinks=True, dirs_exist_ok=True)
        rows.extend(timed.values())
        for other in a.timer[1:]:  # each timer's whole runs against the first one's, pair by pair
            first, second = timed[a.timer[0]].fxtui, timed[other].fxtui
            ratios = sorted(s.wall_s / f.wall_s for f, s in zip(first, second, strict=True))
            cpus = sorted(s / f for f, s in zip(timed[a.timer[0]].cpu, timed[other].cpu, strict=True))
            print(f"  {program.name}: under --timer {other} ÷ --timer {a.timer[0]}: wall median "
                  f"{statistics.median(ratios):.3f} ({ratios[0]:.3f}–{ratios[-1]:.3f}), CPU median "
                  f"{statistics.median(cpus):.3f} ({cpus[0]:.3f}–{cpus[-1]:.3f})")  # fmt: skip
    print()
    print(table([r.cells() for r in rows]))
    print()
    for row in rows:
        for note in describe(row):
            print(note)
    for line in skipped:
        print(f"skipped {line}")
    print(f"end: {load_text()}")
    return 0


def _children_cpu() -> float:
    """CPU seconds (user and system) of this process's ended children and what they waited for: a run's, read
    before and after it. A busy machine stretches a run's wall time far more than its CPU time."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _progress(name: str, under: str, run: ProgramRun) -> None:
    print(f"  {name}: {under} {run.wall_s:.1f}s, exit {run.status}, load {run.load:.2f} at its end", flush=True)


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _env() -> dict[str, str]:
    """The programs' environment: this one, without a progress bar's terminal tricks."""
    return {**os.environ, "TERM": "dumb"}


if __name__ == "__main__":
    sys.exit(main())
