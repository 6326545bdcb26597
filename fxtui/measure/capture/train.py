"""The ``train`` capture: one training step — forward, loss, backward, optimizer — as timed graphs.

TorchDynamo captures the model and its loss; AOTAutograd splits each captured graph into a
forward graph and the backward graph it derives (ATen operators both), and hands both to
fxtui's compilers, which keep them as :class:`~fxtui.measure.capture.captured.GraphPart` s
of phase ``forward`` and ``backward``. ``loss.backward()`` runs the backward graphs through
the autograd engine in the calling thread, so their nodes are timed like any other. The
optimizer's step and ``zero_grad`` form a small graph of their own (phase ``optimizer``),
so they are rows of the table rather than part of the unattributed remainder.

A backward node is charged to the forward module it differentiates (AOTAutograd records
it as ``fwd_nn_module_stack``); one with no forward module (the loss's gradient) belongs to
the root. A forward node knows its backward nodes through the autograd sequence number both
carry.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
import torch.nn.functional as F
import torch.utils._pytree as pytree

from fxtui.core.errors import FxtuiError
from fxtui.core.nodes import GraphBreak
from fxtui.measure.capture.captured import CapturedModel, GraphPart
from fxtui.measure.capture.dynamo import (
    CAPTURE_RUNS,
    failure_text,
    graph_break_of,
    quiet_dynamo,
    raise_recompile_limit,
    run_captures,
)
from fxtui.measure.capture.names import Namer
from fxtui.measure.inputs import Inputs

#: The optimizers ``--optimizer`` offers, with the learning rate each starts from. The rates are
#: small so that random labels do not drive a long session's loss to infinity.
OPTIMIZERS: dict[str, Callable[[list[torch.nn.Parameter]], torch.optim.Optimizer]] = {
    "sgd": lambda params: torch.optim.SGD(params, lr=1e-3),
    "adamw": lambda params: torch.optim.AdamW(params, lr=1e-4),
}
#: Marks the label of a backward node: ``layer1.0.conv1 · ∇convolution_backward``.
GRADIENT = "∇"
#: The attribute under which the profiled model sits inside the compiled step.
_MODEL = "model"


@dataclass(frozen=True)
class Loss:
    """How a training step turns the model's output into a scalar to differentiate."""

    kind: str
    """``output.loss``, ``cross-entropy`` or ``mean``."""
    description: str
    """What the header says: ``cross-entropy against fixed random labels (1000 classes)``."""
    classes: int = 0


def choose_loss(output: Any, name: str) -> Loss:
    """The loss for ``output``: its ``.loss``; cross-entropy for 2-D logits; else the mean of its first float output.

    Raises :class:`FxtuiError` when the output holds no floating-point tensor.
    """
    own = output.get("loss") if isinstance(output, dict) else getattr(output, "loss", None)
    if isinstance(own, torch.Tensor) and own.is_floating_point() and own.numel() == 1:
        return Loss("output.loss", "the model's own loss (output.loss)")
    if isinstance(output, torch.Tensor) and output.is_floating_point() and output.dim() == 2 and output.shape[1] > 1:
        classes = int(output.shape[1])
        return Loss("cross-entropy", f"cross-entropy against fixed random labels ({classes} classes)", classes)
    if first_float(output) is None:
        raise FxtuiError(f"{name} has no floating-point output to make a training loss from")
    return Loss("mean", "the mean of the first floating-point output")


def first_float(value: Any) -> torch.Tensor | None:
    """The first floating-point tensor in a nested output (tuples, lists, dicts, model outputs)."""
    leaves = pytree.tree_leaves(dict(value) if isinstance(value, dict) else value)
    return next((t for t in leaves if isinstance(t, torch.Tensor) and t.is_floating_point()), None)


class StepLoss(torch.nn.Module):
    """The model and its loss as one module, so TorchDynamo captures the loss in the forward graph."""

    def __init__(self, model: torch.nn.Module, loss: Loss, labels: torch.Tensor | None) -> None:
        super().__init__()
        self.model = model
        self.loss_kind = loss.kind
        if labels is not None:
            self.register_buffer("labels", labels, persistent=False)

    def forward(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        out = self.model(*args, **kwargs)
        if self.loss_kind == "output.loss":
            return out["loss"] if isinstance(out, dict) else out.loss
        if self.loss_kind == "cross-entropy":
            labels = self.labels
            assert isinstance(labels, torch.Tensor)
            return F.cross_entropy(out, labels)
        first = first_float(out)
        assert first is not None  # choose_loss checked it
        return first.float().mean()


class OptimizerStep(torch.nn.Module):
    """``optimizer.step()`` as a module, so the optimizer's update is a node of its own graph."""

    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        super().__init__()
        self.optimizer = optimizer

    def forward(self) -> None:
        self.optimizer.step()

    def extra_repr(self) -> str:
        return describe_optimizer(self.optimizer)


class ZeroGrad(torch.nn.Module):
    """``optimizer.zero_grad()`` as a module (gradients set to None, the optimizer's default)."""

    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        super().__init__()
        self.optimizer = optimizer

    def forward(self) -> None:
        self.optimizer.zero_grad()


def describe_optimizer(optimizer: torch.optim.Optimizer) -> str:
    """``SGD(lr=0.001)``."""
    return f"{type(optimizer).__name__}(lr={optimizer.defaults.get('lr')})"


def capture_train(
    module: torch.nn.Module, inputs: Inputs, *, name: str = "model", optimizer: str = "sgd"
) -> CapturedModel:
    """Capture one training step of ``module`` on ``inputs`` with ``optimizer`` (see :data:`OPTIMIZERS`).

    Puts the model in train mode, picks the loss from one eager forward run
    (:func:`choose_loss`), then runs :data:`CAPTURE_RUNS` compiled steps, which compile the
    forward and backward graphs. Raises :class:`FxtuiError` for what the user can fix.
    """
    import torch._dynamo
    from torch._dynamo.backends.common import aot_autograd

    if optimizer not in OPTIMIZERS:
        raise FxtuiError(f"unknown optimizer {optimizer!r}; choose one of {', '.join(OPTIMIZERS)}")
    started = time.perf_counter()
    module.train()
    params = [p for p in module.parameters() if p.requires_grad]
    if not params:
        raise FxtuiError(f"{name} has no parameter that requires grad: there is nothing to train")
    try:
        with torch.no_grad():
            probe = inputs.fresh().call(module)
    except Exception as e:
        raise FxtuiError(f"the model does not run on these inputs in train mode: {failure_text(e)}") from e
    loss = choose_loss(probe, name)
    labels = None
    if loss.kind == "cross-entropy":
        rows = int(probe.shape[0])
        labels = torch.randint(0, loss.classes, (rows,), generator=torch.Generator().manual_seed(0))
    step_loss = StepLoss(module, loss, labels)
    opt = OPTIMIZERS[optimizer](params)

    captured = CapturedModel(
        capture="train",
        root=module,
        call=lambda given: None,
        training=True,
        loss=loss.description,
        optimizer=describe_optimizer(opt),
    )
    namer = Namer(module, prefix=_MODEL)
    breaks: list[GraphBreak] = []
    gradients: dict[str, list[str]] = {}
    sealed = False

    def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Any:
        if sealed:
            captured.late_graphs += 1
            return _passthrough(gm, example_inputs)
        found = graph_break_of(gm)
        if found is not None:
            breaks.append(found)
        # AOTAutograd's graphs take the captured graph's inputs (parameters, buffers, the model's
        # inputs) in order; they keep the names and modules TorchDynamo gave them.
        inputs_named = [(namer.module_of(n)[0], namer.label(gm, n)) for n in gm.graph.nodes if n.op == "placeholder"]
        forward_nodes: dict[str, torch.fx.Node] = {}
        forward_names: dict[torch.fx.Node, str] = {}

        def plain_input(node: torch.fx.Node) -> tuple[str, str] | None:
            index = getattr(node.meta.get("desc"), "idx", None)
            return inputs_named[index] if isinstance(index, int) and index < len(inputs_named) else None

        def forward(fw: torch.fx.GraphModule, _: Sequence[Any]) -> Any:
            names = namer.name_graph(fw, placeholders=plain_input)
            forward_nodes.update({n.name: n for n in fw.graph.nodes})
            forward_names.update(zip(fw.graph.nodes, names, strict=True))
            return _boxed(_append(captured, fw, names, "forward"))

        def saved(node: torch.fx.Node) -> tuple[str, str] | None:
            named = plain_input(node)
            if named is not None:
                return named[0], f"saved {named[1]}"
            source = forward_nodes.get(node.name)
            if source is None:  # the gradient of the loss
                return "", f"{GRADIENT}loss"
            return namer.module_of(source)[0], f"saved {namer.label(_graph_module(source), source)}"

        def backward(bw: torch.fx.GraphModule, _: Sequence[Any]) -> Any:
            names = namer.name_graph(bw, stack="fwd_nn_module_stack", mark=GRADIENT, placeholders=saved)
            _link_gradients(forward_names, bw, names, gradients)
            return _boxed(_append(captured, bw, names, "backward"))

        return aot_autograd(fw_compiler=forward, bw_compiler=backward)(gm, example_inputs)

    raise_recompile_limit(torch._dynamo.config)
    with quiet_dynamo():
        compiled = torch.compile(step_loss, backend=backend, dynamic=False)
    update: list[Callable[[], Any]] = [_eager_update(opt)]

    def call(given: Inputs) -> torch.Tensor:
        value = given.call(compiled)
        value.backward()
        update[0]()
        return value.detach()

    captured.call = call
    captured.reference = lambda given: _eager_step(step_loss, opt, given)
    run_captures(
        captured,
        inputs,
        cannot=f"{name} cannot be captured for training",
        fails="a training step of the model fails on these inputs",
    )
    sealed = True
    if not any(p.phase == "backward" for p in captured.parts):
        raise FxtuiError(f"the loss of {name} does not depend on its parameters: nothing to differentiate")
    update[0] = _append(captured, *_optimizer_graph(opt, namer), "optimizer")
    captured.warm_runs = CAPTURE_RUNS
    captured.module_paths = namer.paths
    captured.module_classes = namer.classes
    captured.breaks = tuple(breaks)
    captured.gradients = {k: tuple(v) for k, v in gradients.items()}
    captured.seconds = time.perf_counter() - started
    return captured


def _append(captured: CapturedModel, gm: torch.fx.GraphModule, names: Sequence[str], phase: str) -> GraphPart:
    part = GraphPart(gm, names, captured.node_count, len(captured.parts), phase=phase)
    captured.parts.append(part)
    return part


def _boxed(part: GraphPart) -> Callable[[list[Any]], Any]:
    """AOTAutograd's calling convention: one list of arguments, cleared so saved tensors free early."""

    def run(args: list[Any]) -> Any:
        given = list(args)
        args.clear()
        return part(*given)

    run._boxed_call = True  # type: ignore[attr-defined]
    return run


def _passthrough(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Any:
    """A graph compiled after capture: run it through AOTAutograd as it is, untimed."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    def keep(graph: torch.fx.GraphModule, _: Sequence[Any]) -> Any:
        return make_boxed_func(graph.forward)

    return aot_autograd(fw_compiler=keep, bw_compiler=keep)(gm, example_inputs)


def _link_gradients(
    forward_names: dict[torch.fx.Node, str], bw: torch.fx.GraphModule, names: Sequence[str], out: dict[str, list[str]]
) -> None:
    """Forward node name → the backward nodes that differentiate it (same autograd sequence number)."""
    by_seq: dict[int, list[str]] = {}
    for node, name in forward_names.items():
        seq = node.meta.get("seq_nr")
        if node.op == "call_function" and isinstance(seq, int) and node.target is not operator.getitem:
            by_seq.setdefault(seq, []).append(name)
    for node, name in zip(bw.graph.nodes, names, strict=True):
        seq = node.meta.get("seq_nr")
        if node.op != "call_function" or not isinstance(seq, int) or node.target is operator.getitem:
            continue
        if node.meta.get("is_gradient_acc"):  # summing gradients that reach one tensor twice
            continue
        for forward_name in by_seq.get(seq, ()):
            out.setdefault(forward_name, []).append(name)


def _optimizer_graph(opt: torch.optim.Optimizer, namer: Namer) -> tuple[torch.fx.GraphModule, list[str]]:
    """A graph of two nodes, the optimizer's step and zero_grad, and their display names."""
    root = torch.nn.Module()
    # Not "step"/"zero_grad": nn.Module's own zero_grad method would shadow the submodule in forward.
    root.optimizer_step = OptimizerStep(opt)
    root.optimizer_zero_grad = ZeroGrad(opt)
    graph = torch.fx.Graph()
    graph.call_module("optimizer_step")
    graph.call_module("optimizer_zero_grad")
    graph.output(None)
    gm = torch.fx.GraphModule(root, graph)
    names = [f"{type(opt).__name__}.step", "zero_grad", "optimizer output"]
    for name in names:
        namer.paths[name] = ""
    return gm, names


def _eager_update(opt: torch.optim.Optimizer) -> Callable[[], None]:
    def update() -> None:
        opt.step()
        opt.zero_grad()

    return update


def _eager_step(step_loss: StepLoss, opt: torch.optim.Optimizer, given: Inputs) -> None:
    """The same training step without capture: what the user's own loop costs."""
    given.call(step_loss).backward()
    _eager_update(opt)()


def _graph_module(node: torch.fx.Node) -> torch.fx.GraphModule:
    """The GraphModule a node belongs to."""
    return node.graph.owning_module  # type: ignore[return-value]
