"""The base class of the main screen's mixins.

Each mixin is only ever part of MainScreen. For the type checker it is a screen,
so ``self.query_one``, ``self.app`` … type-check; at run time it is a plain object,
so it adds nothing to MainScreen's MRO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.screen import Screen

    ScreenMixin = Screen[None]
else:
    ScreenMixin = object
