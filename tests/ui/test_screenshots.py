"""The screenshot command writes the README's pictures under stable names."""

from __future__ import annotations

from pathlib import Path

import pytest

from fxtui.ui.demo import screenshots


def test_every_view_the_readme_shows_has_a_name() -> None:
    assert set(screenshots.VIEW_NAMES) >= {"overview", "filter", "drilldown", "detail", "help", "hints", "diff"}


async def test_capture_writes_the_hints_with_the_what_if_and_the_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(screenshots, "SIZES", ((100, 30),))
    monkeypatch.setattr(screenshots, "VIEWS", tuple(v for v in screenshots.VIEWS if v[0] == "hints"))
    saved = await screenshots.capture(tmp_path)
    assert [p.name for p in saved] == ["hints-100x30.svg", "diff-100x30.svg"]
    hints = saved[0].read_text(encoding="utf-8")
    assert "what-if" in hints and "faster" in hints
    diff = saved[1].read_text(encoding="utf-8")
    assert "One&#160;run&#160;only" in diff
