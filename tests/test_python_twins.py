"""The scripts' shared interpreter (``tests/python_twins.py``) runs a script as ``python SCRIPT`` does: the same
output, standard error and status, whether the script ends, exits with a status, raises, or leaves work to a thread
and an ``atexit`` function; and each script starts without what the one before it did."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.program_runs import run_python
from tests.python_twins import run_python_twins

pytestmark = pytest.mark.e2e

SCRIPTS = {
    "ends.py": """
import os, sys
from neighbour import WORD  # sys.path[0] is the script's directory
print(WORD, sys.argv[1:], os.path.basename(os.getcwd()))
print("to stderr", file=sys.stderr)
""",
    "exits.py": """
import sys
print("before", flush=True)
sys.exit(3)
""",
    "says.py": """
import sys
sys.exit("a message is status 1")
""",
    "raises.py": """
import builtins
builtins.LEFT_BEHIND = True  # the next script must not see it
raise ValueError("the script's own error")
""",
    "later.py": """
import atexit, builtins, threading, time
print("left behind", hasattr(builtins, "LEFT_BEHIND"))
atexit.register(lambda: print("at exit", flush=True))
threading.Thread(target=lambda: (time.sleep(0.2), print("thread done", flush=True))).start()
print("main done")
""",
}


def test_each_script_ends_as_under_python(tmp_path: Path) -> None:
    (tmp_path / "neighbour.py").write_text("WORD = 'neighbour'\n")
    for name, source in SCRIPTS.items():
        (tmp_path / name).write_text(source)
    commands = [(str(tmp_path / name), "an argument") for name in SCRIPTS]
    twins = run_python_twins(commands, tmp_path)
    for command, twin in zip(commands, twins, strict=True):
        plain = run_python(command, tmp_path)
        assert (twin.status, twin.stdout) == (plain.status, plain.stdout), command[0]
        last = plain.stderr.strip().splitlines()[-1:] if plain.stderr else []
        assert twin.stderr.strip().splitlines()[-1:] == last, command[0]  # a traceback's frames aside: its error
    assert [t.status for t in twins] == [0, 3, 1, 1, 0]
    assert twins[0].stdout.startswith("neighbour ['an argument'] ")
    assert twins[4].stdout.splitlines() == ["left behind False", "main done", "thread done", "at exit"]
