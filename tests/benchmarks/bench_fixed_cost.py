"""What fxtui run adds to a program's wall time, whatever the program: its fixed cost.

    python tests/benchmarks/bench_fixed_cost.py [--pairs N] [--before CHECKOUT]

A script that only imports torch and calls one ``nn.Linear`` runs, in turn, round after round:
plain ``python``, ``fxtui run --once``, and ``fxtui run --detach`` followed by waiting for the
job's end (its ``job.json`` saying so). The order rotates each round, so a drift of the machine
reaches every side alike. Each run's wall time is split where the script prints the clock: from
the launch to the script's first line (start-up: fxtui's command, the collector's set-up, Python),
from its first to its last line (torch's import, and the agent's after it), from its last line to
the end (Python's and torch's finalization; the profile; the job's end). Medians are printed, and
each side's extra over python, and the processor time of the processes each run waited for (the
program, and fxtui's command, which becomes it: a figure a busy machine changes less than wall time; the
collectors that run beside are not in it); the machine's load average at the start and the end: read the
figures with it (run when ``uptime`` is under ~1.5). ``--before CHECKOUT`` adds both fxtui sides run
from another checkout of fxtui (its directory first on ``PYTHONPATH``), in the same rounds; the other sides run this
file's checkout. Every side runs in the script's directory (``python -m`` puts the working directory first on the
path: run from a checkout, both sides would import that one).

Python compiles a module it has no bytecode cache for at each import: with ``PYTHONDONTWRITEBYTECODE=1`` in the
environment, and no ``__pycache__`` in the checkout, that is every fxtui module of every process, each run. An
installed fxtui has its cache; ``--bytecode-cache DIR`` gives every side one (``PYTHONPYCACHEPREFIX``, written in the
first round, which is not counted). The first line says which.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PY = sys.executable
SCRIPT = """
import time
print("first", time.time(), flush=True)
import torch
torch.nn.Linear(16, 16)(torch.randn(4, 16))
print("last", time.time(), flush=True)
"""


def _marks(text: str) -> tuple[float, float]:
    first = last = float("nan")
    for line in text.splitlines():
        word, _, value = line.partition(" ")
        if word == "first":
            first = float(value)
        elif word == "last":
            last = float(value)
    return first, last


#: This file's checkout of fxtui: the sides not run ``--before``.
HERE = str(Path(__file__).resolve().parents[2])


def plain(script: Path, env: dict[str, str] | None = None) -> tuple[float, float, float]:
    t0 = time.time()
    done = subprocess.run([PY, str(script)], capture_output=True, text=True, check=True, cwd=script.parent, env=env)
    end = time.time()
    first, last = _marks(done.stdout)
    return first - t0, last - first, end - last


def once(script: Path, env: dict[str, str] | None = None) -> tuple[float, float, float]:
    t0 = time.time()
    done = subprocess.run([PY, "-m", "fxtui", "run", "--once", str(script)], capture_output=True, text=True,
                          check=True, env=env, cwd=script.parent)  # fmt: skip
    end = time.time()
    first, last = _marks(done.stdout)
    return first - t0, last - first, end - last


def detached(script: Path, env: dict[str, str] | None = None) -> tuple[float, float, float]:
    t0 = time.time()
    done = subprocess.run([PY, "-m", "fxtui", "run", "--detach", str(script)], capture_output=True, text=True,
                          check=True, env=env, cwd=script.parent)  # fmt: skip
    log = Path(next(line.split(":", 1)[1].strip() for line in done.stdout.splitlines() if "its output:" in line))
    info = log.parent / "job.json"
    while json.loads(info.read_text()).get("running", True):
        time.sleep(0.005)
    end = time.time()
    first, last = _marks(log.read_text())
    return first - t0, last - first, end - last


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=7, help="rounds (each runs every side once; default 7)")
    parser.add_argument("--before", metavar="CHECKOUT", help="also run both fxtui sides from this checkout")
    parser.add_argument("--bytecode-cache", metavar="DIR", help="every side with Python's bytecode cached in DIR")
    args = parser.parse_args()
    environ = dict(os.environ)
    if args.bytecode_cache:
        environ.pop("PYTHONDONTWRITEBYTECODE", None)
        environ["PYTHONPYCACHEPREFIX"] = str(Path(args.bytecode_cache).resolve())
    env = {**environ, "PYTHONPATH": os.pathsep.join(p for p in (HERE, environ.get("PYTHONPATH", "")) if p)}
    sides = {
        "python": lambda script: plain(script, environ),
        "fxtui run --once": lambda script: once(script, env),
        "fxtui run --detach + wait": lambda script: detached(script, env),
    }
    if args.before:
        older = {**environ, "PYTHONPATH": str(Path(args.before).resolve())}
        sides["before: --once"] = lambda script: once(script, older)
        sides["before: --detach + wait"] = lambda script: detached(script, older)
    if environ.get("PYTHONPYCACHEPREFIX"):
        print(f"bytecode: cached in {environ['PYTHONPYCACHEPREFIX']}")
    elif environ.get("PYTHONDONTWRITEBYTECODE"):
        print("bytecode: PYTHONDONTWRITEBYTECODE is set: modules without a __pycache__ are compiled at every start")
    else:
        print("bytecode: each checkout's __pycache__, as Python writes it")
    print(f"load average at the start: {load()}  ({os.cpu_count()} cores)")
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "linear.py"
        script.write_text(SCRIPT)
        for side in sides.values():  # warm the file cache: the first run of each reads everything from disk
            side(script)
        times: dict[str, list[tuple[float, float, float]]] = {name: [] for name in sides}
        cpu: dict[str, list[float]] = {name: [] for name in sides}
        names = list(sides)
        for round_ in range(args.pairs):
            for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                before = _children_cpu()
                times[name].append(sides[name](script))
                cpu[name].append(_children_cpu() - before)
    print(f"load average at the end:   {load()}\n")
    base = statistics.median(sum(t) for t in times["python"])
    print(
        f"{'':28}{'wall':>8}{'extra':>8}{'ratio':>7}  {'start':>7}{'torch':>7}{'end':>7}   (medians of {args.pairs}, s)"
    )
    for name, runs in times.items():
        wall = statistics.median(sum(t) for t in runs)
        parts = [statistics.median(t[i] for t in runs) for i in range(3)]
        extra = wall - base
        line = f"{name:28}{wall:8.2f}{extra:+8.2f}{wall / base:7.2f}  " + "".join(f"{p:7.2f}" for p in parts)
        print(f"{line}  {statistics.median(cpu[name]):7.2f}")
    print("\nstart: launch → the script's first line; torch: its first → its last line (torch's import, then the")
    print("agent's); end: its last line → the process's end (for --detach: job.json says the job ended)")


if __name__ == "__main__":
    main()
