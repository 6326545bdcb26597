"""Every header line and table row fits the terminal: figures glued to their words, a whole torchrun command, a
table whose columns' floors are wider than the terminal."""

from __future__ import annotations

import pytest

from fxtui.report.table_fit import Col, fit_table, wrap_line

pytestmark = pytest.mark.unit


def test_a_line_of_glued_figures_or_one_long_command_wraps_within_the_width() -> None:
    fidelity = (
        "fidelity   0.904 = Σ node medians ÷ uninstrumented median; each step's own ratio 0.907 (0.907–1.024) "
        "12 of 278 s 1.115 (0.959–1.492)"
    )
    command = (
        "program    python -m torch.distributed.run --nnodes 2 --nproc-per-node 2 "
        "--rdzv-endpoint=/a/very/long/path/to/a/rendezvous/file/that/is/longer/than/the/terminal/itself.sock "
        "train.py   running   threads 1"
    )
    for line in (fidelity, command):
        wrapped = wrap_line(line, 80)
        assert all(len(part) <= 80 for part in wrapped.splitlines()), wrapped
        assert wrapped.replace("\n", "").replace(" ", "") == line.replace(" ", "")  # nothing lost
    assert "12 of" in wrap_line("x " * 30 + "12 of 278 s", 40).replace("\n", " ")  # a figure stays with its word


def test_a_table_whose_floors_are_too_wide_squeezes_its_text_columns_to_fit() -> None:
    cols = [Col("node", floor=16), Col("module", cut="start", floor=16), Col("median", numeric=True),
            Col("p90", numeric=True), Col("% of step", numeric=True), Col("output shape", cut="never")]  # fmt: skip
    rows = [["layer1.0.conv1.a_long_name", "layer1.0.blocks.more", "12.3 ms", "14.5 ms", "10.2%", "64×64×56×56"]]
    text = fit_table(rows, cols, 60)
    assert max(len(line) for line in text.splitlines()) <= 60, text
    assert "12.3 ms" in text and "64×64×56×56" in text  # figures are never cut
