"""The footer: the keys that apply now, drawn on one line rather than composed of widgets.

Textual's ``Footer`` rebuilds a widget per key whenever the screen's bindings are
refreshed — on every change of focus, even when the keys it shows stay the same. In the
live app that rebuild (mounting the keys, styling them, laying the screen out again) was
about 100 ms of a 160 ms focus change, paid again by the first key pressed after it; and
each rebuild left the replaced keys reachable (Textualize/textual#6666). Here the keys
are data: the bar works out which keys apply when the bindings change, and draws one
line again only when that list or the key under the mouse changed. It keeps the
footer's look (its CSS variables), dims keys that do not apply now, and a click on a key
presses it.
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.reactive import reactive
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget

_PARTS = ("key-bar--key", "key-bar--description", "key-bar--hover", "key-bar--divider")


class Key(NamedTuple):
    """One key on the bar."""

    key: str
    """The Textual key name a click presses."""
    display: str
    """How the key reads (``^p``, ``space``)."""
    description: str
    enabled: bool
    """False: the action exists but does nothing now (drawn dim; a click rings the bell)."""


class KeyBar(Widget, can_focus=False):
    """The screen's keys that show, in binding order, one per action; the command palette's on the right."""

    COMPONENT_CLASSES: ClassVar[set[str]] = set(_PARTS)

    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
        & > .key-bar--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        & > .key-bar--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        & > .key-bar--hover { background: $block-hover-background; }
        & > .key-bar--divider { color: $foreground 20%; }
    }
    """

    hover: reactive[int] = reactive(-1)
    """Index of the key under the mouse, -1 for none."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.keys: tuple[Key, ...] = ()
        """The keys shown, the command palette's last."""
        self._palette = False
        self._line: Strip | None = None
        self._line_styles: tuple[Style, ...] = ()

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._bindings_changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        # The signal comes while focus is still moving: read the bindings once it has settled.
        self.call_after_refresh(self.update_keys)

    def update_keys(self) -> None:
        """Work out the keys that apply now; redraw only if they changed."""
        app, shown, seen = self.app, [], set()
        palette: Key | None = None
        for _node, binding, enabled, tooltip in self.screen.active_bindings.values():
            del tooltip
            key = Key(binding.key, app.get_key_display(binding), binding.description, enabled)
            if app.ENABLE_COMMAND_PALETTE and binding.key == app.COMMAND_PALETTE_BINDING:
                palette = key
            elif binding.show and binding.action not in seen:  # several keys for one action: the first
                seen.add(binding.action)
                shown.append(key)
        keys = (*shown, palette) if palette is not None else tuple(shown)
        if keys != self.keys or (palette is not None) != self._palette:
            self.keys, self._palette = keys, palette is not None
            self._line = None
            self.refresh()

    def _parts(self) -> list[tuple[int, Key, str, str]]:
        """(index, key, key text, description text) in drawing order."""
        return [(i, k, f" {k.display} ", f"{k.description} ") for i, k in enumerate(self.keys)]

    def render_line(self, y: int) -> Strip:
        """The bar's line, kept until the keys, the hover, the size or the styles change."""
        width = self.size.width
        if y != 0:
            return Strip.blank(width, self.rich_style)
        # Textual restyles every widget when the focus moves; the line is drawn again only if that changed a style.
        styles = (self.rich_style, *(self.get_component_rich_style(name) for name in _PARTS))
        if self._line is None or self._line_styles != styles or self._line.cell_length != width:
            self._line, self._line_styles = self._draw(width, styles), styles
        return self._line

    def _draw(self, width: int, styles: tuple[Style, ...]) -> Strip:
        base, key_part, text_part, hover_style, divider = styles
        key_style, text_style, dim = base + key_part, base + text_part, Style(dim=True)

        def segments(index: int, key: Key, key_text: str, description: str) -> list[Segment]:
            meta = Style.from_meta({"key_index": index})
            extra = (hover_style if index == self.hover else Style()) + (dim if not key.enabled else Style())
            return [Segment(key_text, key_style + extra + meta), Segment(description, text_style + extra + meta)]

        parts = self._parts()
        right: list[Segment] = []
        if self._palette:  # the command palette's key sits at the right edge, as in Textual's footer
            right = [Segment("▏", base + divider), *segments(*parts.pop())]
        left = [segment for part in parts for segment in segments(*part)]
        right_width = sum(s.cell_length for s in right)
        left_strip = Strip(left).crop(0, max(0, width - right_width)) if right else Strip(left).crop(0, width)
        gap = max(0, width - left_strip.cell_length - right_width)
        line = Strip([*left_strip, Segment(" " * gap, base), *right])
        return line.crop(0, width).extend_cell_length(width, base)

    def watch_hover(self) -> None:
        self._line = None
        self.refresh()

    def _key_at(self, style: Style) -> Key | None:
        index = style.meta.get("key_index") if style.meta else None
        return self.keys[index] if isinstance(index, int) and 0 <= index < len(self.keys) else None

    def on_mouse_move(self, event: events.MouseMove) -> None:
        index = event.style.meta.get("key_index") if event.style.meta else None
        self.hover = index if isinstance(index, int) else -1

    def on_leave(self, _: events.Leave) -> None:
        self.hover = -1

    def on_mouse_down(self, event: events.MouseDown) -> None:
        """A press on a key presses it; one that does nothing now rings the bell."""
        key = self._key_at(event.style)
        if key is None:
            return
        if key.enabled:
            self.app.simulate_key(key.key)
        else:
            self.app.bell()
