"""--generate: a run is one generate() call, its ops in the prefill or a decode step; tiny Llama and GPT-2 models."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from helpers import run_cli

import fxtui
from fxtui.core.errors import FxtuiError
from fxtui.core.generation import split_steps
from fxtui.measure.capture import capture
from fxtui.measure.inputs import Inputs
from fxtui.ops.model_bytes import cache_bytes
from fxtui.report.data import ReportData

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

transformers = pytest.importorskip("transformers")

NEW_TOKENS = 6
PROMPT = 10


def tiny(model_type: str) -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
    """A causal LM of a few layers from a small config, random weights, and a prompt of token ids."""
    sizes = {
        "llama": dict(num_hidden_layers=2, hidden_size=32, intermediate_size=64, num_attention_heads=2,
                      num_key_value_heads=2, vocab_size=100, max_position_embeddings=64),
        "gpt2": dict(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=64),
    }[model_type]  # fmt: skip
    torch.manual_seed(0)
    config = transformers.AutoConfig.for_model(model_type, **sizes)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    ids = torch.randint(0, 100, (1, PROMPT))
    return model, {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def report(request: pytest.FixtureRequest) -> fxtui.Report:
    """One intra-op thread: beside a busy process, two threads on two cores made these µs-sized ops wait for each
    other (the decode nodes read 2–8× their quiet figure; at one thread, as quiet)."""
    model, kwargs = tiny(request.param)
    return fxtui.profile(
        model, (), kwargs=kwargs, runs=3, warmup=1, generate=NEW_TOKENS, keep_disturbed=True, threads=1
    )


def test_every_row_is_in_the_prefill_or_a_decode_step(report: fxtui.Report) -> None:
    assert {r.phase for r in report.rows} == {"prefill", "decode"}
    assert report.capture == "generate" and report.mode == "generate"
    names = {r.name for r in report.rows}
    # The same op of the same module is a node of each phase: its name says which.
    assert "lm_head · linear (prefill)" in names and "lm_head · linear (decode)" in names
    assert all(r.name.endswith(f"({r.phase})") for r in report.rows) and len(names) == len(report.rows)
    # generate()'s own loop (choosing the token, the stopping check) is a pseudo-module of its own.
    assert any(r.name.startswith("generate · argmax") and r.module_path == "generate" for r in report.rows)
    assert {m.path for m in report.modules if m.decode_s > 0} >= {"", "lm_head"}


def test_decode_steps_are_counted_exactly(report: fxtui.Report) -> None:
    g = report.generation
    assert g is not None
    assert g.new_tokens == NEW_TOKENS and g.decode_steps == NEW_TOKENS - 1 and g.forwards == NEW_TOKENS
    assert g.prompt_tokens == PROMPT and g.batch == 1
    # One bin per decode step; the context grows by one token a step.
    assert g.positions == tuple(range(PROMPT + 1, PROMPT + NEW_TOKENS))
    assert len(g.position_s) == NEW_TOKENS - 1 and all(s > 0 for s in g.position_s)
    decode = [r.name for r in report.rows if r.phase == "decode"]
    assert set(g.node_positions) == set(decode)
    assert g.ttft_s and g.tpot_s and g.tpot_mean_s and g.tokens_per_s and g.generate_s
    assert g.tpot_p90_s is not None and g.tpot_p90_s >= g.tpot_s


def test_a_decode_node_is_timed_per_token() -> None:
    """A decode node's time is its time over the call's steps ÷ their number: its per-position times average to it."""
    model, kwargs = tiny("llama")
    captured = capture(model, Inputs((), kwargs), generate=NEW_TOKENS)
    assert captured.timer is not None
    timer = captured.timer(clock=time.perf_counter_ns, clock_overhead_ns=0)
    with captured.running():
        for _ in range(2):  # the first call names the nodes
            timer.run(Inputs((), kwargs))
    bins = timer.runs.node_bins[-1]  # one bin per decode step here: each bin is one step's time
    assert bins.shape == (len(timer.runs.decode_names), NEW_TOKENS - 1)
    for row, name in enumerate(timer.runs.decode_names):
        assert abs(bins[row].mean() - timer.last_ns[timer.names.index(name)]) <= 0.5  # rounded to whole ns


def test_decode_nodes_take_a_step_each_not_the_call(report: fxtui.Report) -> None:
    """The decode nodes together fit in one profiled decode step: 0.27–0.32 of it here, quiet or beside a busy
    process, and 1.4–1.6 were each node the sum of the call's five steps. Both sides come from the same profiled
    calls, so what slows the machine or the instrument moves them together."""
    g = report.generation
    assert g is not None and g.profiled_tpot_mean_s
    assert sum(r.median_s for r in report.rows if r.phase == "decode") < g.profiled_tpot_mean_s


def test_the_cache_bytes_are_the_sum_of_its_tensors() -> None:
    model, kwargs = tiny("llama")
    with torch.inference_mode():
        out = model.generate(
            **kwargs, max_new_tokens=4, min_new_tokens=4, do_sample=False, return_dict_in_generate=True
        )
    cache = out.past_key_values
    total, layers, kind = cache_bytes(cache)  # type: ignore[misc]
    tensors = [t for layer in cache.layers for t in (layer.keys, layer.values)]
    assert total == sum(t.numel() * t.element_size() for t in tensors) and len(layers) == 2
    assert kind == type(cache).__name__
    # Llama 2 layers × keys and values × 1 × 2 heads × (10 + 3) positions × 16 dims × 4 bytes.
    assert total == 2 * 2 * 2 * (PROMPT + 3) * 16 * 4


def test_the_report_carries_the_cache_and_the_weights(report: fxtui.Report) -> None:
    g = report.generation
    assert g is not None and g.kv_cache_bytes and len(g.kv_layer_bytes) == 2
    assert sum(g.kv_layer_bytes) == g.kv_cache_bytes
    assert g.weight_bytes > g.kv_cache_bytes and g.cache == "DynamicCache"


def test_json_round_trip(report: fxtui.Report, tmp_path: Path) -> None:
    path = tmp_path / "gen.json"
    path.write_text(report.to_json())
    meta = json.loads(path.read_text())["metadata"]
    assert meta["mode"] == "generate"
    assert meta["ttft_s"] > 0 and set(meta["tpot_s"]) == {"median", "p90", "mean"}
    assert meta["tokens_per_s"] > 0 and meta["kv_cache_bytes"] == report.generation.kv_cache_bytes  # type: ignore[union-attr]
    assert len(meta["decode_positions"]) == NEW_TOKENS - 1
    assert {r["phase"] for r in json.loads(path.read_text())["rows"]} == {"prefill", "decode"}
    loaded = ReportData.load(path)
    assert loaded.generation == report.generation
    assert [m.decode_s for m in loaded.modules] == [m.decode_s for m in report.modules]


def test_header_and_module_table_split_prefill_and_decode(report: fxtui.Report) -> None:
    header = report.header()
    for words in ("time to first token", "time per output token", "tokens/s", "kv cache", "fixed length"):
        assert words in header, words
    table = report.module_table()
    assert "% of prefill" in table and "decode/token" in table
    assert "% of phase" in report.table()


def test_split_steps() -> None:
    # A call from 0 to 100 whose forwards started at 10, 40, 60, 85: the first token at 40, steps 20, 25, 15.
    assert split_steps(0, [10, 40, 60, 85], 100) == (40, [20, 25, 15])
    assert split_steps(0, [10], 30) == (30, [])


def test_an_encoder_is_refused_in_one_sentence() -> None:
    config = transformers.AutoConfig.for_model(
        "bert", num_hidden_layers=1, hidden_size=32, intermediate_size=32, num_attention_heads=2, vocab_size=100
    )
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    ids = torch.randint(0, 100, (1, 8))
    with pytest.raises(FxtuiError, match=r"is an encoder.*decoder-only causal language model"):
        fxtui.profile(model, (), kwargs={"input_ids": ids}, runs=1, warmup=0, generate=4)


def test_a_model_without_generate_is_refused() -> None:
    with pytest.raises(FxtuiError, match="cannot generate: --generate needs a causal language model"):
        fxtui.profile(torch.nn.Linear(4, 4), torch.randn(1, 4), runs=1, warmup=0, generate=4)


def test_a_prompt_longer_than_the_positions_is_refused() -> None:
    model, _ = tiny("gpt2")
    ids = torch.randint(0, 100, (1, 70))
    with pytest.raises(FxtuiError, match=r"the prompt has 70 tokens, more than .* positions for \(64"):
        fxtui.profile(model, (), kwargs={"input_ids": ids}, runs=1, warmup=0, generate=4)
    ids = torch.randint(0, 100, (1, 62))
    with pytest.raises(FxtuiError, match="62-token prompt and 4 new tokens need 66 positions"):
        fxtui.profile(model, (), kwargs={"input_ids": ids}, runs=1, warmup=0, generate=4)


def test_the_command_line_refuses_an_encoder_and_a_model_without_a_head(capsys: pytest.CaptureFixture[str]) -> None:
    """In this process (transformers is loaded already; the installed command's exit status is test_cli's)."""
    code, out, err = run_cli(capsys, "hf:bert", "--hf-config", "num_hidden_layers=1,hidden_size=32,"
                             "num_attention_heads=2,intermediate_size=32", "--generate", "4", "--once")  # fmt: skip
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "hf:bert cannot generate: it is an encoder" in err
    code, _, err = run_cli(capsys, "hf:vit", "--generate", "4", "--once")
    assert code == 2 and "hf:vit cannot generate: transformers has no causal language-model head" in err
    code, _, err = run_cli(capsys, "hf:gpt2", "--generate", "4", "--train", "--once")
    assert code == 2 and "cannot be combined with --train" in err


def test_the_command_line_profiles_a_generation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """In this process, as the refusals above (a process of its own spent most of its time importing transformers)."""
    out = tmp_path / "gen.json"
    config = "n_layer=1,n_embd=32,n_head=2,vocab_size=100"
    code, stdout, err = run_cli(capsys, "hf:gpt2", "--hf-config", config, "--input-shape", "1,8", "--generate",
                                "5", "--once", "--runs", "2", "--warmup", "0", "--phase", "decode",
                                "--json", str(out))  # fmt: skip
    assert code == 0, err
    assert "time to first token" in stdout
    lines = stdout.splitlines()
    rows = lines[next(i for i, line in enumerate(lines) if line.startswith("-----")) + 1 :]
    rows = [line for line in rows if line and not line.startswith(("…", "wrote", "next"))]
    assert rows and all(line.startswith("decode ") for line in rows)  # --phase decode
    meta = json.loads(out.read_text())["metadata"]
    assert meta["mode"] == "generate" and meta["generation"]["decode_steps"] == 4


def test_what_ifs_on_generate_report_tokens_per_second_and_token_agreement() -> None:
    from fxtui.core.what_if_text import summary
    from fxtui.measure.pipeline import loaded_from_module, session_for_module
    from fxtui.measure.whatif.runner import run_what_ifs

    model, kwargs = tiny("llama")
    session = session_for_module(
        loaded_from_module(model, (), kwargs=kwargs), analyse=False, generate=NEW_TOKENS, keep_disturbed=True
    )
    session.warm_up(1)
    for _ in range(2):
        session.run_pair()
    threads, int8, fold = run_what_ifs(session, ["threads=1", "int8-dynamic", "fold-bn"], pairs=3)
    for result in (threads, int8):
        assert result.measured, result.error
        assert result.before_s and result.after_s
        assert result.tokens == NEW_TOKENS and result.tokens_total == NEW_TOKENS
        assert result.tokens_same is not None and 0 <= result.tokens_same <= NEW_TOKENS
        # Whole calls: tokens/s are the call's tokens over its median.
        assert result.tokens_per_s == pytest.approx((NEW_TOKENS / result.before_s, NEW_TOKENS / result.after_s))
        assert result.max_rel_diff is not None  # the prefill's logits
    # The same model on fewer threads generates the same greedy tokens.
    assert threads.tokens_same == NEW_TOKENS and threads.first_difference is None
    assert f"{NEW_TOKENS} of {NEW_TOKENS} greedy tokens identical" in summary(threads)
    assert "call_module nodes" in fold.error
    # Modules compared per phase: a prefill's time per call and a decode step's per token are never added.
    assert {"lm_head (prefill)", "lm_head (decode)", "(root) (decode)"} <= {c.path for c in threads.modules}


def test_diff_compares_two_generations_per_phase(report: fxtui.Report, tmp_path: Path) -> None:
    from fxtui.report.diff import diff_files
    from fxtui.report.findings_text import diff_table

    before, after = tmp_path / "a.json", tmp_path / "b.json"
    before.write_text(report.to_json())
    slower = json.loads(report.to_json())
    slower["metadata"]["generation"]["ttft_s"] *= 2
    slower["metadata"]["generation"]["generate_s"] *= 2  # tokens/s follow: the flat figures are the summary's
    after.write_text(json.dumps(slower))
    diff = diff_files(before, after)
    names = {c.name for c in diff.modules}
    assert "lm_head (prefill)" in names and "lm_head (decode)" in names
    ttft = next(c for c in diff.generation if c.name == "time to first token")
    assert ttft.after_s == pytest.approx(2 * ttft.before_s)
    text = diff_table(diff)
    assert "time to first token" in text and "tokens/s" in text and "(-50.0%)" in text


SCRIPT = """
import torch, transformers
torch.manual_seed(0)
config = transformers.AutoConfig.for_model("gpt2", n_layer=1, n_embd=32, n_head=2, vocab_size=100, n_positions=64,
                                           bos_token_id=0, eos_token_id=0)
model = transformers.AutoModelForCausalLM.from_config(config).eval()
for i in range(12):
    ids = torch.randint(0, 100, (1, 8 + i % 2))  # prompts of the program's own lengths
    with torch.inference_mode():
        model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=5, min_new_tokens=5, do_sample=False,
                       pad_token_id=0)
print("done")
"""


def test_a_script_calling_generate_under_fxtui_run(tmp_path: Path) -> None:
    script, out = tmp_path / "gen.py", tmp_path / "run.json"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, "-m", "fxtui", "run", "--once", "--sample-every", "2", "--json", str(out), str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "done" in done.stdout and "time to first token" in done.stdout
    data = json.loads(out.read_text())
    meta = data["metadata"]
    assert meta["mode"] == "run"
    g = meta["generation"]
    # Each generate() call is a step of its own kind (12 calls, the first its warm-up); every forward inside it is not.
    assert meta["steps"]["kind"] == "generate" and meta["steps"]["steps"] == 11
    assert g["calls"] + meta["steps"]["sampled"] <= 11
    assert g["new_tokens"] == 5 and g["decode_steps"] == 4 and g["prompt_tokens"] in (8, 9) and not g["forced"]
    assert len(g["decode_positions"]) == 4 and meta["ttft_s"] > 0 and meta["tpot_s"]["median"] > 0
    assert g["kv_cache_bytes"] and sum(g["kv_layer_bytes"]) == g["kv_cache_bytes"]
    phases = {r["phase"] for r in data["rows"]}
    assert {"prefill", "decode"} <= phases and "forward" not in phases
    assert any(r["name"] == "lm_head · linear (decode)" for r in data["rows"])


def test_a_generation_that_would_stop_at_its_end_of_sequence_token_runs_its_full_length() -> None:
    model, kwargs = tiny("llama")
    eos = model.generation_config.eos_token_id

    def prefer_eos(module: torch.nn.Module, args: object, out: torch.Tensor) -> torch.Tensor:
        out = out.clone()
        out[..., eos] += 1e4  # greedy decoding would choose it at once
        return out

    model.lm_head.register_forward_hook(prefer_eos)
    with torch.inference_mode():
        assert model.generate(**kwargs, max_new_tokens=NEW_TOKENS, do_sample=False).shape[1] == PROMPT + 1
    report = fxtui.profile(model, (), kwargs=kwargs, runs=1, warmup=0, generate=NEW_TOKENS, keep_disturbed=True)
    g = report.generation
    assert g is not None and g.forwards == NEW_TOKENS and g.decode_steps == NEW_TOKENS - 1 and g.eos_suppressed
    assert "the end-of-sequence token is suppressed" in report.header()
