"""The per-op timer's names: each op under its module, a loop's calls one set of nodes, code outside modules named."""

from __future__ import annotations

import gc

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from fxtui.core.op_nodes import EagerNode, OpTime
from fxtui.ops.namer import OpNamer
from fxtui.ops.recorder import OpRecorder
from fxtui.ops.step_walk import LOSS, SCRIPT

pytestmark = pytest.mark.unit


class Unrolled(nn.Module):
    """A cell called once per time step inside the model's own forward, as time-series and RNN examples do."""

    def __init__(self, hidden: int = 16) -> None:
        super().__init__()
        self.hidden = hidden
        self.cell = nn.LSTMCell(1, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = c = torch.zeros(x.shape[0], self.hidden)
        outputs = []
        for t in range(x.shape[1]):
            h, c = self.cell(x[:, t : t + 1], (h, c))
            outputs.append(self.out(h))
        return torch.cat(outputs, 1)


def step(namer: OpNamer, fn) -> tuple[list[OpTime], list[EagerNode]]:  # type: ignore[no-untyped-def]
    recorder = OpRecorder()
    recorder.start()
    try:
        fn()
    finally:
        recorder.stop()
    ops = namer.resolve(recorder.take())
    nodes, _ = namer.take_new()
    return ops, nodes


def test_a_cell_unrolled_over_time_is_one_set_of_nodes_whatever_the_length() -> None:
    counts = []
    for length in (5, 40):
        model, namer = Unrolled(), OpNamer()
        namer.add_root(model)
        x = torch.randn(3, length)
        ops, nodes = step(namer, lambda model=model, x=x: model(x).sum().backward())
        counts.append(len(nodes))
        cell = [n for n in nodes if n.module_path == "cell" and n.phase == "forward"]
        assert cell and all(n.occurrence == 1 or n.label != cell[0].label for n in cell[:1])
        per_node: dict[int, int] = {}
        for node, *_ in ops:
            per_node[node] = per_node.get(node, 0) + 1
        first_cell_op = next(n.id for n in nodes if n.module_path == "cell" and n.phase == "forward")
        assert per_node[first_cell_op] == length  # one node, called at every time step
    assert counts[0] == counts[1]  # the model's structure, not the loop's length


def test_the_loss_outside_the_model_and_the_scripts_own_ops_are_named() -> None:
    model, namer = nn.Sequential(nn.Linear(8, 4)), OpNamer()
    namer.add_root(model)

    def train_step() -> None:
        x = torch.randn(5, 8)  # the script makes its batch
        loss = F.cross_entropy(model(x), torch.tensor([0, 1, 2, 3, 0]))
        loss.backward()
        loss.item()

    _, nodes = step(namer, train_step)
    where = {(n.module_path, n.phase, n.label) for n in nodes}
    assert (SCRIPT, "other", "randn") in where
    # the loss before its backward is the step's forward; its .item() after the backward is the script's phase
    assert (LOSS, "forward", "_log_softmax") in where and (LOSS, "backward", "∇nll_loss_backward") in where
    assert (LOSS, "other", "_local_scalar_dense") in where
    assert ("0", "backward", "∇mm") in where  # the model's gradient, under its module


def test_a_loss_in_a_step_without_backward_is_the_scripts_phase() -> None:
    """An evaluation: the loss of an output computed under no_grad is not a forward (nothing differentiates it)."""
    model, namer = nn.Sequential(nn.Linear(8, 4)), OpNamer()
    namer.add_root(model)

    def evaluate() -> None:
        with torch.no_grad():
            F.cross_entropy(model(torch.randn(5, 8)), torch.tensor([0, 1, 2, 3, 0])).item()

    _, nodes = step(namer, evaluate)
    loss = {n.phase for n in nodes if n.module_path == LOSS}
    assert loss == {"other"}


def test_a_model_saved_and_loaded_again_keeps_its_root_and_nodes() -> None:
    import copy

    namer = OpNamer()
    model = nn.Sequential(nn.Linear(8, 4), nn.ReLU())
    namer.add_root(model)
    _, first = step(namer, lambda: model(torch.randn(2, 8)))  # noqa: F821 (deleted below, after its last call)
    reloaded = copy.deepcopy(model)  # as torch.load(f) gives it back: another object of the same structure
    del model
    gc.collect()
    assert namer.add_root(reloaded) == 0 and namer.take_new()[1] == []  # the same root, not a second one
    _, again = step(namer, lambda: reloaded(torch.randn(2, 8)))
    assert first and not again  # the same nodes
    twin = copy.deepcopy(reloaded)  # while the other lives: a model of its own
    assert namer.add_root(twin) == 1


def test_the_namer_keeps_no_module_alive() -> None:
    import weakref

    namer = OpNamer()
    model = nn.Linear(4, 4)
    namer.add_root(model)
    step(namer, lambda: model(torch.randn(1, 4)))  # noqa: F821 (deleted below, after its last call)
    alive = weakref.ref(model)
    del model
    gc.collect()
    assert alive() is None and namer.roots == []


def test_a_describing_step_names_each_ops_source_line_and_inputs_and_its_caches_stay_bounded() -> None:
    """The texts are made once per user line and input layout (an unrolled loop repeats a few hundred of each a
    million times); what each op carries is what it would carry made afresh, and the caches never outgrow their
    bound whatever the shapes."""
    from fxtui.ops import recorder as rec
    from fxtui.ops.records import OpCall

    model = Unrolled()
    recorder = OpRecorder()
    recorder.start(stacks=True)
    try:
        model(torch.randn(2, 6)).sum().backward()
    finally:
        recorder.stop()
    calls = [r for r in recorder.take() if isinstance(r, OpCall)]
    forward = [c for c in calls if c.grad_fn is None and c.source]
    assert forward and all(c.source.startswith("test_namer.py:") for c in forward)
    assert any("self.cell(x[:, t : t + 1], (h, c))" in c.source for c in forward)
    addmm = [c for c in calls if "addmm" in str(c.op) and c.inputs]
    assert addmm and all(i.endswith(")") and " float32 stride (" in i for c in addmm for i in c.inputs[1:])
    for n in range(1, rec._CACHE_ENTRIES + 100):  # shapes that change every step
        rec._args_text((torch.empty(n, 1),))
    assert len(rec._TENSOR_TEXT) <= rec._CACHE_ENTRIES
    assert rec._args_text((torch.empty(3, 2),)) == ("3×2 float32 stride (2, 1)",)


def test_a_tensor_made_at_the_id_of_a_roots_dead_output_is_the_scripts() -> None:
    """The loss rule follows tensors by id (the native timer: by TensorImpl address), and a freed tensor's id is
    soon another's (char_gpt's evaluation calls: its next batch's indices made where the last loss had been). An op
    outside every module that reads nothing of a root's makes a tensor of the script's, whatever lived at its id
    before; the ops that read that tensor are the script's too, not the root's loss."""
    from fxtui.ops.records import ModuleEnter, ModuleExit, OpCall

    model, namer = nn.Linear(2, 2), OpNamer()
    namer.add_root(model)
    aten = torch.ops.aten
    ops = namer.resolve(
        [
            ModuleEnter(model, 0, 0),
            ModuleExit(model, 1, 0, False, (7,)),  # the root returns the tensor of id 7
            OpCall(aten.sum.default, 2, 3, None, torch.Size([]), flow=((7,), (8,))),  # its loss
            OpCall(aten.randint.low, 4, 5, None, torch.Size([3]), flow=((), (7,))),  # made at id 7, once freed
            OpCall(aten.unbind.int, 6, 7, None, None, flow=((7,), (9, 10, 11))),  # reads the new one
        ]
    )
    nodes = {n.id: n for n in namer.take_new()[0]}
    assert [(nodes[node].module_path, nodes[node].label) for node, *_ in ops] == [
        (LOSS, "sum"),
        (SCRIPT, "randint"),
        (SCRIPT, "unbind"),
    ]
