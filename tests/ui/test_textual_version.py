"""The installed Textual is one the suite has passed on (pyproject.toml's range)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import textual

pytestmark = pytest.mark.unit


def test_the_installed_textual_is_in_the_range_pyproject_allows() -> None:
    # The bound says which Textual releases the suite has passed on; a newer major must pass first.
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    requirement = re.findall(r'^\s*"(textual[^"]*)"', pyproject, re.M)[0]
    bounds = dict(re.findall(r"(>=|<)\s*([\d.]+)", requirement))
    assert set(bounds) == {">=", "<"}, f"textual needs a lower and an upper bound in pyproject.toml: {requirement}"

    def version(text: str) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", text)[:3])

    installed = version(textual.__version__)
    assert version(bounds[">="]) <= installed < version(bounds["<"]), f"textual {textual.__version__}: {requirement}"
