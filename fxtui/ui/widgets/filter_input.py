"""The prompt at the bottom of the main screen where a module-path or target-type filter is typed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Literal

from textual import on
from textual.reactive import var
from textual.widgets import Input

from fxtui.core.filters import FilterSpec, parse_types

FilterKind = Literal["path", "type"]

_PROMPTS: dict[FilterKind, str] = {
    "path": "module path: glob like layer[12]* or a substring · Esc clears",
    "type": "target types, comma separated: Conv2d,add",
}


class FilterInput(Input):
    """Edits one part of a filter: hidden until :meth:`open`, then Enter applies and :meth:`cancel` clears.

    Either way the prompt hides and calls its owner (``on_filter``) with the whole new filter. Esc
    stays the screen's key (it clears filters whether or not the prompt is open), so the
    screen calls :meth:`cancel` while the prompt is open.
    """

    DEFAULT_CSS = """
    FilterInput { display: none; }
    """

    kind: var[FilterKind | None] = var(None, init=False, bindings=True)
    """Which part of the filter is being typed; None while the prompt is hidden."""

    def __init__(self, *, on_filter: Callable[[FilterSpec], object] = lambda spec: None, id: str | None = None) -> None:
        super().__init__(id=id)
        self.on_filter = on_filter
        """Called when the prompt closes, with the filter it leaves."""
        self._spec = FilterSpec()

    @property
    def is_open(self) -> bool:
        """True while a filter is being typed."""
        return self.kind is not None

    def open(self, kind: FilterKind, spec: FilterSpec) -> None:
        """Show the prompt for the ``kind`` part of ``spec``, holding its current value, and take the keys."""
        self._spec = spec
        self.placeholder = _PROMPTS[kind]
        self.value = spec.path if kind == "path" else ",".join(sorted(spec.types))
        self.kind = kind

    def cancel(self) -> None:
        """Close the prompt and clear the part it was for (nothing when it is not open)."""
        self._close("")

    def watch_kind(self, kind: FilterKind | None) -> None:
        self.display = kind is not None
        if kind is not None:
            self.focus()

    @on(Input.Submitted)
    def _submitted(self, message: Input.Submitted) -> None:
        message.stop()
        self._close(message.value)

    def _close(self, text: str) -> None:
        kind, spec, text = self.kind, self._spec, text.strip()
        if kind is None:
            return
        self.kind = None
        spec = replace(spec, path=text) if kind == "path" else replace(spec, types=parse_types(text))
        self.on_filter(spec)
