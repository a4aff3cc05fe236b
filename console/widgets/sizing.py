"""Scrollable widgets whose own size never depends on their content (the CSS gives them their
share of the screen) set their virtual size here."""

from __future__ import annotations

from textual.geometry import Size
from textual.widget import Widget

from .. import compat


def set_virtual_size_quietly(widget: Widget, size: Size) -> bool:
    """Give ``widget`` this virtual size with only its scrollbars following: assigning
    ``virtual_size`` asks for a layout pass of the whole screen (about 25 ms at 120x36), which such
    a widget does not need (a scrollbar that appears or goes still takes one). True if it changed.

    Textual's ``_scroll_update`` is private: it is called through ``compat``."""
    if size == widget.virtual_size:
        return False
    widget.set_reactive(Widget.virtual_size, size)
    compat.scroll_update(widget, size)
    return True
