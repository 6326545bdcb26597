"""The edges of the figure modules, where mutation testing found nothing failing: ``fxtui diff`` of training steps,
the spread marks at their boundaries, the settings line, the filter parsers, a failed source's snapshot, and the
run figures' ranges as a report's metadata writes them."""

from __future__ import annotations

import dataclasses

import pytest

from fxtui.core.filters import parse_ops, parse_phases, parse_types
from fxtui.core.nodes import PHASES, NodeInfo, Spread
from fxtui.core.snapshot import PAGE_FAULT_WARNING, RunError, RunSpreads, Snapshot, State, page_fault_warning
from fxtui.report.data import SCHEMA, SCHEMA_VERSION, ReportData
from fxtui.report.diff import diff_reports
from fxtui.ui.demo.demo_source import make_snapshot, resnet18_graph, resnet18_medians

pytestmark = pytest.mark.unit


def report(rows: list[dict], modules: list[dict], **metadata: object) -> ReportData:
    meta = {"model": "m", "inputs": ["1×4"], "threads": 1, "runs": 5, "run_median_s": 1.0, "eager_median_s": 1.0}
    return ReportData.from_dict(
        {"schema": SCHEMA, "version": SCHEMA_VERSION, "metadata": {**meta, **metadata}, "rows": rows,
         "modules": modules}
    )  # fmt: skip


def row(name: str, median: float, path: str = "m", **spread: float) -> dict:
    return {"name": name, "module_path": path, "median_s": median, **spread}


def test_diff_of_training_steps_compares_each_module_s_forward_and_backward_apart() -> None:
    modules_before = [
        {"path": "", "inclusive_s": 9.0, "forward_s": 3.0, "backward_s": 6.0},
        {"path": "conv", "inclusive_s": 6.0, "forward_s": 2.0, "backward_s": 4.0},
    ]
    modules_after = [
        {"path": "", "inclusive_s": 7.0, "forward_s": 3.0, "backward_s": 4.0},
        {"path": "conv", "inclusive_s": 4.5, "forward_s": 2.5, "backward_s": 2.0},
    ]
    before = report([row("conv · convolution", 2.0, "conv")], modules_before, mode="train")
    after = report([row("conv · convolution", 2.5, "conv")], modules_after, mode="train")
    assert before.training and after.training
    d = diff_reports(before, after)
    got = {m.name: (m.module_path, m.before_s, m.after_s) for m in d.modules}
    assert got == {
        "": ("", 9.0, 7.0),
        "conv": ("conv", 6.0, 4.5),
        "conv (forward)": ("conv", 2.0, 2.5),
        "conv (backward)": ("conv", 4.0, 2.0),
    }  # the root's phases are the run's: not repeated
    assert [m.name for m in d.modules] == ["", "conv (backward)", "conv", "conv (forward)"]  # by |change|, then name
    assert d.nodes[0].module_path == "conv"
    inference = diff_reports(report([], modules_before), report([], modules_after))
    assert [m.name for m in inference.modules] == ["", "conv"]
    # a training step against an inference run: no phases to compare
    mixed = diff_reports(report([], modules_before, mode="train"), report([], modules_after))
    assert [m.name for m in mixed.modules] == ["", "conv"]


@pytest.mark.parametrize(
    ("before", "after", "within"),
    [
        # p25–p75 ranges that touch at one point overlap, either way round; apart they do not
        (row("n", 1.5, q25_s=1.0, q75_s=2.0), row("n", 2.5, q25_s=2.0, q75_s=3.0), True),
        (row("n", 2.5, q25_s=2.0, q75_s=3.0), row("n", 1.5, q25_s=1.0, q75_s=2.0), True),
        (row("n", 1.5, q25_s=1.0, q75_s=1.9), row("n", 2.5, q25_s=2.0, q75_s=3.0), False),
        # a run's fastest-to-p90 range covers the other's median at either end
        (row("n", 2.0, min_s=1.0, p90_s=2.2), row("n", 1.0), True),
        (row("n", 1.0, min_s=0.9, p90_s=2.0), row("n", 2.0), True),
        (row("n", 1.0), row("n", 2.0, min_s=1.0, p90_s=2.2), True),
        (row("n", 1.0, min_s=0.9, p90_s=1.9), row("n", 2.0), False),
        # a run saved without ranges is no evidence, even beside a range that starts at zero
        (row("n", 0.0), row("n", 0.0), False),
        (row("n", 5.0), row("n", 0.5, q25_s=0.0, q75_s=3.0), False),
        (row("n", 0.5, q25_s=0.0, q75_s=3.0), row("n", 5.0), False),
    ],
)
def test_a_change_is_within_the_spread_exactly_when_the_ranges_say_so(before: dict, after: dict, within: bool) -> None:
    assert diff_reports(report([before], []), report([after], [])).nodes[0].within_spread is within


def test_settings_that_differ_are_named_lists_joined_by_commas() -> None:
    d = diff_reports(report([], [], inputs=["1×4", "2×8"]), report([], [], inputs=["1×4"], threads=2))
    assert d.differences == ["inputs 1×4, 2×8 → 1×4", "threads 1 → 2"]


def test_the_filter_parsers_split_on_commas_only_and_name_what_they_do_not_know() -> None:
    assert parse_ops(" call_module , call_function,") == {"call_module", "call_function"}
    with pytest.raises(ValueError) as unknown_op:
        parse_ops("call_module call_function")
    assert str(unknown_op.value) == (
        "unknown op type 'call_module call_function'; choose from placeholder, get_attr, call_function, "
        "call_method, call_module, output"
    )
    assert parse_types(" Conv2d , add,,") == {"Conv2d", "add"}
    assert parse_types("Conv2d add") == {"Conv2d add"}
    assert parse_phases("backward, forward") == {"backward", "forward"}
    with pytest.raises(ValueError) as unknown_phase:
        parse_phases("forward backward")
    assert str(unknown_phase.value) == f"unknown phase 'forward backward'; choose from {', '.join(PHASES)}"


def running(seq: int = 1) -> Snapshot:
    return make_snapshot(resnet18_graph(), resnet18_medians(), seq=seq, runs=200)


def test_a_failed_source_s_snapshot_keeps_the_figures_and_says_its_own_state_and_message() -> None:
    before = running()
    # A source that failed after tracing sends no graph …
    lost = Snapshot(None, State.ERROR, seq=2, message="gone", error=RunError("boom", "conv1", 3))
    shown = lost.shown_after(before)
    assert shown.graph is before.graph and shown.nodes is before.nodes and shown.modules is before.modules
    assert (shown.runs, shown.run_median_s, shown.eager_median_s) == (200, before.run_median_s, before.eager_median_s)
    assert (shown.state, shown.seq, shown.message, shown.error) == (State.ERROR, 2, "gone", lost.error)
    # … or the graph and no numbers (its process died): the figures stay.
    died = Snapshot(before.graph, State.ERROR, seq=3, message="ended")
    kept = died.shown_after(before)
    assert kept.nodes is before.nodes and kept.message == "ended" and kept.state is State.ERROR
    # Otherwise a snapshot is shown as it is.
    newer = running(seq=4)
    assert newer.shown_after(before) is newer
    assert lost.shown_after(None) is lost
    assert lost.shown_after(Snapshot(None, State.LOADING)) is lost
    empty_error = Snapshot(before.graph, State.ERROR, seq=5)
    assert empty_error.shown_after(Snapshot(before.graph, State.RUNNING)) is empty_error  # nothing to keep
    paused = Snapshot(before.graph, State.PAUSED, seq=6)
    assert paused.shown_after(before) is paused  # not a failure: a reset's empty snapshot is shown empty


def test_run_spreads_are_written_as_p25_median_p75_and_read_back() -> None:
    spreads = RunSpreads(run=Spread(2.0, 1.0, 3.0), overhead=Spread(1.1, 1.0, 1.2))
    written = spreads.to_dict()
    assert written == {
        "run_range_s": [1.0, 2.0, 3.0],
        "eager_range_s": None,
        "overhead_range": [1.0, 1.1, 1.2],
        "fidelity_range": None,
    }
    assert RunSpreads.from_dict(written) == spreads
    assert RunSpreads.from_dict({"run_range_s": [1.0, 2.0], "fidelity_range": "x"}) == RunSpreads()


def test_page_faults_are_a_warning_from_the_threshold_on_naming_the_nodes_that_pay_most() -> None:
    assert page_fault_warning(None) == "" and page_fault_warning(PAGE_FAULT_WARNING - 1, "glibc") == ""
    nodes = [
        NodeInfo(f"n{i}", i, "call_module", "t", "T", "", "", page_faults=faults)
        for i, faults in enumerate([10, 0, 4000, None, 2500, 3000])
    ]
    assert page_fault_warning(2048.0, "glibc", nodes) == (
        "2,048 page faults per run (~8 MB touched afresh, most by n2 (4,000), n5 (3,000), n4 (2,500)): the allocator "
        "returns large buffers to the OS and the nodes that refill them pay for it; fxtui's --malloc keep (the "
        "default on the command line; fxtui.keep_freed_memory() from Python) or a caching allocator (jemalloc or "
        "tcmalloc via LD_PRELOAD) removes this"
    )
    assert page_fault_warning(float(PAGE_FAULT_WARNING), "keep") == (
        "1,000 page faults per run (~4 MB touched afresh): the model maps new memory every run even though freed "
        "memory is kept, and its nodes pay for it"
    )
    snapshot = dataclasses.replace(running(), faults_per_run=2048.0, malloc="system")
    assert snapshot.fault_warning.startswith("2,048 page faults per run (~8 MB touched afresh): the allocator")


def test_the_page_fault_warning_counts_4_kib_pages_and_says_how_to_keep_memory() -> None:
    said = page_fault_warning(2**20)  # a million pages of 4,096 bytes each
    assert "1,048,576 page faults per run (~4096 MB touched afresh): " in said
    assert "fxtui's --malloc keep" in said and "even though freed memory is kept" not in said
    assert "even though freed memory is kept" in page_fault_warning(2**20, malloc="keep")
