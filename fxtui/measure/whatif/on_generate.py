"""What-ifs on ``generate()`` calls: measured on whole calls, judged by the tokens they generate.

A change that moves the logits a little can still change a greedy choice, and every token after
it follows a different context: the generated tokens' agreement (how many of them are identical,
and the first that is not) says what the logits' error alone does not. The logits compared are
the prefill's (one forward on the prompt), the outputs of a whole call being token ids.

``compile`` compiles the copy's ``forward`` (``generate()`` itself is Python that calls it); the
cache grows a token a step, so TorchDynamo compiles again as shapes change: how many graphs the
first call compiled is said with its time.
"""

from __future__ import annotations

import copy
import time
import warnings
from typing import TYPE_CHECKING, Any, cast

import torch
from torch import nn

from fxtui.measure.whatif.changes import CannotApply, Variant, compile_failure
from fxtui.measure.whatif.outputs import output_difference

if TYPE_CHECKING:
    from fxtui.measure.capture.captured import CapturedModel
    from fxtui.measure.capture.generate import GenerationRuns
    from fxtui.measure.session import Session


def compile_generate(session: Session) -> Variant:
    """``torch.compile`` of a copy's ``forward``; its first ``generate()`` call compiles (timed, graphs counted)."""
    try:
        model = copy.deepcopy(session.captured.root)
    except Exception as e:
        raise CannotApply(f"the model cannot be copied to change it ({type(e).__name__}: {e})") from e
    try:
        from torch._dynamo.utils import counters

        before = counters["stats"]["unique_graphs"]
        started = time.perf_counter()
        model.forward = torch.compile(model.forward)
        captured = session.captured.renew(model)  # type: ignore[misc]
        with captured.running(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            captured.run(session.inputs.fresh())  # the first call compiles, as the cache grows
        setup = time.perf_counter() - started
        graphs = counters["stats"]["unique_graphs"] - before
    except CannotApply:
        raise
    except Exception as e:
        raise CannotApply(compile_failure(e)) from e
    return Variant(
        title=f"torch.compile (Inductor) of the model's forward, whole generate() calls: the first call compiled "
        f"{graphs} graph{'s' if graphs != 1 else ''} in {setup:.1f} s as the cache grew",
        inputs=session.inputs,
        call=captured.run,
        setup_s=setup,
        module=model,
    )


def compare_generations(
    session: Session, original: CapturedModel, variant: Variant
) -> tuple[float | None, float | None, dict[str, Any], str]:
    """The prefill's logits compared (max abs, max rel), the generated tokens' agreement, and a note."""
    notes = cast("GenerationRuns", original.notes)
    inputs = session.inputs
    changed = variant.module if variant.module is not None else (variant.captured.root if variant.captured else None)
    try:
        with original.running():
            a = original.run(inputs.fresh())
            a_logits = _logits(original.root, inputs)
        with variant.context(), original.running():
            given = variant.inputs.fresh()
            b = variant.captured.run(given) if variant.captured is not None else variant.call(given)  # type: ignore[misc]
            b_logits = _logits(changed, variant.inputs) if changed is not None else None
    except Exception as e:
        return None, None, {}, f"outputs not compared: a call raised {type(e).__name__}"
    abs_diff, rel_diff = output_difference(a_logits, b_logits) if b_logits is not None else (None, None)
    prompt = notes.prompt_tokens
    tokens: dict[str, Any] = {"tokens": notes.new_tokens * notes.batch}
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape:
        new_a, new_b = a[:, prompt:], b[:, prompt:]
        same = new_a == new_b
        differ = (~same).any(dim=0).nonzero()
        tokens.update(
            tokens_same=int(same.sum()),
            tokens_total=int(same.numel()),
            first_difference=int(differ[0]) + 1 if len(differ) else None,
        )
    return abs_diff, rel_diff, tokens, "" if abs_diff is not None else "the prefill's logits not compared"


def _logits(module: nn.Module, inputs: Any) -> Any:
    """The model's logits on the prompt (one forward, no cache kept)."""
    out = inputs.fresh().call(lambda *args, **kwargs: module(*args, **kwargs, use_cache=False))
    return getattr(out, "logits", out)
