"""The detail pane's label/value column: labels line up, a long value wraps under itself."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from fxtui.ui.widgets.field_list import FieldList

pytestmark = pytest.mark.unit


class _Fields(App[None]):
    def compose(self) -> ComposeResult:
        yield FieldList(id="fields")


def _text(fields: FieldList) -> list[str]:
    return [fields.render_line(y).text.rstrip() for y in range(fields.size.height)]


async def test_values_line_up_and_wrap_under_themselves() -> None:
    app = _Fields()
    async with app.run_test(size=(30, 10)) as pilot:
        fields = app.query_one(FieldList)
        fields.show([("op", "call_module"), ("unsteady", "the median is 3.1× the fastest run")])
        await pilot.pause()
        assert _text(fields) == [
            "op       call_module",
            "unsteady the median is 3.1×",
            "         the fastest run",
        ]
        assert fields.size.height == 3  # laid out again: one line more than there are fields
        fields.show([("op", "call_function")])
        await pilot.pause()
        assert _text(fields) == ["op call_function"]


async def test_a_narrower_pane_wraps_again() -> None:
    app = _Fields()
    async with app.run_test(size=(40, 10)) as pilot:
        fields = app.query_one(FieldList)
        fields.show([("module", "encoder.layer.11.attention.output.dense")])
        await pilot.pause()
        assert _text(fields) == ["module encoder.layer.11.attention.output", "       .dense"]
        await pilot.resize_terminal(24, 10)
        await pilot.pause()
        assert _text(fields) == ["module encoder.layer.11.", "       attention.output.", "       dense"]
