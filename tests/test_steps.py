"""The step model on the loops real programs run, with a fake clock: kinds kept apart, a step spans an iteration."""

from __future__ import annotations

import pytest

from fxtui.agent.pace import MIN_EVERY
from fxtui.agent.steps import DATA, OPTIMIZER, ClosedStep, Recording, StepModel
from fxtui.core.program_run import STEP_PHASES
from fxtui.wire.agent_contract import AgentOptions

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now

    def advance(self, ns: int) -> None:
        self.now += ns


class Recorder(Recording):
    """Counts what the step model asks of the recorder; its 'records' are the marks it was given."""

    def __init__(self) -> None:
        self.on = False
        self.records: list[object] = []
        self.starts = 0

    def start(self, describing: bool) -> None:
        assert not self.on
        self.on, self.starts = True, self.starts + 1

    def stop(self) -> list[object]:
        self.on = False
        records, self.records = self.records, []
        return records

    def mark(self, phase: str, enter: bool, owner: object = None) -> None:
        assert self.on
        self.records.append((phase, enter))


class Program:
    """A program's events, each taking the time given (µs)."""

    def __init__(self, warmup: int = 2, every: int = 2) -> None:
        self.clock = Clock()
        self.steps: list[ClosedStep] = []
        self.recorder = Recorder()
        self.model = StepModel(self.clock, self.steps.append, self.recorder, AgentOptions(warmup, every))

    def call(self, us: int, root: int = 0, grad: bool = True, training: bool = True, steps: bool = True) -> None:
        self.model.root_enter(root, grad, training, steps)
        self.clock.advance(us * 1000)
        self.model.root_exit()

    def other(self, us: int) -> None:
        self.clock.advance(us * 1000)

    def backward(self, us: int) -> None:
        self.model.backward_enter()
        self.clock.advance(us * 1000)
        self.model.backward_exit()

    def step(self, us: int, optimizer: object, name: str = "SGD", closure: list[int] | None = None) -> None:
        self.model.optimizer_enter(optimizer, name)
        self.clock.advance(us * 1000)
        for forward_us in closure or ():
            self.model.closure_enter()
            self.call(forward_us)
            self.other(5)
            self.backward(forward_us)
            self.model.closure_exit()
        self.model.optimizer_exit(optimizer)

    def phase(self, phase: int, us: int) -> None:
        self.model.phase_enter(phase, "data" if phase == DATA else "optimizer")
        self.clock.advance(us * 1000)
        self.model.phase_exit(phase, "data" if phase == DATA else "optimizer")

    def kinds(self, kind: str, warm: bool = True) -> list[ClosedStep]:
        return [s for s in self.steps if s.kind == kind and (s.warm or not warm)]


def phase(step: ClosedStep, name: str) -> int:
    return step.phases_ns[STEP_PHASES.index(name)] // 1000


def test_an_evaluation_before_training_is_counted_apart_and_paces_itself() -> None:
    """nanoGPT: estimate_loss (forward calls under no_grad) at iteration 0, then training with AdamW."""
    p, adamw = Program(), object()
    for _ in range(10):
        p.other(3)
        p.call(60, grad=False, training=False)
    for _ in range(12):
        p.call(300)
        p.other(10)  # the loss divided by the micro-batches, the next batch: between the forward and its backward
        p.backward(500)
        p.phase(OPTIMIZER, 20)  # clip_grad_norm_
        p.step(30, adamw, "AdamW")
        p.phase(OPTIMIZER, 5)  # zero_grad
        p.other(15)  # logging
    evals, trains = p.kinds("eval", warm=False), p.kinds("train", warm=False)
    assert len(evals) == 10 and all(s.wall_ns == 63_000 for s in evals[:-1])  # a call and the Python to the next
    assert len(trains) == 12  # the 13th, opened by the last optimizer step, is still open at the end
    warm = p.kinds("train")
    assert [s.wall_ns // 1000 for s in warm] == [880] * len(warm)  # one whole iteration each, nothing of eval's
    assert phase(warm[0], "forward") == 310 and phase(warm[0], "backward") == 500 and phase(warm[0], "optimizer") == 55
    assert phase(warm[0], "other") == 15
    assert dict(warm[0].holds) == {"forward": 1, "backward": 1, "optimizer:AdamW": 1}
    assert any(s.sampled for s in warm) and any(s.sampled for s in p.kinds("eval"))
    # Each kind is paced by its own steps: the first sampled evaluation call came right after its warm-up.
    assert next(s.index for s in evals if s.sampled) == 2


def test_evaluation_inside_training_is_carved_out_and_the_training_step_resumes() -> None:
    p, opt = Program(warmup=0), object()
    for i in range(6):
        if i == 3:
            for _ in range(4):
                p.call(50, grad=False, training=False)
        p.call(100)
        p.backward(200)
        p.step(10, opt)
    trains = p.kinds("train")
    assert [s.wall_ns // 1000 for s in trains] == [310] * 6  # the evaluation's time is in no training step
    assert len(p.kinds("eval")) == 4


def test_without_an_optimizer_a_step_holds_forward_backward_and_update() -> None:
    """pytorch/examples word_language_model: model.zero_grad(), clip_grad_norm_, p.data.add_ — no optimizer."""
    p = Program(warmup=1)
    for _ in range(2):  # epochs
        for _ in range(5):
            p.phase(OPTIMIZER, 5)  # model.zero_grad()
            p.call(200)
            p.call(20, root=1, steps=False)  # nn.NLLLoss(), a loss module: part of the step
            p.backward(400)
            p.phase(OPTIMIZER, 10)  # clip_grad_norm_
            p.other(30)  # the manual update, loss.item()
        for _ in range(3):
            p.call(80, grad=False, training=False)  # evaluate() under no_grad
    p.model.finish()
    trains = p.kinds("train", warm=False)
    assert all(dict(s.holds) == {"forward": 1, "backward": 1} for s in trains)
    # A step ends at the next forward, so it holds the next batch's zero_grad (5 µs), but for the last
    walls = [s.wall_ns // 1000 for s in p.kinds("train")]
    assert walls == [665] * (len(walls) - 1) + [660]
    assert len(p.kinds("eval", warm=False)) == 6
    # Every batch is a step, the last epoch's last one too: set aside by the final evaluation, it ends there.
    assert len(trains) == 10


def test_a_gan_step_holds_both_optimizers_and_ends_after_the_last() -> None:
    """dcgan: D's update then G's, each with its own optimizer; G's backward flows through D."""
    p, opt_d, opt_g = Program(warmup=1), object(), object()
    for _ in range(8):
        p.phase(DATA, 10)
        p.phase(OPTIMIZER, 2)  # netD.zero_grad()
        p.call(100, root=1)  # D(real)
        p.call(5, root=2, steps=False)  # BCELoss
        p.backward(150)
        p.call(80, root=0)  # G(noise)
        p.call(100, root=1)  # D(fake.detach())
        p.backward(150)
        p.step(10, opt_d, "Adam")
        p.phase(OPTIMIZER, 2)  # netG.zero_grad()
        p.call(100, root=1)  # D(fake)
        p.backward(300)
        p.step(10, opt_g, "Adam")
    warm = p.kinds("train")
    assert warm and all(dict(s.holds) == {"data": 1, "forward": 4, "backward": 3, "optimizer:Adam": 2} for s in warm)
    assert {s.wall_ns // 1000 for s in warm} == {1019}
    assert phase(warm[0], "data") == 10  # the step begins with its batch: it ends after G's step


def test_a_closure_is_the_models_forward_and_backward_not_the_optimizers() -> None:
    """pytorch/examples time_sequence_prediction: LBFGS.step(closure), the closure run several times."""
    p, lbfgs = Program(warmup=1), object()
    for _ in range(5):
        p.step(40, lbfgs, "LBFGS", closure=[300, 300, 300])
        p.call(200, grad=False)  # the prediction under no_grad
    p.model.finish()
    trains = p.kinds("train")
    assert [(phase(s, "forward"), phase(s, "backward"), phase(s, "optimizer"), phase(s, "other")) for s in trains] == [
        (915, 900, 40, 0)  # each closure's loss (5 µs between its forward and its backward) is the forward's
    ] * len(trains)
    assert dict(trains[0].holds) == {"forward": 3, "backward": 3, "optimizer:LBFGS": 1}
    assert len(p.kinds("eval", warm=False)) == 5


def test_gradient_accumulation_is_one_step_of_several_micro_batches() -> None:
    p, opt = Program(warmup=1), object()
    for _ in range(6):
        for _ in range(4):
            p.phase(DATA, 5)
            p.call(50)
            p.backward(80)
        p.step(10, opt)
    restarted = [s.index for s in p.steps if s.restart]
    assert len(restarted) == 1  # the steps closed before the optimizer was seen held micro-batches: void
    warm = [s for s in p.kinds("train") if s.index >= restarted[0]]
    assert all(dict(s.holds) == {"data": 4, "forward": 4, "backward": 4, "optimizer:SGD": 1} for s in warm)
    assert {s.wall_ns // 1000 for s in warm} == {550}


def test_a_program_that_never_trains_is_evaluation_calls_with_or_without_no_grad() -> None:
    p = Program(warmup=1)
    for _ in range(6):
        p.call(100)  # grad enabled, training mode, no backward ever
        p.other(10)
    p.model.finish()
    evals = p.kinds("eval", warm=False)
    assert len(evals) == 6 and not p.kinds("train", warm=False)
    assert evals[-1].wall_ns == 100_000  # the last call ends at its return, not at the program's end
    assert {s.wall_ns for s in evals[:-1]} == {110_000}


def test_a_frozen_model_without_gradients_inside_training_is_part_of_the_iteration() -> None:
    p, opt = Program(warmup=0), object()
    for _ in range(4):
        p.call(70, root=1, grad=False)  # a frozen encoder, never trained
        p.call(100, root=0)
        p.backward(100)
        p.step(10, opt)
    assert {s.wall_ns // 1000 for s in p.kinds("train")[1:]} == {280}
    assert len(p.kinds("eval", warm=False)) == 1  # its first call came before the program trained


def test_generate_calls_are_steps_of_their_own_and_warm_after_one() -> None:
    p = Program(warmup=5, every=1)
    for _ in range(3):
        p.model.generate_enter()
        for _ in range(8):
            p.call(50, grad=False)  # prefill, then decode steps
        p.model.generate_exit()
        p.other(100)  # the script's own work between calls is in no step
    calls = p.kinds("generate", warm=False)
    assert [s.wall_ns for s in calls] == [400_000] * 3 and not p.kinds("eval", warm=False)
    assert [s.warm for s in calls] == [False, True, True]
    assert [s.sampled for s in calls] == [False, True, True]


def test_long_steps_are_warm_after_one() -> None:
    p, opt = Program(warmup=5, every=1), object()
    for _ in range(3):
        p.call(600_000)
        p.backward(600_000)
        p.step(1000, opt)
    trains = p.kinds("train", warm=False)
    assert [s.warm for s in trains] == [False, True, True] and trains[1].sampled


def test_a_paused_sampled_step_keeps_its_records_and_an_evaluation_call_keeps_its_own() -> None:
    p, opt = Program(warmup=0, every=1), object()
    p.call(10)
    p.backward(10)
    p.step(1, opt)
    p.phase(OPTIMIZER, 1)  # in the next (sampled) step
    p.call(10, grad=False, training=False)  # an evaluation call interrupts it
    p.call(10)
    p.backward(10)
    p.step(1, opt)
    train = [s for s in p.steps if s.kind == "train"][-1]
    assert ("optimizer", True) in train.records and ("backward", True) in train.records
    assert p.recorder.on  # the next training step is sampled too (every=1)


def test_a_wrapped_optimizer_counts_once_and_closes_the_step() -> None:
    """accelerate's AcceleratedOptimizer steps the optimizer it wraps: one step, one optimizer step."""
    p, outer, inner = Program(warmup=0), object(), object()
    for _ in range(3):
        p.call(10)
        p.backward(10)
        p.model.optimizer_enter(outer, "AcceleratedOptimizer")
        p.model.optimizer_enter(inner, "AdamW")
        p.other(5)
        p.model.optimizer_exit(inner)
        p.model.optimizer_exit(outer)
    trains = p.kinds("train")
    assert len(trains) == 3 and all(dict(s.holds)["optimizer:AcceleratedOptimizer"] == 1 for s in trains)
    assert all("optimizer:AdamW" not in dict(s.holds) for s in trains)


def test_sampling_stops_when_the_agent_is_turned_off() -> None:
    p, opt = Program(warmup=0, every=1), object()
    p.model.enabled = False
    for _ in range(MIN_EVERY):
        p.call(10)
        p.backward(10)
        p.step(1, opt)
    assert not any(s.sampled for s in p.steps) and p.recorder.starts == 0


def test_a_loss_computed_outside_the_model_is_the_forward_of_its_training_step() -> None:
    """pytorch/examples vae (a functional loss) and super_resolution (an nn.MSELoss module): the time between the
    model's forward and the backward that follows is the loss's, the forward's; an evaluation's loss stays other,
    and so does what follows a phase between the forward and the backward (a DataLoader's next batch)."""
    p, adam = Program(warmup=1), object()
    for _ in range(4):
        p.phase(DATA, 10)
        p.call(100)
        p.other(20)  # F.binary_cross_entropy(recon, x) + KL, outside every module
        p.call(15, root=1, steps=False)  # or a loss module called on the output
        p.backward(200)
        p.step(30, adam, "Adam")
        p.other(7)  # loss.item(), logging
    for _ in range(3):
        p.call(50, grad=False, training=False)
        p.other(8)  # the evaluation's loss
    p.model.finish()
    trains = p.kinds("train")
    assert trains and all(phase(s, "forward") == 135 and phase(s, "other") == 7 for s in trains)
    evals = p.kinds("eval", warm=False)
    assert evals and all(phase(s, "forward") == 50 and phase(s, "other") == 8 for s in evals[:-1])
    q, sgd = Program(warmup=1), object()
    for _ in range(4):
        q.call(100)
        q.phase(DATA, 10)  # a batch fetched between the forward and its backward: not the loss
        q.other(20)
        q.backward(200)
        q.step(30, sgd)
    assert all(phase(s, "forward") == 100 and phase(s, "other") == 20 for s in q.kinds("train"))


def test_a_models_method_calling_its_parts_at_the_top_is_no_evaluation_call_of_its_own() -> None:
    """pytorch/examples vae: after its evaluation under no_grad, ``model.decode(sample)`` calls two layers of the
    model at the top; they are part of the step in progress, not two more evaluation calls."""
    p, adam = Program(warmup=1), object()
    for _ in range(2):  # epochs
        for _ in range(4):
            p.call(100)
            p.backward(200)
            p.step(30, adam, "Adam")
        for _ in range(3):
            p.call(50, grad=False, training=False)
            p.other(5)
        p.model.root_enter(0, False, False, True, part=True)  # decode's fc3 …
        p.clock.advance(20_000)
        p.model.root_exit()
        p.model.root_enter(0, False, False, True, part=True)  # … and fc4
        p.clock.advance(20_000)
        p.model.root_exit()
    p.model.finish()
    evals = p.kinds("eval", warm=False)
    assert len(evals) == 6  # the test batches, and nothing else
    assert all(dict(s.holds) == {"forward": 1} for s in evals)
    assert phase(evals[2], "forward") == 90  # the epoch's last call and the decode of samples that followed it


def test_a_models_method_calling_its_parts_batch_after_batch_makes_a_call_each() -> None:
    """Lightning's validation: ``validation_step`` calls ``self.net`` (a part of the LightningModule) at the top,
    without gradients, once per batch from the validation DataLoader; each batch is an evaluation call of its own,
    the first carved out of the training step."""
    p, adam = Program(warmup=1), object()
    for _ in range(2):  # epochs
        for _ in range(4):
            p.phase(DATA, 10)
            p.model.root_enter(0, True, True, True, part=True)  # training_step: self.net(x)
            p.clock.advance(100_000)
            p.model.root_exit()
            p.backward(200)
            p.step(30, adam, "Adam")
        for _ in range(3):
            p.phase(DATA, 10)
            p.model.root_enter(0, False, False, True, part=True)  # validation_step: self.net(x)
            p.clock.advance(50_000)
            p.model.root_exit()
    p.model.finish()
    evals = p.kinds("eval", warm=False)
    assert len(evals) == 6  # one a validation batch
    assert all(dict(s.holds).get("forward") == 1 for s in evals)
    assert len(p.kinds("train", warm=False)) == 8


def test_a_decode_of_samples_after_a_data_loader_ran_out_is_the_steps_own() -> None:
    """pytorch/examples vae's test loop fetches its batches from a DataLoader, whose last ``__next__`` raises
    StopIteration; the ``model.decode(sample)`` after it fetched nothing new: it stays the last call's."""
    p, adam = Program(warmup=1), object()
    for _ in range(2):  # epochs
        for _ in range(4):
            p.phase(DATA, 10)
            p.call(100)
            p.backward(200)
            p.step(30, adam, "Adam")
        for _ in range(3):
            p.phase(DATA, 10)
            p.call(50, grad=False, training=False)
        p.model.phase_enter(DATA, "data")  # the iterator ends
        p.model.no_batch()
        p.model.phase_exit(DATA, "data")
        p.model.root_enter(0, False, False, True, part=True)  # decode's fc3
        p.clock.advance(20_000)
        p.model.root_exit()
    p.model.finish()
    assert len(p.kinds("eval", warm=False)) == 6  # the test batches, and nothing else
