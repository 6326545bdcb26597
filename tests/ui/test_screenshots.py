"""The screenshot command writes the README's pictures under stable names."""

from __future__ import annotations

from pathlib import Path

import pytest

from fxtui.ui.demo import screenshots

pytestmark = pytest.mark.unit


def test_every_view_the_readme_shows_has_a_name() -> None:
    assert set(screenshots.VIEW_NAMES) >= {
        "overview",
        "filter",
        "drilldown",
        "detail",
        "help",
        "hints",
        "what-ifs",
        "diff",
    }


async def test_capture_writes_the_hints_the_what_ifs_and_the_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(screenshots, "SIZES", ((100, 30),))
    monkeypatch.setattr(screenshots, "VIEWS", tuple(v for v in screenshots.VIEWS if v[0] in ("hints", "what-ifs")))
    saved = await screenshots.capture(tmp_path)
    assert [p.name for p in saved] == ["hints-100x30.svg", "what-ifs-100x30.svg", "diff-100x30.svg"]
    hints = saved[0].read_text(encoding="utf-8")
    assert "measured&#160;(what-if&#160;fold-bn)" in hints
    what_ifs = saved[1].read_text(encoding="utf-8")
    assert "channels-last" in what_ifs and "maxpool" in what_ifs and "×0.12" in what_ifs
    diff = saved[2].read_text(encoding="utf-8")
    assert "One&#160;run&#160;only" in diff
