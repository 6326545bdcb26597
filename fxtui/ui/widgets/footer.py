"""The key footer, without a leak of the keys it replaces."""

from __future__ import annotations

from textual.widgets import Footer as TextualFooter

from fxtui.ui.textual_compat import drop_detached_watchers


class Footer(TextualFooter):
    """Textual's footer; prunes what each recompose leaves behind.

    Every key the footer shows is data-bound to the footer's ``compact`` reactive,
    which stores a watcher entry pointing at the key on the footer itself. Textual
    prunes those entries only when ``compact`` changes (Textualize/textual#6666),
    so each recompose — whenever the keys that apply change, e.g. Backspace after a
    drill-down — kept the previous keys alive: a long session grew by megabytes a
    minute. After recomposing, entries of keys no longer attached are dropped.
    """

    async def recompose(self) -> None:
        """Recompose, then forget the keys that were replaced."""
        await super().recompose()
        drop_detached_watchers(self)
