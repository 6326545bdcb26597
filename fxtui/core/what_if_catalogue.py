"""The what-if catalogue: every change fxtui can measure against the model, by name, and what it changes.

A hint says what might help; a what-if measures it on this machine (:mod:`fxtui.measure.whatif` makes the
changed copy and times it; :class:`~fxtui.core.findings.WhatIf` carries the result). This module is torch-free:
the command line checks names with :func:`parse_what_ifs` before anything heavy is imported.
"""

from __future__ import annotations

from fxtui.core.errors import FxtuiError

#: Every what-if: name → what it changes. ``threads=N`` stands for any thread count.
CATALOGUE: dict[str, str] = {
    "channels-last": "the model and its 4-D inputs in torch.channels_last memory format",
    "bf16": "bfloat16 autocast on the CPU: convolutions and matmuls in bfloat16, weights and inputs unchanged",
    "fold-bn": "each BatchNorm folded into the convolution before it (fx captures)",
    "threads=N": "N intra-op threads instead of the session's count",
    "compile": "torch.compile with its default backend (Inductor); whole run only, compile time reported",
    "int8-dynamic": "dynamic int8 quantization of the nn.Linear layers",
}

#: The valid names as a user reads them.
VALID = ", ".join(CATALOGUE)


def thread_count(name: str) -> int | None:
    """N of ``threads=N``; ``None`` for any other name (or a count that is not a whole number ≥ 1)."""
    prefix, _, value = name.partition("=")
    if prefix != "threads" or not value.isdigit() or int(value) < 1:
        return None
    return int(value)


def describe(name: str) -> str:
    """What the what-if ``name`` changes, one line."""
    n = thread_count(name)
    if n is not None:
        return f"{n} intra-op thread{'s' if n != 1 else ''} instead of the session's count"
    return CATALOGUE[name]


def parse_what_ifs(text: str) -> tuple[str, ...]:
    """``"channels-last,bf16"`` → ``("channels-last", "bf16")``, each once, in order.

    An unknown name raises :class:`FxtuiError` listing the valid ones.
    """
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise FxtuiError(f"--what-if takes names like channels-last,bf16; choose from {VALID}")
    for name in names:
        if name.startswith("threads"):
            if thread_count(name) is None:
                raise FxtuiError(
                    f"--what-if: {name!r} is not a thread count; write threads=N with N ≥ 1, e.g. threads=1"
                )
        elif name not in CATALOGUE:
            raise FxtuiError(f"--what-if: no what-if {name!r}; choose from {VALID}")
    return tuple(dict.fromkeys(names))
