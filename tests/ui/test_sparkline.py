"""The detail pane's sparkline: bar heights from samples, and the lines drawn from them."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from fxtui.ui.widgets.sparkline import BARS, Sparkline, bar_levels

pytestmark = pytest.mark.unit


def test_fewer_samples_than_columns_stretch_and_span_every_height() -> None:
    # Two lines: heights 0 (the smallest sample) to 15 (the largest), each sample over two columns.
    assert bar_levels([1.0, 3.0, 2.0], 6, 2) == [0, 0, 15, 15, 7, 7]


def test_more_samples_than_columns_show_each_groups_largest() -> None:
    assert bar_levels([1.0, 5.0, 2.0, 2.0, 9.0, 1.0, 3.0, 3.0], 4, 1) == [3, 0, 7, 1]


def test_equal_samples_lie_flat_and_a_single_sample_fills_the_height() -> None:
    assert bar_levels([2.0, 2.0, 2.0], 4, 1) == [0, 0, 0, 0]
    assert bar_levels([2.0], 3, 2) == [15, 15, 15]
    assert bar_levels([], 3, 2) == []


class _OneSparkline(App[None]):
    def compose(self) -> ComposeResult:
        yield Sparkline(id="s")


async def test_the_lines_stack_full_blocks_under_partial_ones() -> None:
    app = _OneSparkline()
    async with app.run_test(size=(8, 4)) as pilot:
        sparkline = app.query_one(Sparkline)
        sparkline.styles.height = 2
        sparkline.show([0.0, 1.0, 0.5, 1.0])  # heights 0, 15, 7, 15 over two columns each
        await pilot.pause()
        top, bottom = (sparkline.render_line(y).text for y in (0, 1))
        assert bottom == BARS[0] * 2 + "█" * 2 + BARS[7] * 2 + "█" * 2
        assert top == " " * 2 + "█" * 2 + " " * 2 + "█" * 2
        sparkline.show([])
        await pilot.pause()
        assert sparkline.render_line(0).text.strip() == ""
