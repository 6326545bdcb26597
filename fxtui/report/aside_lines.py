"""The header's lines for steps fxtui left unsampled on purpose: how many of each kind, and why."""

from __future__ import annotations

from collections.abc import Iterable

from fxtui.core.program_run import KindSummary
from fxtui.core.step_aside import ASIDE, aside_text


def aside_lines(kinds: Iterable[KindSummary]) -> list[str]:
    """``aside      12 training steps under the program's own torch.profiler were not sampled …``, a line per kind
    and reason (none when fxtui sampled as it chose)."""
    lines = []
    for kind in kinds:
        counts = dict(kind.aside)
        for why in sorted(counts, key=lambda w: ASIDE.index(w) if w in ASIDE else len(ASIDE)):
            name = KindSummary(kind.kind, counts[why]).name
            lines.append(f"aside      {aside_text(why, counts[why], name)}")
    return lines
