"""fxtui's dispatch mode keeps to the context it was pushed in, and steps it cannot time are set aside and said so.

In-process: the recorder's mode against ``inference_mode``, ``no_grad``, ``autocast`` and the program's own modes
(the mode stack and key sets checked directly); the step model's asides with a fake recorder; the collector's
counts, the header's line and the JSON's field.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode

from fxtui.agent.steps import ClosedStep, Recording, StepModel
from fxtui.core.program_run import KindSummary
from fxtui.core.step_aside import CONTEXT, MODE, PROFILER
from fxtui.jobs.kind_tally import KindTally
from fxtui.ops import mode_context
from fxtui.ops.recorder import OpRecorder
from fxtui.ops.records import OpCall
from fxtui.report.aside_lines import aside_lines
from fxtui.report.json_schema import _kind_decode, _kind_encode
from fxtui.wire.agent_contract import AgentOptions
from fxtui.wire.agent_messages import Step

pytestmark = pytest.mark.unit


def python_key() -> bool:
    return torch._C._dispatch_tls_is_dispatch_key_included(torch._C.DispatchKey.Python)


def stack() -> int:
    return torch._C._len_torch_dispatch_stack()


@pytest.fixture(autouse=True)
def clean_stack() -> Iterator[None]:
    """Each test starts and ends with torch's mode stack empty and no mode of fxtui's lingering."""
    assert stack() == 0 and not python_key()
    yield
    mode_context.settle()
    assert mode_context.lingering() == 0
    assert stack() == 0 and not python_key()


def ops(records: list[object]) -> list[str]:
    return [r.op.overloadpacket.__name__ for r in records if isinstance(r, OpCall)]


class Counting(TorchDispatchMode):
    """A program's own mode: counts the ops it sees."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.seen += 1
        return func(*args, **(kwargs or {}))


def test_the_context_is_the_key_sets_and_inference_mode_not_grad_mode() -> None:
    outside = mode_context.context()
    with torch.no_grad():
        assert mode_context.context() == outside  # grad mode is not in the key sets: push and pop are safe there
    with torch.enable_grad(), torch.set_grad_enabled(False):
        assert mode_context.context() == outside
    with torch.inference_mode():
        inside = mode_context.context()
        assert inside != outside and inside[0]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert mode_context.context() != outside
    with Counting():  # a mode's own Python keys are not part of it
        assert mode_context.context() == outside


def test_a_step_stopped_inside_inference_mode_leaves_torch_working_after_the_block() -> None:
    """The issue's eight lines: started outside, stopped inside; then an op without tensor arguments."""
    recorder = OpRecorder(hooks=False)
    recorder.start()
    torch.ones(2).add(1)
    with torch.inference_mode():
        recorder.stop()  # the step ends at the evaluation's first call
        assert mode_context.lingering() == 1 and stack() == 1  # not popped here: quiet
        torch.ones(2).mul(2)
    assert torch.empty(()).shape == ()  # failed with "Hit Python dispatch key but no arguments had PyInterpreter"
    assert ops(recorder.take()) == ["ones", "add"]  # the quiet mode recorded nothing after the stop
    mode_context.settle()  # the agent's next callback, outside: popped where it was pushed
    assert mode_context.lingering() == 0 and stack() == 0 and not python_key()


def test_a_mode_pushed_inside_inference_mode_is_known_lost_after_the_block_and_popped_there() -> None:
    recorder = OpRecorder(hooks=False)
    with torch.inference_mode():
        recorder.start()
        assert mode_context.pushed_in_inference(recorder.mode)  # type: ignore[arg-type]
        torch.ones(2).add(1)
    mode = recorder.mode
    assert mode is not None and mode_context.lost(mode)  # the block's end dropped its key: it sees nothing now
    torch.ones(2).mul(2)
    recorder.stop()
    assert stack() == 0 and not python_key()
    assert ops(recorder.take()) == ["ones", "add"]
    with Counting() as program_mode:  # the program's own mode, pushed afterwards, sees its ops
        torch.ones(2).add(1)
    assert program_mode.seen == 2


def test_the_programs_mode_pushed_above_fxtuis_pops_first_and_counts_every_op() -> None:
    recorder = OpRecorder(hooks=False)
    recorder.start()
    program_mode = Counting()
    program_mode.__enter__()  # entered in one step ...
    torch.ones(2).add(1)
    recorder.stop()  # fxtui's step ends under it: fxtui's mode waits below, quiet
    assert _get_current_dispatch_mode() is program_mode and mode_context.lingering() == 1
    torch.ones(2).mul(2)
    program_mode.__exit__(None, None, None)  # ... left in the next: the program pops its own mode
    mode_context.settle()
    assert program_mode.seen == 4 and ops(recorder.take()) == ["ones", "add"]


def test_the_next_step_takes_a_lingering_mode_back_rather_than_push_another() -> None:
    recorder = OpRecorder(hooks=False)
    recorder.start()
    first = recorder.mode
    with torch.inference_mode():
        recorder.stop()
        recorder.take()
        recorder.start()  # the next step begins in the block (an evaluation call)
        assert recorder.mode is first and stack() == 1
        torch.ones(2).add(1)
        recorder.stop()
    assert ops(recorder.take()) == ["ones", "add"]
    mode_context.settle()


def test_a_mode_stopped_where_it_was_pushed_is_popped_at_once() -> None:
    recorder = OpRecorder(hooks=False)
    with torch.no_grad():
        recorder.start()
    with torch.enable_grad():
        torch.ones(2).add(1)
        recorder.stop()
    assert stack() == 0 and mode_context.lingering() == 0 and ops(recorder.take()) == ["ones", "add"]


# -- the step model's asides ---------------------------------------------------------------------------------------


class AsideRecorder(Recording):
    """A fake recorder whose profiler switch and broken flag the test sets."""

    def __init__(self) -> None:
        self.on = False
        self.profiler = False
        self.lost = False

    def start(self, describing: bool) -> None:
        self.on = True

    def stop(self) -> list[object]:
        self.on = False
        return ["op"]

    def aside(self) -> str:
        return PROFILER if self.profiler else ""

    def broken(self) -> str:
        return CONTEXT if self.lost else ""


def program() -> tuple[StepModel, AsideRecorder, list[ClosedStep], object]:
    steps: list[ClosedStep] = []
    recorder = AsideRecorder()
    clock = iter(range(0, 10**12, 1000))
    return StepModel(lambda: next(clock), steps.append, recorder, AgentOptions(0, 1)), recorder, steps, object()


def train(model: StepModel, optimizer: object) -> None:
    model.root_enter(0, True, True)
    model.root_exit()
    model.backward_enter()
    model.backward_exit()
    model.optimizer_enter(optimizer, "SGD")
    model.optimizer_exit(optimizer)


def test_steps_under_the_programs_profiler_are_neither_timed_nor_plain_and_say_why() -> None:
    model, recorder, steps, opt = program()
    train(model, opt)
    recorder.profiler = True
    model.set_aside(PROFILER)  # the program enters its profiler between two steps: the open step is under it
    for _ in range(3):
        train(model, opt)
    recorder.profiler = False  # it leaves it: the step open then began under it
    train(model, opt)
    train(model, opt)
    assert [s.aside for s in steps] == ["", PROFILER, PROFILER, PROFILER, PROFILER, ""]
    assert [s.sampled for s in steps] == [True, False, False, False, False, True]
    assert all(not s.records for s in steps if s.aside)


def test_the_programs_profiler_started_mid_step_stops_the_recording_and_sets_the_step_aside() -> None:
    model, recorder, steps, opt = program()
    train(model, opt)  # the next step is open and sampled (every step is)
    model.root_enter(0, True, True)
    assert recorder.on
    model.set_aside(PROFILER)  # the program enters torch.profiler.profile()
    assert not recorder.on
    model.root_exit()
    model.backward_enter()
    model.backward_exit()
    model.optimizer_enter(opt, "SGD")
    model.optimizer_exit(opt)
    assert steps[-1].aside == PROFILER and not steps[-1].sampled and not steps[-1].records


def test_a_step_whose_mode_was_lost_is_set_aside_its_records_dropped() -> None:
    model, recorder, steps, opt = program()
    train(model, opt)
    recorder.lost = True
    train(model, opt)
    recorder.lost = False
    train(model, opt)
    assert [s.aside for s in steps] == ["", CONTEXT, ""]
    assert steps[1].records == [] and steps[2].records == ["op"]


# -- counted, said in the header and kept in the JSON -------------------------------------------------------------


def sent(index: int, wall_ms: int, sampled: bool = False, aside: str = "") -> Step:
    return Step(index, "train", wall_ms * 1_000_000, (0, wall_ms * 1_000_000, 0, 0, 0), sampled, False, aside=aside)


def test_the_collector_counts_aside_steps_and_leaves_their_times_out_of_every_median() -> None:
    figures = KindTally("train")
    for i in range(5):
        figures.add(sent(i, 10))
    for i in range(5, 9):
        figures.add(sent(i, 500, aside=PROFILER))  # the program's profiler makes them slow
    figures.add(sent(9, 500, aside=CONTEXT))
    summary = figures.summary()
    assert summary.steps == 10 and summary.sampled == 0
    assert summary.step_median_s == pytest.approx(0.010)
    assert summary.phase_median_s[1] == pytest.approx(0.010)
    assert dict(summary.aside) == {PROFILER: 4, CONTEXT: 1}


def test_the_header_says_how_many_steps_were_set_aside_and_why() -> None:
    kinds = (
        KindSummary("train", 40, aside=((PROFILER, 12),)),
        KindSummary("eval", 3, aside=((CONTEXT, 1),)),
        KindSummary("generate", 2, aside=((MODE, 2),)),
    )
    lines = aside_lines(kinds)
    assert lines[0].startswith("aside      12 training steps under the program's own torch.profiler were not sampled")
    assert lines[1].startswith("aside      1 evaluation call was not sampled: torch's thread state changed")
    assert lines[2].startswith("aside      2 generate() calls under a dispatch mode of the program's own")
    assert len(lines) == 3


def test_the_json_keeps_the_asides_per_kind() -> None:
    kind = KindSummary("train", 40, aside=((CONTEXT, 2), (PROFILER, 12)))
    encoded = _kind_encode(kind)
    assert encoded["aside"] == {"context": 2, "profiler": 12}
    assert _kind_decode(encoded).aside == kind.aside


def test_counter_of_reasons_is_a_plain_counter() -> None:
    """KindTally.aside is a Counter (reset with the kind's figures)."""
    figures = KindTally("eval")
    figures.add(Step(0, "eval", 1, (0, 1, 0, 0, 0), False, False, warm=True, aside=PROFILER))
    figures.reset()
    assert figures.aside == Counter()


# -- the agent in this process (fxtui.watch) ----------------------------------------------------------------------


def _loop(model: torch.nn.Module, opt: torch.optim.Optimizer, steps: int) -> list[float]:
    losses = []
    for _ in range(steps):
        loss = torch.nn.functional.mse_loss(model(torch.randn(4, 8)), torch.zeros(4, 2))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses


def _program() -> tuple[list[float], list[tuple[str, int]], int]:
    """Training, evaluations under inference_mode (one block per call, and one block for a loop), an op without
    tensors after each, and a profiled window: the losses, the profiler's counts and FlopCounterMode's."""
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = _loop(model, opt, 6)
    for _ in range(3):
        with torch.inference_mode():
            losses.append(float(model(torch.randn(2, 8)).sum()))
        losses.append(float(torch.empty(()).fill_(1)))
        losses += _loop(model, opt, 2)
        with torch.inference_mode():
            losses += [float(model(torch.randn(2, 8)).sum()) for _ in range(3)]
        losses.append(float(torch.empty(()).fill_(2)))
    with torch.profiler.profile() as prof:
        losses += _loop(model, opt, 5)
    counts = sorted((e.key, e.count) for e in prof.key_averages() if e.key.startswith("aten::"))
    with FlopCounterMode(display=False) as flops:
        losses += _loop(model, opt, 2)
    return losses, counts, flops.get_total_flops()


def test_the_agent_leaves_torch_as_it_found_it_and_the_programs_profiler_counts_as_alone() -> None:
    import fxtui

    alone = _program()
    with fxtui.watch(warmup=1, every=1, timer="mode") as w:  # the dispatch mode's place on the program's stacks
        watched = _program()
    assert watched == alone  # losses, the profiler's op counts, FlopCounterMode's flops
    steps = w.report().steps
    assert steps is not None
    kinds = {k.kind: k for k in steps.kinds}
    assert kinds["eval"].sampled >= 6  # evaluations under inference_mode are timed, not only survived
    assert dict(kinds["train"].aside).get(PROFILER, 0) >= 5
    assert dict(kinds["train"].aside).get(MODE, 0) >= 1  # under FlopCounterMode: fxtui's mode stayed off its stack
    assert stack() == 0  # FlopCounterMode's own mode was left on the stack when fxtui pushed above it


def test_the_programs_profiler_started_inside_inference_mode_finds_fxtuis_mode_gone() -> None:
    """A step timed from outside; the program profiles an inference under ``inference_mode``: fxtui's mode leaves
    the stack before the profiler starts (it would count every op twice), and the block's end is repaired."""
    recorder = OpRecorder(hooks=False)
    recorder.start()
    mode = recorder.mode
    assert mode is not None
    with torch.inference_mode():
        recorder.stop()  # the step model stops the step: another context, so the mode lingers ...
        assert mode_context.lingering() == 1
        assert mode_context.pop_for_profiler(mode)  # ... until the profiler starts: gone at once
        assert stack() == 0 and mode_context.lingering() == 0
        with torch.profiler.profile() as prof:
            torch.ones(3, 3).mm(torch.ones(3, 3))
    assert python_key()  # the block restored the key over an empty stack (the crash of the issue) ...
    mode_context.after_inference_exit()  # ... which the agent's wrapper of inference_mode.__exit__ takes out
    assert not python_key() and torch.empty(()).shape == ()
    assert {e.key: e.count for e in prof.key_averages()}["aten::mm"] == 1
