"""The native per-op timer (:mod:`fxtui.ops.native_recorder`) against the dispatch mode's, on the same steps.

The library is built once per session (a compiler process: the e2e tier). Each model follows a pattern of the
corpus (tests/programs): an MLP with a functional loss, a VAE's loss made of functions outside the model, a
char-level GPT block, an LSTMCell unrolled inside ``forward``, one ReLU module reused at two shapes, a loss module
given a model's output, an evaluation under ``no_grad``. Both timers record the same step of the same model; their
node names and op counts must agree. The dispatch mode also records ``detach`` ops that torch runs only because a
Python mode is on (it detaches what the mode returns and saves for backward): the native timer has none, and the
comparison leaves them out.
"""

from __future__ import annotations

import gc
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fxtui
from fxtui.core.op_sums import OpArrays, sums_of
from fxtui.ops import native_build, native_steps
from fxtui.ops.namer import OpNamer
from fxtui.ops.native_recorder import NativeRecorder
from fxtui.ops.native_steps import node_sums
from fxtui.ops.recorder import OpRecorder
from fxtui.ops.records import OpCall
from tests.program_runs import run_fxtui
from tests.python_twins import run_python_twins

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="session")
def lib() -> Any:
    """The native library, built for this torch once (a few seconds to a minute on a busy machine)."""
    try:
        native_build.build()
    except RuntimeError as e:
        pytest.skip(f"the native timer cannot be built here: {e}")
    loaded = native_build.load()
    assert loaded is not None, native_build.why_not()
    return loaded


Step = Callable[[Any], None]


def _mlp() -> tuple[torch.nn.Module, Step]:
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    x, y = torch.randn(3, 8), torch.tensor([0, 1, 2])

    def step(rec: Any) -> None:
        rec.mark("data", True)
        xb = x * 1.0
        rec.mark("data", False)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(m(xb), y)
        rec.mark("backward", True)
        loss.backward()
        rec.mark("backward", False)
        rec.mark("optimizer", True, opt)
        opt.step()
        rec.mark("optimizer", False)

    return m, step


class _Vae(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.mu, self.logvar = torch.nn.Linear(20, 12), torch.nn.Linear(12, 4), torch.nn.Linear(12, 4)
        self.fc3, self.fc4 = torch.nn.Linear(4, 12), torch.nn.Linear(12, 20)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.fc4(torch.relu(self.fc3(z))))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h = torch.relu(self.fc1(x))
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return self.decode(z), mu, logvar


def _vae() -> tuple[torch.nn.Module, Step]:
    m = _Vae()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    x = torch.rand(5, 20)

    def step(rec: Any) -> None:
        opt.zero_grad()
        recon, mu, logvar = m(x)
        bce = torch.nn.functional.binary_cross_entropy(recon, x, reduction="sum")
        kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = bce + kld
        rec.mark("backward", True)
        loss.backward()
        rec.mark("backward", False)
        rec.mark("optimizer", True, opt)
        opt.step()
        rec.mark("optimizer", False)
        with torch.no_grad():
            m.decode(torch.randn(2, 4))

    return m, step


class _Block(torch.nn.Module):
    def __init__(self, d: int = 16, vocab: int = 11) -> None:
        super().__init__()
        self.emb, self.ln = torch.nn.Embedding(vocab, d), torch.nn.LayerNorm(d)
        self.qkv, self.out, self.head = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d), torch.nn.Linear(d, vocab)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.emb(idx)
        q, k, v = self.qkv(self.ln(x)).split(x.shape[-1], dim=-1)
        att = (q @ k.transpose(-2, -1)) / 4.0
        mask = torch.tril(torch.ones(idx.shape[1], idx.shape[1], dtype=torch.bool))
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        x = x + self.out(att @ v)
        return self.head(x)


def _gpt() -> tuple[torch.nn.Module, Step]:
    m = _Block()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    idx, tgt = torch.randint(0, 11, (2, 6)), torch.randint(0, 11, (2, 6))

    def step(rec: Any) -> None:
        logits = m(idx)
        loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), tgt.view(-1))
        rec.mark("backward", True)
        loss.backward()
        rec.mark("backward", False)
        rec.mark("optimizer", True, opt)
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        rec.mark("optimizer", False)

    return m, step


class _Seq(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell, self.linear = torch.nn.LSTMCell(1, 8), torch.nn.Linear(8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = c = torch.zeros(x.size(0), 8)
        outs = []
        for t in range(x.size(1)):
            h, c = self.cell(x[:, t : t + 1], (h, c))
            outs.append(self.linear(h))
        return torch.cat(outs, dim=1)


def _lstm() -> tuple[torch.nn.Module, Step]:
    m = _Seq()
    x, y = torch.randn(2, 5), torch.randn(2, 5)
    loss_fn = torch.nn.MSELoss()

    def step(rec: Any) -> None:
        m.zero_grad()
        loss = loss_fn(m(x), y)
        rec.mark("backward", True)
        loss.backward()
        rec.mark("backward", False)

    return m, step


class _Reused(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.relu = (
            torch.nn.Conv2d(1, 4, 3, padding=1),
            torch.nn.Conv2d(4, 2, 3, padding=1),
            torch.nn.ReLU(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.b(self.relu(self.a(x))))


def _reused() -> tuple[torch.nn.Module, Step]:
    m = _Reused()
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(2, 1, 6, 6), torch.randn(2, 2, 6, 6)
    loss_fn = torch.nn.MSELoss()

    def step(rec: Any) -> None:
        opt.zero_grad()
        loss = loss_fn(m(x), y)
        rec.mark("backward", True)
        loss.backward()
        rec.mark("backward", False)
        rec.mark("optimizer", True, opt)
        opt.step()
        rec.mark("optimizer", False)

    return m, step


MODELS = {"mlp": _mlp, "vae": _vae, "gpt": _gpt, "lstm": _lstm, "reused": _reused}
#: Ops torch runs only under a Python dispatch mode (what the mode returns and saves is detached).
_MODE_ONLY = {"detach", "∇detach"}


def _names(namer: OpNamer, ops: list[tuple[int, int, str, int]], nodes: dict[int, Any]) -> Counter[tuple[Any, ...]]:
    for n in namer.take_new()[0]:
        nodes.setdefault(n.id, n)
    return Counter(
        (n.phase, n.root, n.module_path, n.label, n.occurrence)
        for node, *_ in ops
        if (n := nodes[node]).label not in _MODE_ONLY
    )


def _shapes(namer_nodes: dict[int, Any]) -> dict[tuple[Any, ...], str]:
    return {(n.phase, n.root, n.module_path, n.label, n.occurrence): n.shape for n in namer_nodes.values()}


def _run(recorder: OpRecorder, model: torch.nn.Module, step: Step, steps: int = 3, describe_first: bool = False) -> Any:
    namer = OpNamer()
    namer.add_root(model)
    nodes: dict[int, Any] = {}
    names = []
    for i in range(steps):
        recorder.start(stacks=describe_first and i == 0)
        step(recorder)
        recorder.stop()
        names.append(_names(namer, namer.resolve(recorder.take()), nodes))
    return names, nodes


#: How the library passes a recorded op's inner ops by (``fx_inner``): each must record the same ops.
INNER_WAYS = {"callback": 1, "rf-off": 0, "lazy": 2}


@pytest.fixture(params=sorted(INNER_WAYS))
def inner(lib: Any, request: pytest.FixtureRequest) -> Any:
    """The library, passing inner ops by in one way for the test (the default's restored after)."""
    default = lib.fx_inner(-1)
    assert lib.fx_inner(INNER_WAYS[request.param]) == INNER_WAYS[request.param]
    yield lib
    lib.fx_inner(default)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_native_and_mode_timers_name_the_same_nodes_and_count_the_same_ops(inner: Any, name: str) -> None:
    torch.manual_seed(0)
    model, step = MODELS[name]()
    step(OpRecorder())  # warm: lazy state made once (optimizer moments), outside both recordings
    by_mode, _ = _run(OpRecorder(), model, step)
    native = NativeRecorder(inner)
    by_native, _ = _run(native, model, step)
    for k, (mode_step, native_step) in enumerate(zip(by_mode, by_native, strict=True)):
        assert mode_step == native_step, (name, k, mode_step - native_step, native_step - mode_step)
    assert sum(by_native[-1].values()) > 10


def _profiled_ops(run: Callable[[], Any]) -> list[str]:
    """The ops torch.profiler records while ``run`` runs (its own RecordFunction callbacks)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        run()
    return [e.name for e in prof.events()]


def test_a_native_step_leaves_record_function_as_it_found_it(inner: Any) -> None:
    """Inner ops are passed by with RecordFunction or the callback switched off for the op's length, and an op that
    raises ends too: after the step (one op raised in it) the next op is recorded, RecordFunction is on, and
    torch.profiler sees every op, inner ops too."""
    native = NativeRecorder(inner, hooks=False)
    a, b = torch.randn(3, 4), torch.randn(5, 6)
    native.start()
    with pytest.raises(RuntimeError):
        torch.mm(a, b)  # shapes that do not fit: the op raises inside its kernel
    torch.mm(a, a.t())
    native.stop()
    names = [r.op.name for r in native.take() if type(r) is OpCall]
    assert names[-2:] == ["aten::t", "aten::mm"], names  # t's inner transpose and as_strided are part of it
    profiled = _profiled_ops(lambda: torch.mm(a, a.t()))
    assert "aten::transpose" in profiled and "aten::mm" in profiled, profiled


@pytest.mark.parametrize("name", ["mlp", "reused"])
def test_native_steps_keep_the_shapes_the_describing_step_noted(lib: Any, name: str) -> None:
    torch.manual_seed(0)
    model, step = MODELS[name]()
    step(OpRecorder())
    _, by_mode = _run(OpRecorder(), model, step, steps=1)
    native = NativeRecorder(lib)
    _, by_native = _run(native, model, step, steps=3, describe_first=True)
    mode_shapes, native_shapes = _shapes(by_mode), _shapes(by_native)
    assert native_shapes == mode_shapes


def test_gradient_accumulation_is_charged_to_the_parameters_module(lib: Any) -> None:
    """An AccumulateGrad node has no useful sequence number: its ops go to the module owning the parameter."""
    model, step = MODELS["mlp"]()
    native = NativeRecorder(lib)
    _, nodes = _run(native, model, step, steps=2)
    accumulated = [n for n in nodes.values() if n.phase == "backward" and n.label == "∇detach"]
    # each Linear's weight and bias (set_to_none gradients: stolen, a detach each)
    assert sorted((n.root, n.module_path) for n in accumulated) == [(0, "0"), (0, "0"), (0, "2"), (0, "2")]


class _Walks:
    """Counts the namer's walks over per-op records (a step resolved from its rows takes none)."""

    def __init__(self, namer: OpNamer) -> None:
        self.walk, self.count = namer._walk, 0
        namer._walk = self  # type: ignore[method-assign]

    def __call__(self, records: Any) -> Any:
        self.count += 1
        return self.walk(records)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_step_resolved_from_its_rows_gives_what_the_long_way_gives(lib: Any, name: str) -> None:
    """Differential: each native step is resolved by two namers, one walking its merged records, one from its rows
    (:mod:`fxtui.ops.native_steps`): the same node, time, shape and start per op, the same nodes named; the rows'
    way is taken from the second step of a shape, and a step of another shape goes the long way, once."""
    torch.manual_seed(0)
    model, step = MODELS[name]()
    step(OpRecorder())
    native = NativeRecorder(lib)
    long, rows = OpNamer(), OpNamer()
    for namer in (long, rows):
        namer.add_root(model)
    walks = _Walks(rows)
    for k in range(5):
        native.start()
        if k == 3:  # another shape: one op more, outside every module
            torch.ones(1).add_(1)
        step(native)
        native.stop()
        (taken,) = native.take_step()
        by_records = long.resolve(taken.records())
        by_rows = rows.resolve([taken])
        assert by_rows == by_records, (name, k)
        assert long.take_new()[0] == rows.take_new()[0]
        assert len(by_rows) == len(taken.rows) - sum(taken.op(i).namespace == "profiler" for i in taken.rows[:, 0])
    # the long way: the first step and the step of another shape (the step after it has the first one's again)
    assert walks.count == 2, walks.count


class _Loop(torch.nn.Module):
    """One module call of ``n`` ops (the ops grow, the module calls do not)."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(4, 4))

    def forward(self, x: torch.Tensor, n: int) -> torch.Tensor:
        for _ in range(n):
            x = torch.mm(x, self.weight)
        return x


def test_a_sampled_steps_ops_add_no_object_the_garbage_collector_tracks(lib: Any) -> None:
    """While a native step runs each op writes integers into a preallocated buffer, and after it the rows are kept
    as arrays and resolved from them: the program's collector tracks as many new objects after 1,000 ops as after
    10, both while the step runs and once it is resolved (the ops as sent are tuples of numbers and a shape's text,
    which the collector stops tracking at its first pass over the young)."""
    model = _Loop()
    x = torch.randn(2, 4)
    native = NativeRecorder(lib)
    namer = OpNamer()

    def growth(ops: int) -> tuple[int, int]:
        gc.collect()
        # Every object the collector tracks so far set aside (not listed, not walked): what is listed from here on
        # is what the step added. The test process's heap (a whole suite's modules) made each look take seconds.
        gc.freeze()
        before = gc.get_objects()  # kept: no new object takes an id of one of them
        known = {id(o) for o in before}
        native.start()
        with torch.no_grad():
            model(x, ops)
        during = sum(id(o) not in known for o in gc.get_objects())
        native.stop()
        resolved = namer.resolve(native.take_step())
        gc.collect(0)
        assert len(resolved) == ops
        return during, sum(id(o) not in known for o in gc.get_objects())

    try:
        for ops in (10, 1000):
            growth(ops)
            growth(ops)  # warm: names interned, buffers made; the long way once per shape, then from the rows
        small, large = growth(10), growth(1000)
    finally:
        gc.unfreeze()
    assert large[0] - small[0] < 50, (small, large)
    assert large[1] - small[1] < 50, (small, large)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(depth=st.integers(1, 4), width=st.integers(2, 12), batch=st.integers(1, 5), repeat=st.integers(1, 3))
def test_per_node_sums_equal_the_sum_of_raw_op_times(lib: Any, depth: int, width: int, batch: int, repeat: int) -> None:
    """Each step's ops are one per raw row, and per node (Σ op by op, and ``np.bincount`` over them) they add up to
    the rows' raw times: the first step resolved the long way, the second from its rows."""
    layers: list[torch.nn.Module] = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.Tanh()]
    model = torch.nn.Sequential(*layers)
    x = torch.randn(batch, width)
    native, namer = NativeRecorder(lib), OpNamer()
    for _ in range(2):
        native.start()
        for _ in range(repeat):
            model(x).square().mean().backward()
        native.stop()
        (taken,) = native.take_step()
        ops = namer.resolve([taken])
        per_node: Counter[int] = Counter()
        for node, ns, _shape, _start in ops:
            per_node[node] += ns
        nodes, sums = node_sums(ops)
        assert dict(zip(nodes.tolist(), sums.tolist(), strict=True)) == dict(per_node)
        arrays = namer.resolve_arrays([taken])  # a known shape now: the rows as arrays, no tuple per op
        assert isinstance(arrays, OpArrays) and sums_of(arrays) == sums_of(ops)  # the agent's message either way
        assert sum(per_node.values()) == int((taken.rows[:, 2] - taken.rows[:, 1]).sum())
        assert len(ops) == len(taken.rows)


def test_a_step_past_the_op_limit_stops_and_says_so(lib: Any) -> None:
    native = NativeRecorder(lib, hooks=False)
    native.limit = 100
    native._rows = None  # buffers made at the new limit
    native.start()
    x = torch.zeros(3)
    for _ in range(300):
        x = x + 1
    native.stop()
    records = native.take()
    assert native.overflowed == 301 - 100  # zeros and 300 adds
    assert sum(1 for r in records if type(r) is OpCall) == 100


def _watched(timer: str) -> Any:
    torch.manual_seed(0)
    _model, step = MODELS["gpt"]()
    with fxtui.watch(warmup=1, every=2, timer=timer) as w:
        for _ in range(9):
            step(_Unmarked())
    return w.report()


class _Unmarked:
    """The agent marks phases itself."""

    def mark(self, *args: Any) -> None:
        pass


def test_a_watched_program_timed_natively_names_its_nodes_as_the_dispatch_mode_does(lib: Any) -> None:
    by_mode, by_native = _watched("mode"), _watched("native")
    assert "a C++ RecordFunction callback" in by_native.header()
    assert "a C++ RecordFunction callback" not in by_mode.header()
    assert json.loads(by_native.to_json())["metadata"]["program"]["timer"] == "native"
    names = [{r.name for r in report.rows if "detach" not in r.name} for report in (by_mode, by_native)]
    assert names[0] == names[1], (names[0] - names[1], names[1] - names[0])


def test_a_watched_programs_native_steps_resolve_from_their_rows(lib: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the agent (``fxtui.watch``): after the first, each native step of the training loop is resolved from
    its rows, none merged into records."""
    resolved: list[Any] = []
    walked: list[Any] = []
    resolve = native_steps.resolve_arrays  # the agent's way: a known step's rows stay arrays up to its message

    def counted(namer: OpNamer, step: Any, walk: Any) -> Any:
        resolved.append(step)
        return resolve(namer, step, lambda records: walked.append(step) or walk(records))

    monkeypatch.setattr(native_steps, "resolve_arrays", counted)
    _watched("native")
    assert len(resolved) >= 3 and len(walked) == 1, (len(resolved), len(walked))


def test_fxtui_run_timer_native_times_a_corpus_program_natively(lib: Any) -> None:
    """The option end to end: the program's own output as under python, its nodes timed by the C++ callback."""
    root = Path(__file__).resolve().parents[1]
    command = (str(root / "tests" / "programs" / "reused_module.py"), "--epochs", "1", "--batches", "8")
    # The plain run forked from an interpreter that has imported torch (its start is most of a run this short).
    (plain,) = run_python_twins([(*command, "--test-batches", "2")], root, preload=("torch._dynamo",))
    run = run_fxtui(
        (*command, "--test-batches", "2"), root, ("--warmup-steps", "1", "--sample-every", "2", "--timer", "native")
    )
    assert run.status == 0, run.stderr[-2000:]
    assert run.program_lines() == plain.program_lines()
    assert run.meta["program"]["timer"] == "native"
    assert "a C++ RecordFunction callback: --timer native" in run.stdout
    assert run.rows


def _fake_compiler(folder: Path, body: str) -> Path:
    """A compiler that runs ``body`` with the file after ``-o`` in ``$out`` (no C++ is compiled)."""
    fake = folder / "fake-c++"
    fake.write_text(f'#!/bin/sh\nwhile [ $# -gt 0 ] && [ "$1" != "-o" ]; do shift; done\nout="$2"\n{body}\n')
    fake.chmod(0o755)
    return fake


@pytest.mark.parametrize("succeeds", [True, False], ids=["built", "failed"])
def test_a_build_in_the_background_puts_the_library_in_place_or_says_why_it_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, succeeds: bool
) -> None:
    """What a first run on a machine starts (``start_build``: a detached shell at nice 19): the compiler's output
    renamed into place when it ends well; its message kept as the failure note, which later runs read, when not."""
    body = 'echo library > "$out"' if succeeds else 'echo "op_timer.cpp:1: no such header" >&2; exit 1'
    monkeypatch.setenv("CXX", str(_fake_compiler(tmp_path, body)))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(native_build, "_child", None)
    monkeypatch.setattr(native_build, "_load_error", "")
    assert native_build.start_build()
    assert native_build.start_build()  # one build at a time: the running one is said to run
    child = native_build._child
    assert child is not None and child.wait(300) == 0  # at nice 19: slow to get a core on a busy machine
    target = native_build.library_path()
    failed = target.with_suffix(".failed")
    if succeeds:
        assert target.read_text() == "library\n" and not failed.exists() and native_build.why_not() == ""
    else:
        assert not target.exists() and "no such header" in failed.read_text()
        assert native_build.why_not() == f"its build failed ({failed})"
        assert not native_build.start_build()  # later runs do not try again
    assert not list(native_build.cache_dir().glob("*.tmp*"))


def test_a_module_reused_at_two_shapes_keeps_each_calls_shape_in_native_steps(lib: Any) -> None:
    """The native timer reads no output shapes: each call of a node in its steps has the shape that call had in the
    step that described it. One ReLU after a 4-channel and a 2-channel convolution: two shapes a step, forward and
    backward, as the dispatch mode reads them (the collector lists such a node's shapes from these)."""
    torch.manual_seed(0)
    model, step = MODELS["reused"]()
    step(OpRecorder())
    namer = OpNamer()
    namer.add_root(model)
    native = NativeRecorder(lib)
    relu: set[int] = set()
    shapes = []
    for i in range(4):
        native.start(stacks=i == 0)  # the first describes (the dispatch mode), the others are native
        step(native)
        native.stop()
        assert native.ran == "native" or i == 0
        ops = namer.resolve(native.take_step())
        relu |= {n.id for n in namer.take_new()[0] if n.label in ("relu", "∇threshold_backward")}
        shapes.append([shape for node, _ns, shape, _start in ops if node in relu])
    assert shapes[0] == ["2×4×6×6", "2×2×6×6", "2×2×6×6", "2×4×6×6"], shapes[0]  # forward twice, then backward
    assert shapes[1:] == [shapes[0]] * 3  # resolved the long way once, then from the rows
