"""Many short torch scripts run as ``python SCRIPT`` runs each, their interpreter and torch started once for all.

A test that compares a script's run under ``fxtui run`` with its plain run (``tests/test_torch_features.py``) needs
the plain run's output and status only; for a script that trains a tiny model a dozen steps, most of that run's CPU
time is starting Python and importing torch. Here one interpreter imports torch, then forks a child for each
script in turn, one at a time: the child takes the script's working directory, arguments, ``sys.path[0]`` and
standard output and error as ``python SCRIPT`` gives them, runs it as ``__main__``, runs its ``atexit`` functions
and ends with its status. Each script starts from the same state, torch imported and nothing else done, and none
sees another's. The runs under fxtui stay runs of their own (fxtui's agent must be there before torch is).

So it stands in for ``python`` only for a script whose behaviour does not hang on what it does before its own
``import torch`` (setting a variable torch reads as it loads, say): a feature script seeds torch and sets its
threads after importing it. The corpus of whole programs (``tests/test_corpus.py``) is run so too, but for its
torchrun job (the launcher's own ranks) and a program run at a size of its own.

Run as a program (this file, by path) with the scripts to run as JSON; :func:`run_python_twins` does that.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # run by path as the scripts' interpreter, this file imports nothing of the tests
    from tests.program_runs import ProgramRun


def run_python_twins(
    commands: Sequence[Sequence[str]],
    cwd: Path | Sequence[Path],
    env: Mapping[str, str] | None = None,
    timeout: float = 900,
    preload: Sequence[str] = (),
) -> list[ProgramRun]:
    """Each of ``commands`` (a script and its arguments) run as ``python COMMAND…`` in ``cwd`` would run it (or in
    its own of ``cwd``'s directories, one a command).

    ``preload``: modules besides torch the interpreter imports before its forks, for scripts that all import them
    (or have torch import them: torch.optim's first optimizer imports ``torch._dynamo``, about 2 s of CPU a child).
    Only a module whose import computes nothing and starts no thread belongs there."""
    from tests.program_runs import ProgramRun

    cwds = [cwd] * len(commands) if isinstance(cwd, Path) else list(cwd)
    assert len(cwds) == len(commands)
    with tempfile.TemporaryDirectory(prefix="fxtui-twins-") as directory:
        jobs = [
            {"argv": list(command), "cwd": str(where), "out": f"{directory}/{i}.out", "err": f"{directory}/{i}.err"}
            for i, (command, where) in enumerate(zip(commands, cwds, strict=True))
        ]
        done = subprocess.run(
            [sys.executable, __file__, json.dumps(jobs), json.dumps(list(preload))],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=dict(env) if env else None,
        )
        assert done.returncode == 0, f"the scripts' interpreter failed:\n{done.stderr[-2000:]}"
        ended = json.loads(done.stdout.splitlines()[-1])  # [status, wall seconds] of each script
        return [
            ProgramRun(
                tuple(command),
                status,
                Path(job["out"]).read_text(errors="replace"),
                Path(job["err"]).read_text(errors="replace"),
                wall,
                None,
                os.getloadavg()[0],
            )
            for command, job, (status, wall) in zip(commands, jobs, ended, strict=True)
        ]


def _exit_code(code: object) -> int:
    """The status ``sys.exit(code)`` gives a process (a message printed to stderr is 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _run_in_child(job: Mapping[str, object]) -> int:
    """The script of ``job`` run as ``python`` runs it: its status."""
    import atexit
    import runpy
    import threading
    import traceback

    argv = [str(a) for a in job["argv"]]  # type: ignore[attr-defined]
    os.chdir(str(job["cwd"]))
    for fd, name in ((1, "out"), (2, "err")):
        opened = os.open(str(job[name]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    sys.argv = argv
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
    try:
        runpy.run_path(argv[0], run_name="__main__")
        code = 0
    except SystemExit as exit_:
        code = _exit_code(exit_.code)
    except BaseException:  # printed as python prints an uncaught exception
        traceback.print_exc()
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]  # the script's threads joined, as at the interpreter's end
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    return code


def _main(jobs: list[dict[str, object]], preload: list[str]) -> None:
    # sys.path[0] is this file's folder, as a script's is its own: each child puts its script's folder there.
    import importlib

    import torch  # noqa: F401 - once, before the forks: each script's own import of it finds it loaded

    for name in preload:
        importlib.import_module(name)

    ended = []
    for job in jobs:
        started = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = _run_in_child(job)
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        ended.append((os.waitstatus_to_exitcode(status), time.perf_counter() - started))
    print(json.dumps(ended), flush=True)


if __name__ == "__main__":
    _main(json.loads(sys.argv[1]), json.loads(sys.argv[2]) if len(sys.argv) > 2 else [])
