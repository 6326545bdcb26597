"""Mutation testing of the modules that compute figures: a developer's command, not part of CI.

    pip install -e ".[test,mutation]"
    python tests/mutation.py            # mutmut run, then the score per module and every surviving mutant
    python tests/mutation.py --report   # the score of the last run only
    mutmut show NAME                    # one mutant's change

The modules and the tests that run against them are configured under [tool.mutmut] in pyproject.toml.
mutmut copies the tree into mutants/, changes one operator, constant or call at a time, and runs the tests
that reach the changed function; a mutant no test fails on "survived". The score is killed (a test failed
or timed out) over every mutant, those no selected test reaches included. It takes about an hour on two cores.
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KILLED = {"killed", "timeout"}


def results() -> dict[str, str]:
    """Every mutant's name and status, from ``mutmut results --all true``."""
    out = subprocess.run(
        ["mutmut", "results", "--all", "true"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    found = {}
    for line in out.splitlines():
        match = re.match(r"\s*([\w.]+__mutmut_\d+): (.+)$", line)
        if match:
            found[match.group(1)] = match.group(2).strip()
    return found


def module_of(mutant: str) -> str:
    """``fxtui.report.diff.x_diff_reports__mutmut_3`` → ``fxtui.report.diff``."""
    parts = mutant.split(".")
    return ".".join(p for p in parts[:-1] if "ǁ" not in p and not p.startswith("x"))


def report() -> int:
    by_module: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    survivors = []
    for name, status in sorted(results().items()):
        by_module[module_of(name)][status] += 1
        if status not in KILLED:
            survivors.append(f"  {status:<10} {name}")
    total_killed = total = 0
    for module, counts in sorted(by_module.items()):
        killed = sum(counts[s] for s in KILLED)
        count = sum(counts.values())
        total_killed, total = total_killed + killed, total + count
        detail = ", ".join(f"{n} {s}" for s, n in counts.most_common())
        print(f"{module:<24} {killed:>4}/{count:<4} {100 * killed / count:5.1f}%  ({detail})")
    if total:
        print(f"{'all':<24} {total_killed:>4}/{total:<4} {100 * total_killed / total:5.1f}%")
    print("\nnot killed (mutmut show NAME shows the change):")
    print("\n".join(survivors) or "  none")
    return 0


def main(argv: list[str]) -> int:
    if "--report" not in argv:
        # FXTUI_MUTATION: the property tests find a failure without shrinking it (see tests/test_properties.py).
        subprocess.run(["mutmut", "run", *argv], cwd=ROOT, check=False, env={**os.environ, "FXTUI_MUTATION": "1"})
    return report()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
