"""The interleaved A/B measurement of a what-if: the original and its variant, pair by pair.

Each side is either a :class:`~fxtui.measure.session.Session` of its own (a step is one
profiled and one uninstrumented run, so both whole-run and per-node figures come out of
the same runs), or, for a variant that is not a captured model (``compile``), a plain call timed
uninstrumented. The two sides alternate which goes first from pair to pair, so neither
systematically inherits the other's warm caches; the session's own statistics are not
touched.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from fxtui.core.errors import FxtuiError
from fxtui.core.findings import ModuleChange, NodeChange, WhatIf
from fxtui.measure.inputs import Inputs
from fxtui.measure.whatif.changes import Context, Variant
from fxtui.measure.whatif.outputs import output_difference

if TYPE_CHECKING:
    from fxtui.measure.capture.captured import CapturedModel
    from fxtui.measure.session import Session

#: Pairs measured by default, and at least (unless a side fails).
MAX_PAIRS = 20
MIN_PAIRS = 3
#: Once at least MIN_PAIRS are done, stop when the pairs have taken this long: a variant that
#: is many times slower (bfloat16 on a CPU without bfloat16 instructions: 6.5 s a run for
#: resnet18) would otherwise keep the session away from its own runs for minutes.
BUDGET_S = 30.0


class Cancelled(Exception):
    """The measurement was stopped from outside (the session is ending)."""


class Side(Protocol):
    """One side of the comparison."""

    def run_once(self) -> bool:
        """Run once (profiled and uninstrumented for a session); False when the run failed."""
        ...

    def warm_up(self) -> None:
        """One step whose figures are not kept."""
        ...

    def whole_run(self) -> tuple[float, float, float] | None:
        """p25, median and p75 of the uninstrumented runs so far, in seconds."""
        ...


class SessionSide:
    """A side timed by a session of its own: whole run and per node."""

    def __init__(self, session: Session, context: Context) -> None:
        self.session = session
        self.context = context

    def run_once(self) -> bool:
        with self.context():
            return self.session.run_pair()

    def warm_up(self) -> None:
        with self.context():
            self.session.warm_up(1)  # the check run at construction was the profiled warm-up

    def whole_run(self) -> tuple[float, float, float] | None:
        session = self.session
        notes = session.captured.notes
        whole = notes.whole_run() if notes is not None else None
        if whole is not None:  # generate(): whole calls, not the prompt-and-one-token a run counts as
            return whole
        summary = session.samples.stats(leave_out_disturbed=not session.keep_disturbed)
        if summary.eager is None:
            return None
        return summary.eager.q25, summary.eager.median, summary.eager.q75

    @property
    def error(self) -> str:
        error = self.session.last_error
        return error.message if error is not None else ""


class CallSide:
    """A side timed as one uninstrumented call per step (no nodes)."""

    def __init__(
        self, call: Callable[[Inputs], Any], inputs: Inputs, captured: CapturedModel, context: Context
    ) -> None:
        self.call, self.inputs, self.captured, self.context = call, inputs, captured, context
        self.times: list[float] = []
        self.error = ""

    def run_once(self) -> bool:
        given = self.inputs.fresh()
        with self.context(), self.captured.running():
            try:
                started = time.perf_counter_ns()
                self.call(given)
                self.times.append((time.perf_counter_ns() - started) / 1e9)
            except Exception as e:
                self.error = f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}"
                return False
        return True

    def warm_up(self) -> None:
        self.run_once()
        self.times.clear()

    def whole_run(self) -> tuple[float, float, float] | None:
        if not self.times:
            return None
        if len(self.times) == 1:
            return self.times[0], self.times[0], self.times[0]
        q = statistics.quantiles(self.times, n=4, method="inclusive")
        return q[0], statistics.median(self.times), q[2]


def measure(
    session: Session,
    name: str,
    variant: Variant,
    *,
    pairs: int = MAX_PAIRS,
    budget_s: float = BUDGET_S,
    progress: Callable[[str], None] = lambda message: None,
    cancelled: Callable[[], bool] = lambda: False,
) -> WhatIf:
    """Measure ``variant`` against ``session``'s model, up to ``pairs`` interleaved pairs.

    Raises :class:`Cancelled` when ``cancelled()`` turns true between pairs. A variant whose
    runs fail is a result with ``error`` set, never an exception.
    """
    original = session.captured.independent()  # a second handle on the same graphs, nothing shared
    a: SessionSide | CallSide
    b: SessionSide | CallSide
    progress(f"what-if {name}: checking the changed model")
    try:
        if variant.captured is not None:
            a = SessionSide(_session(session, original, session.inputs), contextlib.nullcontext)
            with variant.context():
                b_session = _session(session, variant.captured, variant.inputs)
            b = SessionSide(b_session, variant.context)
        else:
            assert variant.call is not None
            a = CallSide(original.run, session.inputs, original, contextlib.nullcontext)
            b = CallSide(variant.call, variant.inputs, original, variant.context)
    except FxtuiError as e:
        return WhatIf(name, variant.title, error=f"the changed model does not run: {e}", setup_s=variant.setup_s)
    tokens: dict[str, Any] = {}
    if original.notes is not None:  # generate(): the greedy tokens compared, the prefill's logits
        from fxtui.measure.whatif.on_generate import compare_generations

        abs_diff, rel_diff, tokens, note = compare_generations(session, original, variant)
    else:
        abs_diff, rel_diff, note = _outputs(session, original, variant)
    progress(f"what-if {name}: warming up")
    for side in (a, b):
        side.warm_up()
    started = time.perf_counter()
    done = 0
    for k in range(max(pairs, 1)):
        if cancelled():
            raise Cancelled
        progress(f"what-if {name}: pair {k + 1} of {pairs}")
        ok = [side.run_once() for side in ((a, b) if k % 2 == 0 else (b, a))]
        if all(ok):
            done += 1
        elif k + 1 - done >= max(pairs // 2, 2):
            break  # one side keeps failing
        if done >= min(MIN_PAIRS, pairs) and time.perf_counter() - started > budget_s:
            if done < pairs:
                note = _join(note, f"stopped after {done} of {pairs} pairs: the {budget_s:.0f} s budget of a what-if")
            break
    before, after = a.whole_run(), b.whole_run()
    if before is None or after is None:
        failed = b if after is None else a
        who = "the changed model" if failed is b else "the original"
        return WhatIf(name, variant.title, error=f"{who} failed every run: {failed.error}", setup_s=variant.setup_s)
    nodes, modules = _changes(a, b)
    return WhatIf(
        name=name,
        title=variant.title,
        before_s=before[1],
        before_p25_s=before[0],
        before_p75_s=before[2],
        after_s=after[1],
        after_p25_s=after[0],
        after_p75_s=after[2],
        pairs=done,
        max_abs_diff=abs_diff,
        max_rel_diff=rel_diff,
        setup_s=variant.setup_s,
        nodes=nodes,
        modules=modules,
        note=note,
        **tokens,
    )


def _session(session: Session, captured: CapturedModel, inputs: Inputs) -> Session:
    """A session of its own for one side (construction runs it once: the check run)."""
    from fxtui.measure.session import Session

    graph = session.graph
    return Session(
        captured,
        inputs,
        model=graph.model,
        input_desc=graph.inputs,
        dtype=graph.dtype,
        window=MAX_PAIRS * 2,
        clock_overhead_ns=session.timer.clock_overhead_ns,
        keep_disturbed=session.keep_disturbed,  # both sides judged as the session's own steps are
    )


def _outputs(session: Session, original: CapturedModel, variant: Variant) -> tuple[float | None, float | None, str]:
    """The output difference of one run of each on the same fresh inputs, and a note when there is none."""
    if original.training:
        return None, None, "outputs not compared: every training step changes the parameters"
    try:
        with original.running():
            a = original.run(session.inputs.fresh())
        with variant.context(), original.running():
            given = variant.inputs.fresh()
            b = variant.captured.run(given) if variant.captured is not None else variant.call(given)  # type: ignore[misc]
    except Exception as e:
        return None, None, f"outputs not compared: a run raised {type(e).__name__}"
    abs_diff, rel_diff = output_difference(a, b)
    if abs_diff is None:
        return None, None, "outputs not compared: no floating-point output of the same shape on both sides"
    return abs_diff, rel_diff, ""


def _changes(
    a: SessionSide | CallSide, b: SessionSide | CallSide
) -> tuple[tuple[NodeChange, ...], tuple[ModuleChange, ...]]:
    """Per node and per module, before → after, largest absolute change first."""
    if not (isinstance(a, SessionSide) and isinstance(b, SessionSide)):
        return (), ()
    before, after = a.session.snapshot(), b.session.snapshot()
    compiled = b.session.captured.capture == "compiled"  # kernels against graph nodes: no node is on both sides
    paths = {n.name: n.module_path for n in (*b.session.graph.nodes, *a.session.graph.nodes)}
    runnable = {
        n.name for n in (*a.session.graph.nodes, *b.session.graph.nodes) if n.op not in ("placeholder", "output")
    }
    names = [n for n in dict.fromkeys((*before.nodes, *after.nodes)) if n in runnable]
    nodes = [
        NodeChange(
            n,
            paths.get(n, ""),
            before.nodes[n].median_s if n in before.nodes else None,
            after.nodes[n].median_s if n in after.nodes else None,
        )
        for n in names
    ]
    # A generation's module times are per call (prefill) and per token (decode): compared apart, never added.
    fields = (
        [("", "inclusive_s")] if before.generation is None else [(" (prefill)", "prefill_s"), (" (decode)", "decode_s")]
    )
    modules = [
        ModuleChange(
            (p or "(root)") + label if label else p,
            getattr(before.modules[p], field) if p in before.modules else None,
            getattr(after.modules[p], field) if p in after.modules else None,
        )
        for p in dict.fromkeys((*before.modules, *after.modules))
        for label, field in fields
    ]
    return (
        () if compiled else tuple(sorted(nodes, key=lambda c: -abs(c.change_s))),
        tuple(sorted(modules, key=lambda c: -abs(c.change_s))),
    )


def _join(note: str, more: str) -> str:
    return f"{note}; {more}" if note else more
