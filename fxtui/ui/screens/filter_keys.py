"""The main screen's filter keys: ``/`` (module path), ``t`` (target type), ``o`` (op types), ``Esc``.

A mixin of :class:`~fxtui.ui.screens.main.MainScreen`: the input box at the bottom,
what a submitted value means, and what Esc clears first.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from textual.widgets import Input

from fxtui.engine.filters import parse_types
from fxtui.ui.filtering import DEFAULT_FILTER, FilterSpec, shown_ops, with_ops
from fxtui.ui.screens.mixin_base import ScreenMixin
from fxtui.ui.screens.op_filter import OpFilterScreen

if TYPE_CHECKING:
    from fxtui.ui.widgets.node_table import NodeTable


class FilterKeysMixin(ScreenMixin):
    """The filter input and the op-type modal for the main screen."""

    if TYPE_CHECKING:  # provided by MainScreen
        spec: FilterSpec
        _input_mode: str | None

        @property
        def table(self) -> NodeTable: ...
        def _apply_filter(self, spec: FilterSpec) -> None: ...

    def _open_input(self, mode: str, value: str, placeholder: str) -> None:
        box = self.query_one("#filter-input", Input)
        self._input_mode = mode
        box.placeholder = placeholder
        box.value = value
        box.display = True
        box.focus()
        self.refresh_bindings()

    def action_filter_path(self) -> None:
        """Filter by module path: a glob (layer[12]*) or a substring."""
        self._open_input("path", self.spec.path, "module path: glob like layer[12]* or a substring · Esc clears")

    def action_filter_type(self) -> None:
        """Filter by target type (Conv2d, add …)."""
        self._open_input("type", ",".join(sorted(self.spec.types)), "target types, comma separated: Conv2d,add")

    def action_filter_ops(self) -> None:
        """Choose which op types are shown."""

        def chosen(ops: frozenset[str] | None) -> None:
            if ops is not None:
                self._apply_filter(with_ops(self.spec, ops))

        self.app.push_screen(OpFilterScreen(shown_ops(self.spec)), chosen)

    def _close_input(self) -> None:
        box = self.query_one("#filter-input", Input)
        box.display = False
        self._input_mode = None
        self.table.focus()
        self.refresh_bindings()

    def submit_filter(self, value: str) -> None:
        """Apply what was typed into the filter box."""
        value = value.strip()
        if self._input_mode == "path":
            spec = replace(self.spec, path=value)
        else:
            spec = replace(self.spec, types=parse_types(value))
        self._close_input()
        self._apply_filter(spec)

    def action_clear_filters(self) -> None:
        """Esc: clear the filter being typed, or else the path and type filters."""
        if self._input_mode == "path":
            spec = replace(self.spec, path="")
            self._close_input()
        elif self._input_mode == "type":
            spec = replace(self.spec, types=frozenset())
            self._close_input()
        elif self.spec.path or self.spec.types or self.spec.phases:
            spec = FilterSpec(ops=self.spec.ops)
        else:
            spec = DEFAULT_FILTER
        self._apply_filter(spec)
