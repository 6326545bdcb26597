"""Profile every torchvision model headless and write a compatibility table into tests/benchmarks/README.md.

    nice -n 19 python tests/benchmarks/sweep_zoo.py                  # the whole zoo, README updated
    python tests/benchmarks/sweep_zoo.py resnet18 raft_small --no-readme   # a few models, table printed

Each model runs as its own ``python -m fxtui NAME --once --runs 1 --warmup 0 --json
TMP`` with a timeout, so one model's memory or a crash cannot affect the next. The
node and leaf counts come from the JSON. A model that exits 2 suggesting
``--submodule PATH`` is run again with that option; its row says whether that works.

The table goes between ``<!-- zoo:start -->`` and ``<!-- zoo:end -->`` in tests/benchmarks/README.md;
the rest of the file is left as it is read just before writing. ``--results FILE``
keeps the raw outcome of every run as JSON, rewritten after each model;
``--resume`` continues a sweep from it, and ``--from-results`` makes the table
from it without running anything.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "tests" / "benchmarks" / "README.md"
START, END = "<!-- zoo:start -->", "<!-- zoo:end -->"

#: Families in the order the README lists them: torchvision.models submodule -> heading.
FAMILIES = (
    ("quantization", "Quantizable classification"),
    ("detection", "Detection"),
    ("segmentation", "Segmentation"),
    ("video", "Video"),
    ("optical_flow", "Optical flow"),
    ("", "Classification"),
)


@dataclass
class Outcome:
    """How one ``fxtui`` run of one model ended."""

    code: int | None
    """Exit status; None on timeout."""
    seconds: float
    nodes: int | None = None
    leaves: tuple[str, ...] = ()
    message: str = ""
    """The last line of stderr, for a run that failed."""
    capture: str = "fx"
    graphs: int = 1


@dataclass
class Row:
    """One model's line in the table."""

    model: str
    family: str
    default: Outcome
    submodule: str | None = None
    with_submodule: Outcome | None = None

    @property
    def shown(self) -> Outcome:
        """The run whose figures the table shows: the submodule's when one was needed."""
        return self.with_submodule if self.with_submodule is not None else self.default

    @property
    def status(self) -> str:
        if self.default.code == 0:
            d = self.default
            return "ok" if d.capture == "fx" else f"ok: TorchDynamo, {d.graphs} graph{'s' if d.graphs != 1 else ''}"
        if self.submodule and self.with_submodule is not None:
            then = self.with_submodule
            return f"`--submodule {self.submodule}`: " + (
                f"ok ({then.nodes} nodes)" if then.code == 0 else f"fails: {_why(then)}"
            )
        return f"fails: {_why(self.default)}"

    @property
    def seconds(self) -> float:
        """Wall time of this model's runs, the submodule's included."""
        return self.default.seconds + (self.with_submodule.seconds if self.with_submodule else 0.0)

    @property
    def works(self) -> bool:
        return self.shown.code == 0


def _why(outcome: Outcome) -> str:
    if outcome.code is None:
        return f"timed out after {outcome.seconds:.0f} s"
    text = outcome.message.removeprefix("fxtui: ") or f"exit status {outcome.code}"
    return text.replace("|", "\\|")


#: fxtui processes running now, killed when the sweep is interrupted.
_RUNNING: set[subprocess.Popen[str]] = set()
_RUNNING_LOCK = threading.Lock()


def run_fxtui(model: str, timeout: float, submodule: str | None = None) -> Outcome:
    """One headless ``fxtui`` run of ``model`` in a fresh interpreter."""
    with tempfile.TemporaryDirectory(prefix="fxtui-zoo-") as tmp:
        out = Path(tmp) / "run.json"
        cmd = [sys.executable, "-m", "fxtui", model, "--once", "--runs", "1", "--warmup", "0", "--json", str(out)]
        if submodule:
            cmd += ["--submodule", submodule]
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp)
        with _RUNNING_LOCK:
            _RUNNING.add(proc)
        try:
            _, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return Outcome(code=None, seconds=time.perf_counter() - started)
        finally:
            with _RUNNING_LOCK:
                _RUNNING.discard(proc)
        seconds = time.perf_counter() - started
        lines = stderr.strip().splitlines()
        outcome = Outcome(code=proc.returncode, seconds=seconds, message=lines[-1] if lines else "")
        if proc.returncode == 0 and out.exists():
            data = json.loads(out.read_text())
            outcome.nodes = len(data["rows"])
            outcome.leaves = tuple(data["metadata"]["leaf_modules"])
            outcome.capture = data["metadata"].get("capture", "fx")
            outcome.graphs = data["metadata"].get("graphs", 1)
        return outcome


def suggested_submodule(message: str) -> str | None:
    """The PATH of ``--submodule PATH`` in an fxtui error message, if it suggests one."""
    match = re.search(r"--submodule\s+([\w.]+)", message)
    return match.group(1).rstrip(".") if match else None


def family_of(model: str) -> str:
    import torchvision.models as tvm

    module = tvm.get_model_builder(model).__module__
    for family, _ in FAMILIES:
        if family and module.startswith(f"torchvision.models.{family}"):
            return family
    return ""


def profile_model(model: str, timeout: float) -> Row:
    """Run one model, and its suggested submodule when the model itself exits 2."""
    row = Row(model, family_of(model), run_fxtui(model, timeout))
    if row.default.code == 2:
        row.submodule = suggested_submodule(row.default.message)
        if row.submodule:
            row.with_submodule = run_fxtui(model, timeout, row.submodule)
    return row


def sweep(
    models: list[str], timeout: float, jobs: int = 1, done: list[Row] | None = None, results: Path | None = None
) -> list[Row]:
    """Run every model not in ``done``, ``jobs`` at a time, printing progress.

    ``results`` is rewritten after each model, so an interrupted sweep can resume.
    """
    rows = {r.model: r for r in done or []}
    todo = [m for m in models if m not in rows]
    print(f"{len(models) - len(todo)} of {len(models)} models already swept; {len(todo)} to go", flush=True)
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        futures = {pool.submit(profile_model, m, timeout): m for m in todo}
        for i, future in enumerate(as_completed(futures), 1):
            row = future.result()
            rows[row.model] = row
            print(f"[{i:3}/{len(todo)}] {row.model:40} {row.seconds:6.1f} s  {row.status}", flush=True)
            if results:
                save_results([rows[m] for m in models if m in rows], results)
    except KeyboardInterrupt:
        # Queued models never start; running ones are killed, and their rows are not kept.
        pool.shutdown(wait=False, cancel_futures=True)
        with _RUNNING_LOCK:
            for proc in _RUNNING:
                proc.kill()
        raise
    finally:
        pool.shutdown(wait=True)
    return [rows[m] for m in models if m in rows]


def save_results(rows: list[Row], path: Path) -> None:
    """Write rows as JSON, whole or not at all."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    os.replace(tmp, path)


def load_results(path: Path) -> list[Row]:
    """Rows read back from a ``--results`` file."""

    def outcome(d: dict | None) -> Outcome | None:  # results written before the capture fields load too
        return None if d is None else Outcome(**{**d, "leaves": tuple(d["leaves"])})

    rows = []
    for d in json.loads(path.read_text()):
        default = outcome(d["default"])
        assert default is not None
        rows.append(Row(d["model"], d["family"], default, d["submodule"], outcome(d["with_submodule"])))
    return rows


def markdown(rows: list[Row], started: str) -> str:
    """The README section: a summary line, then one table per family."""
    ok = sum(1 for r in rows if r.default.code == 0)
    dynamo = sum(1 for r in rows if r.default.code == 0 and r.default.capture == "dynamo")
    via_sub = sum(1 for r in rows if r.default.code != 0 and r.works)
    failed = len(rows) - ok - via_sub
    lines = [
        f"Written by `python tests/benchmarks/sweep_zoo.py` on {started} "
        "(`fxtui NAME --once --runs 1 --warmup 0`, default inputs, random weights).",
        "",
        f"Of {len(rows)} torchvision models, **{ok}** profile with their default input"
        + (f" ({dynamo} of them whole through TorchDynamo: torch.fx cannot trace their top level)" if dynamo else "")
        + (
            f", **{via_sub}** need `--submodule` (their top-level code is not traceable) and then work"
            if via_sub
            else ""
        )
        + (f", **{failed}** fail." if failed else ", none fail."),
        "Leaves are submodules kept whole because their code could not be traced.",
    ]
    for family, heading in FAMILIES:
        members = [r for r in rows if r.family == family]
        if not members:
            continue
        lines += ["", f"**{heading}** ({len(members)})", "", "| model | nodes | leaves | status |", "|---|--:|--:|---|"]
        for r in members:
            shown = r.shown
            nodes = str(shown.nodes) if shown.nodes is not None else "–"
            leaves = str(len(shown.leaves)) if shown.code == 0 else "–"
            lines.append(f"| {r.model} | {nodes} | {leaves} | {r.status} |")
    return "\n".join(lines)


def write_readme(section: str, readme: Path = README) -> None:
    """Replace the text between the zoo markers, reading the file just before writing it."""
    text = readme.read_text(encoding="utf-8")
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{readme} has no {START} ... {END} section")
    updated = text[: start + len(START)] + "\n" + section + "\n" + text[end:]
    tmp = readme.with_name(f".{readme.name}.zoo.tmp")
    tmp.write_text(updated, encoding="utf-8")
    os.replace(tmp, readme)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", help="only these models (default: torchvision.models.list_models())")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per fxtui run (default 600)")
    parser.add_argument("--jobs", type=int, default=1, help="models profiled at the same time (default 1)")
    parser.add_argument(
        "--no-readme", action="store_true", help="print the table instead of writing tests/benchmarks/README.md"
    )
    parser.add_argument("--results", type=Path, help="keep every run's outcome in this JSON file as the sweep goes")
    parser.add_argument("--resume", action="store_true", help="skip the models already in --results")
    parser.add_argument("--from-results", type=Path, metavar="FILE", help="make the table from a --results file")
    args = parser.parse_args()
    # A terminated sweep ends like an interrupted one: subprocess.run kills the running fxtui.
    signal.signal(signal.SIGTERM, signal.default_int_handler)

    started = time.strftime("%Y-%m-%d", time.gmtime())
    t0 = time.perf_counter()
    if args.from_results:
        rows = load_results(args.from_results)
    else:
        import torchvision.models as tvm

        done = load_results(args.results) if args.resume and args.results and args.results.exists() else []
        try:
            rows = sweep(args.models or tvm.list_models(), args.timeout, args.jobs, done, args.results)
        except KeyboardInterrupt:
            kept = f"; the models finished so far are in {args.results} (--resume)" if args.results else ""
            raise SystemExit(f"interrupted{kept}") from None
    total = time.perf_counter() - t0
    section = markdown(rows, started)
    slowest = sorted(rows, key=lambda r: r.seconds, reverse=True)
    print(f"\n{len(rows)} models, {total / 60:.1f} min in this run; slowest:")
    for r in slowest[:5]:
        print(f"  {r.model:40} {r.seconds:.1f} s")
    if args.no_readme:
        print("\n" + section)
    else:
        write_readme(section)
        print(f"wrote the table into {README}")


if __name__ == "__main__":
    main()
