"""Every Python process a program under ``fxtui run`` starts gets the agent (``torchrun``'s ranks, spawned workers).

``fxtui run`` puts this directory first on the program's ``PYTHONPATH``, and Python imports
``sitecustomize`` as it starts. The agent is installed when that process imports torch, and
reports to the same collector, saying which rank it is. Nothing happens where no collector
listens. A ``sitecustomize`` of the user's own, further along the path, still runs.
"""

from __future__ import annotations

import importlib.util
import os
import sys


def _chain() -> None:
    """Run the next ``sitecustomize`` on the path, the one this file stands in front of."""
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == here:
            continue
        candidate = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_user_sitecustomize", candidate)
            if spec is not None and spec.loader is not None:
                spec.loader.exec_module(importlib.util.module_from_spec(spec))
            return


try:
    from fxtui.agent.on_torch_import import watch_this_process

    watch_this_process()
except Exception as e:  # never stop the program from starting
    print(f"fxtui: the agent could not be installed here ({type(e).__name__}: {e})", file=sys.stderr)
_chain()
