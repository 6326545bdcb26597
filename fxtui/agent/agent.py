"""The agent inside a program run under ``fxtui run``: it finds steps of each kind and their phases, and times a
sample of them per node.

Installed right after the program imports torch (:mod:`fxtui.agent.boot`). Everything it adds is
torch's, never the program's: a replacement of ``torch.nn.Module.__call__`` that sees calls at
the top (:mod:`fxtui.agent.module_calls`: about 0.5 µs per module call, measured there), global
optimizer step hooks, and wrappers of ``torch.autograd.backward``, the DataLoader iterator's
``__next__``, ``Optimizer.zero_grad``, ``Module.zero_grad`` and gradient clipping. The program's
modules, optimizers, tensors and data loaders carry nothing of fxtui's: they pickle, deep-copy,
save and export as without it.

Where steps begin and end, and of which kind — training steps, evaluation calls, ``generate()``
calls — is :mod:`fxtui.agent.steps`'s; how often each kind is sampled, :mod:`fxtui.agent.pace`'s.
A sampled step is timed per ATen op (:class:`~fxtui.ops.recorder.OpRecorder`), charged to its
module (:class:`~fxtui.ops.namer.OpNamer`); its records are resolved right after it, outside every
step's time. All that leaves the program's threads is a small message per step, handed to a
sender thread (:mod:`fxtui.agent.sender`), which drops messages rather than ever block the program.

Nothing here raises into the program: a failing hook is counted, reported once, and the agent
turns itself off.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch
from torch.compiler import is_compiling
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from fxtui.agent.cpu_wait import ThreadWait
from fxtui.agent.generate_hook import GenerateWatch, resolve_step
from fxtui.agent.model_methods import called_by_its_model
from fxtui.agent.module_calls import ModuleCalls
from fxtui.agent.owners import owner_of
from fxtui.agent.sender import Sender
from fxtui.agent.step_recording import StepRecording, step_recorder
from fxtui.agent.steps import DATA, OPTIMIZER, ClosedStep, StepModel
from fxtui.agent.wrappers import wrap_call
from fxtui.core.op_nodes import OpTime
from fxtui.core.op_sums import RAW_EVERY_S, RAW_OPS, NodeSums, OpArrays, sums_of
from fxtui.core.step_aside import PROFILER
from fxtui.ops import mode_context
from fxtui.ops.dynamo_skip import run_eagerly
from fxtui.ops.kernels import CompiledKernels
from fxtui.ops.namer import OpNamer
from fxtui.wire.agent_contract import AgentOptions
from fxtui.wire.agent_messages import Bye, Hello, Step
from fxtui.wire.rank_sample import times_ops

_clock = time.perf_counter_ns


class Agent:
    """Watches the program's steps; ``send(message)`` gets each step's figures (never blocks).

    ``alive()`` says whether whoever reads the messages is still there: when it is not, no step is sampled any
    more (the program runs on, unwatched).
    """

    def __init__(
        self, send: Callable[[Any], None], options: AgentOptions | None = None, alive: Callable[[], bool] | None = None
    ) -> None:
        self.send = send
        self.alive = alive or (lambda: True)
        self.options = options = options or AgentOptions()
        self.namer = OpNamer()
        self.kernels = CompiledKernels()
        """The kernels of the program's compiled code, timed on sampled steps."""
        self.recorder = step_recorder(options.timer, self.kernels)
        self.calls = ModuleCalls(self._root_call, self._inner_call)
        self.recording = StepRecording(self.recorder, self.calls)
        self.model = StepModel(_clock, self._emit, self.recording, options, describe=self._describe)
        self.recording.kind = lambda: self.model.current.kind if self.model.current is not None else ""
        self.cpu_wait = ThreadWait()
        self.model.wait_clock = self.cpu_wait.read
        self.generate = GenerateWatch(self.recorder)
        """transformers' ``generate()`` calls: each a step, split into its prefill and decode steps."""
        self._undo: list[Callable[[], None]] = []
        self._thread = threading.get_ident()
        self._described_kinds: set[str] = set()
        self._raw_at: dict[str, float] = {}  # per kind: when a sampled step last sent its ops raw (monotonic s)
        """Kinds whose latest sampled step met no node left undescribed (the next one need not describe)."""
        self.failed = ""

    # -- installing ---------------------------------------------------------------------------

    def install(self) -> None:
        """Hook into torch: module calls, optimizers, backward, DataLoader iterators, zero_grad, gradient clipping.

        Steps are the installing thread's (the program's main thread): what other threads do — a prefetching
        thread iterating a DataLoader, a logger calling a model — is left alone.
        """
        model = self.model
        self._thread = threading.get_ident()
        self.calls.thread = self._thread
        self.calls.install()
        self._undo.append(self.calls.uninstall)
        self._undo.append(register_optimizer_step_pre_hook(self._optimizer_pre).remove)
        self._undo.append(register_optimizer_step_post_hook(self._optimizer_post).remove)
        self._wrap(torch.autograd, "backward", lambda who: model.backward_enter(), model.backward_exit)
        from torch.utils.data import dataloader

        self._phase(dataloader._BaseDataLoaderIter, "__next__", DATA, "data", raised=model.no_batch)
        self._phase(torch.optim.Optimizer, "zero_grad", OPTIMIZER, "optimizer")
        self._phase(torch.nn.Module, "zero_grad", OPTIMIZER, "optimizer")
        import torch.nn.utils.clip_grad as clip_grad

        for owner in (clip_grad, torch.nn.utils):
            for name in ("clip_grad_norm_", "clip_grad_value_"):
                if hasattr(owner, name):
                    self._phase(owner, name, OPTIMIZER, "optimizer")
        self.generate.install(self._guarded(model.generate_enter), self._guarded(model.generate_exit))
        self._watch_profilers()
        self._wrap(torch.autograd.grad_mode.inference_mode, "__exit__", self._inference_exit, _after_inference_exit)
        self.kernels.install()
        # The frames of fxtui's own bookkeeping, called from the module calls and the optimizer's hooks: TorchDynamo
        # must neither compile them nor trace them into the program's graphs.
        run_eagerly(self._optimizer_pre, self._optimizer_post, self._root_of, self._fail, model.root_enter,
                    model.root_exit, self.recorder.enter, self.recorder.exit, self.generate.forward,
                    self.generate.cache)  # fmt: skip

    def uninstall(self) -> None:
        """Remove every hook and wrapper (the program goes on as if never watched)."""
        with contextlib.suppress(Exception):
            self.recorder.stop()
            mode_context.settle()  # a mode left quiet by a step that ended elsewhere: popped if it can be here
        self.calls.recording = False
        self.generate.uninstall()
        self.kernels.uninstall()
        for undo in reversed(self._undo):
            with contextlib.suppress(Exception):
                undo()
        self._undo.clear()
        self.cpu_wait.close()

    def _watch_profilers(self) -> None:
        """The program's own profiler wins: before torch prepares or enables it, fxtui stops timing the step (its
        mode off the stack, so the profiler counts each op once) and sets the step aside.

        ``torch.profiler.profile`` and ``torch.autograd.profiler.profile`` call these names of
        ``torch.autograd.profiler``'s namespace (``_prepare_profiler`` when a schedule's warm-up begins,
        ``_enable_profiler`` when it records); the legacy profiler calls ``_enable_profiler_legacy``. Steps that
        begin while a profiler is on are not timed either (:meth:`~fxtui.agent.step_recording.StepRecording.aside`).
        """
        from torch.autograd import profiler, profiler_legacy

        def stand_aside(who: object) -> None:
            mode = self.recorder.mode or mode_context.lingering_mode()  # timing now, or left quiet
            self.model.set_aside(PROFILER)
            if mode is not None:
                mode_context.pop_for_profiler(mode)

        for owner, name in ((profiler, "_prepare_profiler"), (profiler, "_enable_profiler"),
                            (profiler_legacy, "_enable_profiler_legacy")):  # fmt: skip
            if hasattr(owner, name):
                self._wrap(owner, name, stand_aside, _nothing)

    def _inference_exit(self, block: object) -> None:
        """An ``inference_mode`` block ends: if fxtui's mode was pushed in it, recording stops here, still inside.

        Leaving the block restores the thread's keys as they were before it, without the ``Python`` key: a mode
        pushed inside would be dead after it. So an evaluation step begun in the block (``with
        torch.inference_mode(): model(x)`` per batch, or a whole validation loop) is timed up to the block's end;
        the program's Python after it, up to the next call, is the step's unrecorded rest.
        """
        mode = self.recorder.mode
        if mode is not None and mode_context.pushed_here(mode):
            self.recorder.stop()
            self.calls.recording = False

    def _wrap(
        self,
        owner: Any,
        name: str,
        enter: Callable[[object], None],
        leave: Callable[[], None],
        raised: Callable[[], None] | None = None,
    ) -> None:
        guarded_raised = self._guarded(raised) if raised is not None else None
        self._undo.append(wrap_call(owner, name, self._guarded(enter), self._guarded(leave), guarded_raised))

    def _phase(self, owner: Any, name: str, phase: int, mark: str, raised: Callable[[], None] | None = None) -> None:
        """Time calls of ``owner.name`` as ``phase``; a method's owner is the object it is called on (the optimizer),
        a function's its name (``clip_grad_norm_``)."""
        enter = functools.partial(self.model.phase_enter, phase, mark)  # a partial: no Python frame of its own
        leave = functools.partial(self.model.phase_exit, phase, mark)
        self._wrap(owner, name, enter, leave, raised)

    def _guarded(self, fn: Callable[..., None]) -> Callable[..., None]:
        """``fn``, never raising into the program: a failure turns the agent off (:meth:`_fail`)."""

        def guarded(*args: Any) -> None:
            if self.failed or threading.get_ident() != self._thread:
                return
            try:
                mode_context.settle()  # a mode left on the stack in another context: popped once back in its own
                fn(*args)
            except Exception as e:
                self._fail(e)

        run_eagerly(guarded)
        return guarded

    # -- module calls ---------------------------------------------------------------------------

    def _root_call(self, module: torch.nn.Module, call: Callable[..., Any], args: tuple[Any, ...], kwargs: Any) -> Any:
        """A module called at the top: a root's forward begins (a step may begin or end here)."""
        if self.failed:
            return call(module, *args, **kwargs)
        try:
            mode_context.settle()
            root, steps = self._root_of(module)
            part = steps and called_by_its_model(self.namer, module)
            self.model.root_enter(root, torch.is_grad_enabled(), module.training, steps, part)
            if self.generate.active:  # a forward inside generate(): the prefill or a decode step
                self.generate.forward(module)
            self.recorder.enter(module, args)
        except Exception as e:
            self._fail(e)
            return call(module, *args, **kwargs)
        self.calls.inside = True
        out = None
        try:
            out = call(module, *args, **kwargs)
        finally:
            self.calls.inside = False
            try:
                self.recorder.exit(module, out)
                self.model.root_exit()
                mode_context.settle()
            except Exception as e:
                self._fail(e)
        if self.generate.active:
            try:
                self.generate.cache(out)
            except Exception as e:
                self._fail(e)
        return out

    def _inner_call(self, module: torch.nn.Module, call: Callable[..., Any], args: tuple[Any, ...], kwargs: Any) -> Any:
        """A module called inside a root's call while a step is recorded: the per-op timer's module stack."""
        recorder = self.recorder
        recorder.enter(module)
        try:
            return call(module, *args, **kwargs)
        finally:
            recorder.exit(module)

    def _root_of(self, module: torch.nn.Module) -> tuple[int, bool]:
        """The root a module called at the top belongs to (found, with the model that owns it, the first time), and
        whether its calls make steps (a loss module's do not)."""
        known = self.namer.known_module(module)
        if known is None:
            owner = owner_of(module, sys._getframe(4))  # from the program's frame that called it
            self.namer.add_root(owner if owner is not None else module)
            known = self.namer.known_module(module) or (self.namer.add_root(module), "")
        return known[0], not isinstance(module, torch.nn.modules.loss._Loss)

    # -- optimizers -----------------------------------------------------------------------------

    def _optimizer_pre(self, optimizer: Any, args: Any, kwargs: Any) -> tuple[Any, Any] | None:
        if is_compiling() or self.failed or threading.get_ident() != self._thread:
            return None
        try:
            mode_context.settle()
            self.model.optimizer_enter(optimizer, type(optimizer).__name__)
            return self._closure(args, kwargs)
        except Exception as e:
            self._fail(e)
            return None

    def _optimizer_post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if is_compiling() or self.failed or threading.get_ident() != self._thread:
            return
        try:
            mode_context.settle()
            self.model.optimizer_exit(optimizer)
        except Exception as e:
            self._fail(e)

    def _closure(self, args: Any, kwargs: Any) -> tuple[Any, Any] | None:
        """``step(closure)``: the closure passed on wrapped, so that its forward, loss and backward are the model's."""
        # ``args`` are the step's own: the optimizer first, then the closure when it is passed by position.
        closure = kwargs.get("closure") if kwargs else None
        positional = closure is None and len(args) > 1 and callable(args[1])
        closure = args[1] if positional else closure
        if closure is None:
            return None
        model = self.model

        def measured_closure(*a: Any, **k: Any) -> Any:
            model.closure_enter()
            try:
                return closure(*a, **k)
            finally:
                model.closure_exit()

        if positional:
            return (args[0], measured_closure, *args[2:]), kwargs
        return args, {**kwargs, "closure": measured_closure}

    # -- steps ----------------------------------------------------------------------------------

    def _describe(self, kind: str) -> bool:
        """A sampled step of ``kind`` notes its nodes' inputs and source lines: the kind's first, and the next after
        one that met nodes not noted yet (a code path taken late)."""
        return kind not in self._described_kinds

    def _emit(self, step: ClosedStep) -> None:
        """A step ended: resolve its records (a sampled one), send its figures."""
        if self.model.enabled and not self.alive():
            self.model.enabled = False  # the collector is gone: nothing is sampled any more
        calls = self.generate.take() if step.kind == "generate" else []
        sums: NodeSums | None = None
        faults = -1
        if step.sampled:
            ops: list[OpTime] | OpArrays = resolve_step(self.namer, step.records, calls)
            faults = self.recording.take_faults()
            # Per node, with the first ops raw: the per-op tuples (if any) die here, not in the sender's queue.
            sums = sums_of(ops, raw=RAW_OPS if self._raw_due(step.kind) else 0)
            del ops
            if self.namer.all_described(sums.node_ids().tolist()):
                self._described_kinds.add(step.kind)
            else:
                self._described_kinds.discard(step.kind)
        nodes, roots = self.namer.take_new()
        self.send(
            Step(
                step.index,
                step.kind,
                step.wall_ns,
                step.phases_ns,
                step.sampled,
                step.describing,
                [],
                nodes,
                roots,
                start_ns=step.start,
                generation=tuple(c.summary() for c in calls),
                faults=faults,
                note=self.kernels.unsaid(),
                warm=step.warm,
                holds=step.holds,
                restart=step.restart,
                aside=step.aside,
                wait_ns=step.wait_ns,
                timer=getattr(self.recorder, "ran", "mode") if step.sampled else "",
                sums=sums,
                timer_why=self._timer_why() if step.sampled else "",
                after_ns=_clock() - step.closing_ns if step.sampled and step.closing_ns else 0,
            )
        )

    def _raw_due(self, kind: str) -> bool:
        """Whether a sampled step of ``kind`` sends its first ops raw, for the trace: the kind's first, then one
        every :data:`~fxtui.core.op_sums.RAW_EVERY_S` (the steps between send their per-node sums alone)."""
        now = time.monotonic()
        if now - self._raw_at.get(kind, -RAW_EVERY_S) < RAW_EVERY_S:
            return False
        self._raw_at[kind] = now
        return True

    def _timer_why(self) -> str:
        """Why the native timer, asked for, did not time the latest step: its library is not built yet (the first run
        on this machine, this torch or this fxtui) or cannot be (no compiler, a failed build); ``""`` when it ran, was
        not asked for, or the step was the mode's by design (a describing step, a ``generate()`` call)."""
        if not hasattr(self.recorder, "take_step") or getattr(self.recorder, "lib", None) is not None:
            return ""  # the dispatch mode's recorder (--timer mode), or the native one with its library loaded
        from fxtui.ops.native_build import pending, why_not

        return why_not() or pending()

    def finish(self) -> None:
        """The program ends: an evaluation call still open is sent, then the goodbye."""
        if not self.failed:
            try:
                self.model.finish()
            except Exception as e:
                self._fail(e)
        with contextlib.suppress(Exception):
            self.recorder.stop()
        self.send(Bye(sum(p.index for p in self.model.paces.values()), self.failed))

    # -- do no harm -----------------------------------------------------------------------------

    def _fail(self, error: Exception) -> None:
        """Say once that the agent failed, and turn it off: never raise into the program."""
        if self.failed:
            return
        self.failed = f"the agent failed and stopped watching: {type(error).__name__}: {error}"
        if os.environ.get("FXTUI_DEBUG"):
            traceback.print_exc()
        with contextlib.suppress(Exception):
            self.uninstall()


def _nothing() -> None:
    """After a call nothing is to be done."""


def _after_inference_exit() -> None:
    mode_context.after_inference_exit()


_agent: Agent | None = None


def agent_of_rank(
    send: Callable[[Any], None], options: AgentOptions, alive: Callable[[], bool], rank: int | None, world: int
) -> Agent:
    """The agent of ``rank`` in a job of ``world`` ranks. A rank outside a large job's sample
    (:mod:`fxtui.wire.rank_sample`) samples no step: its steps' wall time, phases and wait for a CPU still go to the
    collector, but no op of its program is timed and no native timer is built for it."""
    timed = times_ops(rank, world)
    if not timed:
        options = dataclasses.replace(options, timer="mode")
    agent = Agent(send, options, alive=alive)
    agent.model.enabled = timed
    return agent


def start_from_environment() -> None:
    """Connect to the collector named in the environment and install the agent (called by the boot)."""
    global _agent
    from fxtui.wire.agent_contract import AGENT_ADDRESS, AGENT_KEY, AGENT_OPTIONS

    if _agent is not None:  # one agent a process, whoever asks again
        return
    try:
        sender = Sender.connect(os.environ[AGENT_ADDRESS], bytes.fromhex(os.environ.get(AGENT_KEY, "")))
    except (OSError, ValueError, EOFError) as e:
        print(f"fxtui: cannot reach the collector ({e}); the program runs unwatched", file=sys.stderr)
        return
    options = AgentOptions.decode(os.environ.get(AGENT_OPTIONS, ""))
    rank_text = os.environ.get("RANK")
    rank = int(rank_text) if rank_text and rank_text.isdigit() else None
    world = int(os.environ.get("WORLD_SIZE", "1") or 1)
    agent = agent_of_rank(sender.send, options, lambda: getattr(sender, "alive", True), rank, world)
    sender.send(
        Hello(
            os.getpid(),
            tuple(sys.argv),
            torch.__version__,
            torch.get_num_threads(),
            rank=rank,
            world_size=world,
            host=socket.gethostname(),
            node=int(node) if (node := os.environ.get("GROUP_RANK", "")).isdigit() else None,
        )
    )
    agent.install()
    _agent = agent
    with contextlib.suppress(Exception):  # a job across nodes: its collectors find each other in the job's store
        from fxtui.agent import job_store

        job_store.start(os.environ[AGENT_ADDRESS], bytes.fromhex(os.environ.get(AGENT_KEY, "")))


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
