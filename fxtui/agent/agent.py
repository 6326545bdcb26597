"""The agent inside a program run under ``fxtui run``: it finds steps and their phases, and times a sample of
them per node.

Installed right after the program imports torch (:mod:`fxtui.agent.boot`). What every
step pays is a few cheap hooks, each a clock reading (measured on 2 cores, torch 2.14): global
optimizer step hooks (+0.6 µs a step), a wrapper of the DataLoader iterator's ``__next__``
(+0.5 µs a batch), of ``torch.autograd.backward`` (+0.3 µs), of ``Optimizer.zero_grad`` and
``clip_grad_norm_``, and forward hooks on the outermost modules only (+22 µs a step for
mobilenet_v3_small's 209 module calls where global module hooks cost +313 µs). A global module
hook finds those outermost modules (the *roots*) on the first module call, and again during
sampled steps (a second model called later, a GAN's discriminator, is found then).

A step is one ``optimizer.step()`` of the first optimizer that steps (the *primary* one: a
GAN's second optimizer is part of the step), or, in a program without an optimizer, one call
of the first root, from its start to the next one's. Each step's wall time splits into
data, forward, backward, optimizer and other (:data:`fxtui.core.program_run.STEP_PHASES`),
exclusively: a phase inside another (a closure's forward inside ``LBFGS.step``) pauses it.

After the warm-up steps, one step in N is *sampled*: the :class:`~fxtui.ops.recorder.OpRecorder`
times every ATen op of it, charged to its module. The first :data:`FIRST_SAMPLES` come one in
:data:`MIN_EVERY` steps, so figures show soon; then N adapts so the sampled steps cost the
program at most :data:`BUDGET` of its time (N = (sampled ÷ unsampled step − 1) ÷ BUDGET, at
least :data:`MIN_EVERY`, at most :data:`MAX_EVERY`). The first sampled step, and any later one
that meets nodes not seen before, also notes their inputs and the user's source line; slower,
it is left out of the figures. The records of a sampled step are resolved right after it, outside
every step's time; all that leaves the user's threads is a small message per step, handed to a
sender thread (:mod:`fxtui.agent.sender`), which drops messages rather than ever block the
program when the collector falls behind.

Nothing here raises into the program: a failing hook is counted, reported once, and the agent
turns itself off.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import os
import socket
import statistics
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable
from typing import Any

import torch
from torch.compiler import is_compiling
from torch.nn.modules.module import register_module_forward_pre_hook
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from fxtui.agent.generate_hook import GenerateWatch, resolve_step
from fxtui.agent.sender import Sender
from fxtui.agent.wrappers import quiet_hooks_warning, wrap_call
from fxtui.core.agent_contract import AgentOptions
from fxtui.core.agent_messages import Bye, Hello, Step
from fxtui.core.program_run import STEP_PHASES
from fxtui.ops.dynamo_skip import run_eagerly
from fxtui.ops.kernels import CompiledKernels
from fxtui.ops.namer import OpNamer
from fxtui.ops.recorder import OpRecorder

#: Sample at most one step in this many.
MIN_EVERY = 5
#: And at least one in this many (a model whose per-op cost is large still gets figures).
MAX_EVERY = 200
#: Sampled steps taken one in :data:`MIN_EVERY` before the budget sets the pace: figures soon, in every run.
FIRST_SAMPLES = 8


_DATA, _FORWARD, _BACKWARD, _OPTIMIZER, _OTHER = (STEP_PHASES.index(p) for p in STEP_PHASES)
_clock = time.perf_counter_ns

try:
    import resource
except ImportError:  # not on every platform: faults go uncounted
    resource = None  # type: ignore[assignment]


def _faults() -> int:
    """The process's minor page faults so far (read on sampled steps only: a system call)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt if resource is not None else 0


class Agent:
    """Watches the program's steps; ``send(message)`` gets each step's figures (never blocks)."""

    def __init__(self, send: Callable[[Any], None], options: AgentOptions | None = None) -> None:
        self.send = send
        self.options = options = options or AgentOptions()
        self.namer = OpNamer()
        self.kernels = CompiledKernels()
        """The kernels of the program's compiled code, timed on sampled steps."""
        self.recorder = OpRecorder(kernels=self.kernels)
        self.kind = "call"
        """``call`` until the first optimizer step, then ``train``."""
        self.primary: object = None
        """The optimizer whose step ends a step."""
        self.roots: list[torch.nn.Module] = []
        self._root_hooks: list[Any] = []
        self._undo: list[Callable[[], None]] = []
        self._discover: Any = None
        self._depth = 0
        # The step in progress: each phase's time, the phase stack (exclusive timing), its start.
        self._acc = [0] * len(STEP_PHASES)
        self._stack = [_OTHER]
        self._last = _clock()
        self._start = self._last
        self._started = False
        self.index = 0
        self.sampling = False
        self.describing = False
        self._every = options.every or MIN_EVERY
        self._next_sample = options.warmup
        self._faults0 = 0
        self._plain: deque[int] = deque(maxlen=64)
        self._ratios: deque[float] = deque(maxlen=16)
        self.failed = ""
        self.generate = GenerateWatch(self.recorder)
        """transformers' ``generate()`` calls: each a step, split into its prefill and decode steps."""

    # -- installing ---------------------------------------------------------------------------

    def install(self) -> None:
        """Hook into torch: optimizers, backward, DataLoader iterators, zero_grad, gradient clipping, modules."""
        self._undo.append(register_optimizer_step_pre_hook(self._optimizer_pre).remove)
        self._undo.append(register_optimizer_step_post_hook(self._optimizer_post).remove)
        self._wrap(torch.autograd, "backward", _BACKWARD, "backward")
        from torch.utils.data import dataloader

        self._wrap(dataloader._BaseDataLoaderIter, "__next__", _DATA, "data")
        self._wrap(torch.optim.Optimizer, "zero_grad", _OPTIMIZER, "optimizer")
        import torch.nn.utils.clip_grad as clip_grad

        for owner in (clip_grad, torch.nn.utils):
            for name in ("clip_grad_norm_", "clip_grad_value_"):
                if hasattr(owner, name):
                    self._wrap(owner, name, _OPTIMIZER, "optimizer")
        self._discover = register_module_forward_pre_hook(self._global_pre)
        self.generate.install(self._generate_enter, lambda: None)
        self.kernels.install()
        run_eagerly(self._global_pre, self._root_pre, self._root_post, self._optimizer_pre, self._optimizer_post)
        self._undo.append(quiet_hooks_warning())

    def uninstall(self) -> None:
        """Remove every hook and wrapper (the program goes on as if never watched)."""
        self.recorder.stop()
        self.generate.uninstall()
        self.kernels.uninstall()
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()
        for handle in self._root_hooks:
            handle.remove()
        self._root_hooks.clear()
        if self._discover is not None:
            self._discover.remove()
            self._discover = None

    def _wrap(self, owner: Any, name: str, phase: int, mark: str) -> None:
        """Time calls of ``owner.name`` as ``phase``; an optimizer's method is owned by the optimizer, a function by
        its name (``clip_grad_norm_``)."""
        enter, leave = functools.partial(self._enter, phase, mark), functools.partial(self._exit, mark)  # no frame each
        self._undo.append(wrap_call(owner, name, enter, leave))

    # -- phases -------------------------------------------------------------------------------

    def _enter(self, phase: int, mark: str, owner: object = None) -> None:
        now = _clock()
        self._acc[self._stack[-1]] += now - self._last
        self._last = now
        self._stack.append(phase)
        if self.sampling:
            self.recorder.mark(mark, True, owner)

    def _exit(self, mark: str) -> None:
        now = _clock()
        self._acc[self._stack[-1]] += now - self._last
        self._last = now
        if len(self._stack) > 1:
            self._stack.pop()
        if self.sampling:
            self.recorder.mark(mark, False)

    # -- roots and forward ----------------------------------------------------------------------

    def _global_pre(self, module: torch.nn.Module, args: Any) -> None:
        if is_compiling():
            return
        if self._depth or any(module is r for r in self.roots):
            return  # inside a root, or a root whose own pre-hook runs next
        if self.namer.by_class(module):
            return  # a fresh one of a stateless root (a loss made every step): its class's root already
        self._guard(self._root_seen, module)
        # The hooks a call runs were chosen before this one added the root's: run its pre-hook now.
        self._root_pre(module, args)
        if not self.sampling and self._discover is not None:
            self._discover.remove()  # found: the roots' own hooks time the forward from now on
            self._discover = None

    def _root_seen(self, module: torch.nn.Module) -> None:
        if any(module is r for r in self.roots):
            return
        self.roots.append(module)
        self.namer.add_root(module)
        self._root_hooks.append(module.register_forward_pre_hook(self._root_pre))
        self._root_hooks.append(module.register_forward_hook(self._root_post, always_call=True))

    def _is_step_root(self, module: torch.nn.Module) -> bool:
        first = next((r for r in self.roots if not isinstance(r, torch.nn.modules.loss._Loss)), None)
        return module is first

    def _root_pre(self, module: torch.nn.Module, args: Any) -> None:
        if is_compiling():
            return
        if self._depth == 0:
            if self.generate.active:  # a forward inside generate(): a decode step, not a step of the program
                self.generate.forward(module)
            elif self.kind == "call" and self._is_step_root(module):
                self._guard(self._boundary)
                if self.sampling:  # recording began inside this call, after its hooks were chosen
                    self.recorder.enter(module, args)
            self._enter(_FORWARD, "forward")
        self._depth += 1

    def _root_post(self, module: torch.nn.Module, args: Any, out: Any) -> None:
        if is_compiling():
            return
        self._depth = max(0, self._depth - 1)
        if self._depth == 0 and self.generate.active:
            self.generate.cache(out)
        if self._depth == 0:
            self._exit("forward")

    def _generate_enter(self) -> None:
        """A ``generate()`` call starts: in a program without an optimizer, a step of its own."""
        if self.kind == "call":
            self._guard(self._boundary)

    # -- optimizer ------------------------------------------------------------------------------

    def _optimizer_pre(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if is_compiling():
            return
        self._enter(_OPTIMIZER, "optimizer", optimizer)

    def _optimizer_post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if is_compiling():
            return
        self._exit("optimizer")
        if self.primary is None:
            self.primary = optimizer
            if self.kind != "train":
                self.kind = "train"
                self.index = 0  # the calls counted so far were the start of the first training step
                self._next_sample = max(self._next_sample, self.options.warmup)
        if optimizer is self.primary:
            self._guard(self._boundary)

    # -- steps ----------------------------------------------------------------------------------

    def _boundary(self) -> None:
        """A step ends (and the next begins): send its figures, decide whether the next is sampled."""
        now = _clock()
        faults = _faults() - self._faults0 if self.sampling and resource else -1
        self._acc[self._stack[-1]] += now - self._last
        if self._started:
            sampled = self.sampling
            if sampled:
                self.recorder.stop()
            wall = now - self._start
            phases = tuple(self._acc)
            ops: list[tuple[int, int, str, int]] = []
            calls = self.generate.take()
            if sampled:
                ops = resolve_step(self.namer, self.recorder.take(), calls)
            nodes, roots = self.namer.take_new()
            generation = tuple(c.summary() for c in calls)
            step = Step(self.index, self.kind, wall, phases, sampled, self.describing, ops, nodes, roots,
                             start_ns=self._start, faults=faults, note=self.kernels.unsaid())  # fmt: skip
            self.send(dataclasses.replace(step, generation=generation) if generation else step)
            self._learn(wall, sampled, self.describing)
            self.index += 1
        self._started = True
        self.sampling = self.index >= self._next_sample and self.failed == ""
        if self.sampling:
            self._next_sample = self.index + self._every
            # A step that meets new nodes also notes their inputs and source lines (slower: left out of the figures).
            self.describing = not self.namer.known or self.namer.undescribed
            self.recorder.start(stacks=self.describing)
            if self._discover is None:  # new roots are found during sampled steps
                self._discover = register_module_forward_pre_hook(self._global_pre)
        else:
            self.describing = False
            if self._discover is not None and self.roots:
                self._discover.remove()
                self._discover = None
        # Everything above is the profiler's own cost: it belongs to no step.
        if self.sampling:
            self._faults0 = _faults()
        self._acc = [0] * len(STEP_PHASES)
        self._last = self._start = _clock()

    def _learn(self, wall: int, sampled: bool, describing: bool) -> None:
        """Adapt how often steps are sampled, from what a sampled step costs against an unsampled one.

        A step that also noted new nodes' inputs and source lines costs more than sampling does: it teaches nothing.
        """
        if describing:
            return
        if not sampled:
            self._plain.append(wall)
            return
        if self.options.every or len(self._plain) < 3:
            return
        self._ratios.append(wall / statistics.median(self._plain))
        if len(self._ratios) < FIRST_SAMPLES:
            return
        extra = max(0.0, statistics.median(self._ratios) - 1.0)
        self._every = min(MAX_EVERY, max(MIN_EVERY, math.ceil(extra / self.options.budget)))
        self._next_sample = self.index + 1 + self._every - 1

    def finish(self) -> None:
        """The program ends: send the step in progress (as unfinished) and the goodbye.

        A last ``generate()`` call that returned ends its step here (a call is long, and a program may make few).
        """
        if self.kind == "call" and self._started and any(c.t1 for c in self.generate.calls):
            self._guard(self._boundary)
        self.recorder.stop()
        self.send(Bye(self.index, self.failed))

    # -- do no harm -----------------------------------------------------------------------------

    def _guard(self, fn: Callable[..., None], *args: Any) -> None:
        """Run ``fn``; if it fails, say so once and turn the agent off: never raise into the program."""
        try:
            fn(*args)
        except Exception as e:
            if not self.failed:
                self.failed = f"the agent failed and stopped watching: {type(e).__name__}: {e}"
                if os.environ.get("FXTUI_DEBUG"):
                    traceback.print_exc()
                with contextlib.suppress(Exception):
                    self.uninstall()


_agent: Agent | None = None


def start_from_environment() -> None:
    """Connect to the collector named in the environment and install the agent (called by the boot)."""
    global _agent
    from fxtui.core.agent_contract import AGENT_ADDRESS, AGENT_KEY, AGENT_OPTIONS

    if _agent is not None:  # one agent a process, whoever asks again
        return
    try:
        sender = Sender.connect(os.environ[AGENT_ADDRESS], bytes.fromhex(os.environ.get(AGENT_KEY, "")))
    except (OSError, ValueError, EOFError) as e:
        print(f"fxtui: cannot reach the collector ({e}); the program runs unwatched", file=sys.stderr)
        return
    options = AgentOptions.decode(os.environ.get(AGENT_OPTIONS, ""))
    agent = Agent(sender.send, options)
    rank = os.environ.get("RANK")
    sender.send(
        Hello(
            os.getpid(),
            tuple(sys.argv),
            torch.__version__,
            torch.get_num_threads(),
            rank=int(rank) if rank and rank.isdigit() else None,
            world_size=int(os.environ.get("WORLD_SIZE", "1") or 1),
            host=socket.gethostname(),
        )
    )
    agent.install()
    _agent = agent


def finish() -> None:
    """The program ends: tell the collector and wait briefly for the last messages to leave."""
    agent = _agent
    if agent is None:
        return
    try:
        agent.finish()
        agent.uninstall()
    finally:
        sender = getattr(agent.send, "__self__", None)
        if isinstance(sender, Sender):
            sender.close()


def forked() -> None:
    """In a process the program forked: turn the agent off, quietly (:func:`fxtui.agent.on_torch_import._forked`).

    Its sender is already dead there (:mod:`fxtui.agent.sender`); the hooks it inherited go, so the child runs
    as it would without fxtui.
    """
    global _agent
    agent, _agent = _agent, None
    if agent is not None:
        with contextlib.suppress(Exception):
            agent.uninstall()
