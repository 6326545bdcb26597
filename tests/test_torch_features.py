"""The torch-feature corpus (tests/programs/features): under ``fxtui run`` each feature behaves and computes as under
``python``, sampled steps included.

Each script trains a tiny model a few steps with one feature of torch that lives on its mode stacks or thread-local
state (grad modes, autocast, the program's own dispatch and function modes, torch.func, checkpointing, saved-tensor
hooks, anomaly mode, TorchScript, torch.compile, torch.export, the program's own profiler) and prints a digest.
Every line must be the same under ``fxtui run --once --sample-every 1`` (every step after the warm-up sampled),
and so must the exit status. (The plain runs share one interpreter's start and import of torch and TorchDynamo,
each script in a child forked from it: ``tests/python_twins.py``.) ``grad_modes.py`` failed under fxtui before its
mode kept to one context (an internal assert in torch's Python fallback); ``own_profiler.py`` printed doubled op
counts.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

import pytest

from tests.program_runs import ProgramRun, run_fxtui
from tests.python_twins import run_python_twins

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FEATURES = Path(__file__).parent / "programs" / "features"
#: Every step past the warm-up sampled: the most chances for fxtui's mode to meet the program's.
OPTIONS = ("--sample-every", "1")
ONE_THREAD = {"OMP_NUM_THREADS": "1"}
SCRIPTS = sorted(p.stem for p in FEATURES.glob("*.py") if p.stem != "feature_kit")
#: Imported once before the plain runs' forks: every script makes an optimizer, whose first one imports TorchDynamo.
PRELOAD = ("torch._dynamo",)


def _env() -> dict[str, str]:
    return {**os.environ, **ONE_THREAD}


@cache
def plain_runs() -> dict[str, ProgramRun]:
    """Every script run as under python, from one interpreter that imported torch and TorchDynamo once
    (``tests/python_twins.py``: the imports are most of a plain run of a script this small)."""
    runs = run_python_twins([(str(FEATURES / f"{name}.py"),) for name in SCRIPTS], FEATURES, _env(), preload=PRELOAD)
    return dict(zip(SCRIPTS, runs, strict=True))


@cache
def runs(name: str) -> tuple[ProgramRun, ProgramRun]:
    """The script run under python and under fxtui (once per test session)."""
    return plain_runs()[name], run_fxtui((str(FEATURES / f"{name}.py"),), FEATURES, OPTIONS, _env())


def test_the_corpus_holds_every_feature_of_the_issue() -> None:
    assert set(SCRIPTS) >= {
        "grad_modes",
        "autocast_modes",
        "own_modes",
        "func_transforms",
        "checkpointing",
        "saved_hooks",
        "anomaly_mode",
        "jit_scripted",
        "compiled_submodule",
        "export_mid_run",
        "own_profiler",
    }


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_feature_computes_under_fxtui_as_under_python(name: str) -> None:
    python, fxtui = runs(name)
    assert python.status == 0, python.stderr[-2000:]
    assert fxtui.status == python.status, fxtui.stderr[-2000:]
    assert fxtui.program_lines() == python.program_lines()
    assert len(python.program_lines()) >= 10  # a digest of several steps, not an empty one


@pytest.mark.parametrize("name", SCRIPTS)
def test_fxtui_sampled_steps_of_each_feature(name: str) -> None:
    """The digests agree with steps timed, not because fxtui stood aside throughout."""
    _python, fxtui = runs(name)
    kinds = fxtui.meta["steps"]["kinds"]
    assert sum(k["sampled"] for k in kinds) >= 3, kinds


def test_steps_under_the_programs_own_profiler_are_set_aside_and_said_so() -> None:
    _python, fxtui = runs("own_profiler")
    train = next(k for k in fxtui.meta["steps"]["kinds"] if k["kind"] == "train")
    aside = train["aside"]  # {"profiler": n}
    assert aside.get("profiler", 0) >= 20 + 4 + 3  # the 20 profiled whole, the schedule's active four, three more
    assert f"aside      {aside['profiler']} training steps under the program's own torch.profiler" in fxtui.stdout
