"""Three generate() calls (one warm-up, one sampled, one not): every header line and the JSON on the same calls."""

from __future__ import annotations

import pytest

from fxtui.core.op_nodes import EagerNode, RootModule
from fxtui.core.snapshot import State
from fxtui.jobs.ranks import JobCollector
from fxtui.report.data import ReportData
from fxtui.report.program_text import program_lines
from fxtui.wire.agent_messages import GenerationCall, Step

pytestmark = pytest.mark.unit

MS = 1_000_000
NODES = [
    EagerNode(0, 0, "lm_head", "prefill", "mm", 1, "aten.mm", "9×256"),
    EagerNode(1, 0, "lm_head", "decode", "mm", 1, "aten.mm", "1×256"),
]
ROOTS = [RootModule(0, "LlamaForCausalLM", {"": "LlamaForCausalLM", "lm_head": "Linear"})]


def call(weights: int = 0) -> GenerationCall:
    """A call of 100 ms to the first token and 23 decode steps of 20 ms."""
    return GenerationCall(
        wall_ns=560 * MS, ttft_ns=100 * MS, steps_ns=(20 * MS,) * 23, prompt_tokens=96, new_tokens=24,
        kv_cache_bytes=4096 if weights else None, kv_layer_bytes=(2048, 2048) if weights else (),
        cache="DynamicCache" if weights else "", weight_bytes=weights,
    )  # fmt: skip


def three_calls() -> ReportData:
    job = JobCollector(("generate.py",))
    phases = (0, 500 * MS, 0, 0, 60 * MS)
    job.receive(Step(0, "generate", 560 * MS, phases, False, False, nodes=NODES, roots=ROOTS, warm=False))
    job.receive(  # sampled, noting its nodes' inputs: its ops count, its wall time does not
        Step(1, "generate", 700 * MS, phases, True, True, ops=[(0, 90 * MS, "9×256", 0), (1, 18 * MS, "1×256", 1)],
             generation=(call(weights=5 * 2**20),))
    )  # fmt: skip
    job.receive(Step(2, "generate", 560 * MS, phases, False, False, generation=(call(),)))
    job.ended(0)
    return ReportData.from_snapshot(job.snapshot(State.DONE))


def test_the_figures_are_of_the_prompt_and_one_token_as_the_prefill_and_decode_lines() -> None:
    report = three_calls()
    # Σ node medians (90 ms prefill + 18 ms a token) ÷ (100 ms to the first token + 20 ms a decode step)
    assert abs(report.fidelity - 108 / 120) < 1e-6
    assert report.steps.kinds[0].fidelity is not None and abs(report.steps.kinds[0].fidelity - 108 / 120) < 1e-6
    shares = {r.name: r.pct for r in report.rows}
    assert abs(shares["lm_head · mm (prefill)"] - 90.0) < 1e-6 and abs(shares["lm_head · mm (decode)"] - 90.0) < 1e-6


def test_the_header_says_once_what_three_calls_cannot_tell_and_never_a_zero_for_the_unknown() -> None:
    text = "\n".join(program_lines(three_calls()))
    assert "0.0%" not in text and "weights 0 B" not in text and "5.00 MiB of weights" in text
    assert "in ops" not in text and "fidelity   " not in text  # no line divides per-token times by a whole call
    assert text.count("no sampled median") == 1 and "1 unsampled generate() call of" in text
