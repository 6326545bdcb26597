"""The agent's wrappers of torch's phase-marking calls (``agent.wrappers``) and of transformers' ``generate()``
(``agent.generate_hook``), in this process, around stand-ins of what they wrap. Under ``fxtui run`` they are
checked end to end by tests/test_run.py, tests/test_generate.py and tests/test_do_no_harm.py."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from fxtui.agent import wrappers
from fxtui.agent.generate_hook import GenerateWatch, _prompt
from fxtui.agent.wrappers import wrap_call
from fxtui.ops.recorder import OpRecorder
from fxtui.ops.records import Named

pytestmark = pytest.mark.unit


class Optimizer:
    """A stand-in for ``torch.optim.Optimizer``: ``step`` returns what it is given, or raises."""

    def step(self, value: int = 1) -> int:
        """Take one step."""
        if value < 0:
            raise ValueError("negative")
        return value * 2


def test_a_wrapped_method_hears_its_object_before_and_its_end_after_and_keeps_its_result() -> None:
    heard: list[object] = []
    original = Optimizer.step
    undo = wrap_call(Optimizer, "step", heard.append, lambda: heard.append("left"))
    try:
        optimizer = Optimizer()
        assert optimizer.step(3) == 6
        assert heard == [optimizer, "left"]
        with pytest.raises(ValueError, match="negative"):  # the program's error stays its own
            optimizer.step(-1)
        assert heard[-2:] == [optimizer, "left"]
        assert Optimizer.step.__wrapped__ is original  # type: ignore[attr-defined]
        assert Optimizer.step.__name__ == "step" and Optimizer.step.__doc__ == "Take one step."
    finally:
        undo()
    assert Optimizer.step is original


def test_a_wrapped_function_hears_its_name() -> None:
    owner = types.SimpleNamespace(backward=lambda loss: loss + 1)
    heard: list[object] = []
    undo = wrap_call(owner, "backward", heard.append, lambda: None)
    assert owner.backward(1) == 2
    assert len(heard) == 1 and isinstance(heard[0], Named) and heard[0].name == "backward"
    undo()
    assert owner.backward(1) == 2 and len(heard) == 1


def test_traced_by_dynamo_the_wrapper_is_the_programs_code_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    heard: list[object] = []
    undo = wrap_call(Optimizer, "step", heard.append, lambda: heard.append("left"))
    try:
        monkeypatch.setattr(wrappers, "is_compiling", lambda: True)
        assert Optimizer().step(2) == 4 and heard == []
    finally:
        undo()


# -- generate() -------------------------------------------------------------------------------------------------


class Ids:
    """Token ids: only their shape matters to the hook."""

    def __init__(self, batch: int, length: int) -> None:
        self.shape = (batch, length)


def fake_transformers(forward: Any) -> types.ModuleType:
    """``transformers.generation.utils`` with a ``GenerationMixin`` whose ``generate`` runs one forward per token
    (``forward(model)`` is what the agent's module hooks would call) and, with ``draft``, a nested assisted call."""
    module = types.ModuleType("transformers.generation.utils")

    class GenerationMixin:
        def generate(self, input_ids: Ids, max_new_tokens: int = 3, draft: Any = None) -> Ids:
            """Greedy decoding."""
            for _ in range(max_new_tokens):
                forward(self)
                if draft is not None:
                    draft.generate(input_ids, max_new_tokens=1)
            batch, length = input_ids.shape
            return Ids(batch, length + max_new_tokens)

    module.GenerationMixin = GenerationMixin  # type: ignore[attr-defined]
    return module


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A :class:`GenerateWatch` installed over a fake transformers; what it called around each call."""
    watch = GenerateWatch(OpRecorder(hooks=False))
    module = fake_transformers(watch.forward)
    monkeypatch.setitem(sys.modules, "transformers.generation.utils", module)
    events: list[str] = []
    original = module.GenerationMixin.generate
    watch.install(lambda: events.append("enter"), lambda: events.append("leave"))
    yield types.SimpleNamespace(watch=watch, model=module.GenerationMixin(), events=events, original=original)
    watch.uninstall()
    assert module.GenerationMixin.generate is original


def test_a_generate_call_is_one_step_with_its_prompt_tokens_and_decode_steps(watched: Any) -> None:
    out = watched.model.generate(Ids(2, 5), max_new_tokens=4)
    assert out.shape == (2, 9) and watched.events == ["enter", "leave"]
    (call,) = watched.watch.take()
    summary = call.summary()
    assert (summary.batch, summary.prompt_tokens, summary.new_tokens) == (2, 5, 4)
    assert len(summary.steps_ns) == 3  # four forwards: the prefill, then three decode steps
    assert 0 < summary.ttft_ns <= summary.wall_ns and sum(summary.steps_ns) <= summary.wall_ns
    assert summary.kv_cache_bytes is None  # counted in sampled calls only
    assert watched.watch.take() == [] and not watched.watch.active


def test_a_generate_inside_a_generate_is_part_of_the_outer_call(watched: Any) -> None:
    draft = type(watched.model)()
    watched.model.generate(Ids(1, 3), max_new_tokens=2, draft=draft)
    assert watched.events == ["enter", "leave"]  # one step, not three
    (call,) = watched.watch.take()
    assert call.summary().new_tokens == 2 and len(call.starts) == 2  # the draft model's forwards are not its own


def test_the_generate_wrapper_keeps_the_name_and_the_programs_errors(watched: Any) -> None:
    generate = type(watched.model).generate
    assert generate.__wrapped__ is watched.original and generate.__doc__ == "Greedy decoding."
    with pytest.raises(AttributeError):  # not token ids: the program's own error, the step still ends
        watched.model.generate(None, max_new_tokens=1)
    assert watched.events == ["enter", "leave"] and not watched.watch.active


def test_a_call_still_running_stays_for_the_next_step(watched: Any) -> None:
    watched.watch._start(watched.model, (Ids(1, 2),), {})
    assert watched.watch.take() == [] and watched.watch.active


def test_a_calls_prompt_is_read_from_its_token_ids_wherever_they_are_passed() -> None:
    assert _prompt((Ids(4, 7),), {}) == (4, 7)
    assert _prompt((), {"input_ids": Ids(1, 9)}) == (1, 9)
    assert _prompt((), {"inputs": Ids(2, 3)}) == (2, 3)
    assert _prompt((), {"inputs_embeds": object()}) == (1, 0)  # no token ids
    assert _prompt((types.SimpleNamespace(shape=(5,)),), {}) == (1, 0)  # one sequence, not a batch of them
