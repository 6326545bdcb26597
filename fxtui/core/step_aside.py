"""Steps fxtui leaves unsampled on purpose, and why: a program's own profiler, a context fxtui cannot follow.

Such a step is neither sampled nor a plain unsampled step: its wall time holds the program's profiler (or part of
a recording) and is left out of every median. The agent marks it (``Step.aside``), the collector counts it per
kind, and the header says how many and why.
"""

from __future__ import annotations

PROFILER = "profiler"
"""The program's own ``torch.profiler`` (or autograd profiler) was on: fxtui's mode would double its counts."""
CONTEXT = "context"
"""The step's torch context changed under fxtui's mode in a way it could not follow without changing the program
(an ``inference_mode`` block it was recorded in ended inside the step): its records miss ops."""

MODE = "mode"
"""A dispatch mode of the program's own (``FlopCounterMode``, a user's mode) was on torch's mode stack: fxtui's
mode pushed above it would be the one the program's ``__exit__`` pops."""

OPS = "ops"
"""The step ran more ops than a sampled step records (:data:`OP_LIMIT`): the timer stopped there, so its records
miss ops, and timing them all would cost the program too long."""
#: Ops a sampled step records at most (a quarter of it on a describing step, which costs more per op): past it the
#: timer stops and the step is set aside, so a step of a million ops (an LBFGS closure over an unrolled cell) costs
#: the program a few seconds, not half a minute.
OP_LIMIT = 200_000

#: Every reason, in the order the header names them.
ASIDE = (PROFILER, MODE, CONTEXT, OPS)


def aside_text(why: str, count: int, name: str) -> str:
    """One sentence for ``count`` steps (``name``: ``training steps``, ``evaluation calls`` …) set aside for ``why``."""
    were = "was" if count == 1 else "were"
    if why == PROFILER:
        return (
            f"{count} {name} under the program's own torch.profiler {were} not sampled (its counts and times stay its "
            "own); their times are left out of the figures"
        )
    if why == MODE:
        return (
            f"{count} {name} under a dispatch mode of the program's own (FlopCounterMode …) {were} not sampled: "
            "fxtui's mode stays off its stack; their times are left out of the figures"
        )
    if why == CONTEXT:
        return (
            f"{count} {name} {were} not sampled: torch's thread state changed under fxtui's mode (an inference_mode "
            "block ended inside the step) and following it would change what the program computes"
        )
    if why == OPS:
        return (
            f"{count} {name} {were} not sampled: each ran more ops than a sampled step records ({OP_LIMIT:,}), so "
            "timing stopped there; their times are left out of the figures"
        )
    return f"{count} {name} {were} not sampled ({why})"
