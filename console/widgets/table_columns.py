"""The findings table's columns as drawn: each column's width on screen, the mark of a time that
is a file's modification time, and the header with the sort column's direction."""

from __future__ import annotations

from ..core.columns import NARROW_BELOW, Column, columns_for


def fit(text: str, width: int) -> str:
    return text[: width - 1] + "…" if len(text) > width else text.ljust(width)


# A time that is the file's modification time (the file carries none of its own) is marked by this
# character before it, in a place of its own: the time column is one character wider than the
# column table says (``layout``). The help screen's legend explains it.
TIME_MARK = "~"
SORT_MARKS = {True: "▼", False: "▲"}  # reversed (descending: newest first for time) / ascending


def _layout(columns: tuple[Column, ...]) -> tuple[tuple[Column, int], ...]:
    return tuple((c, c.width + 1 if c.key == "time" else c.width) for c in columns)


_LAYOUTS = {True: _layout(columns_for(0)), False: _layout(columns_for(NARROW_BELOW))}


def layout(width: int) -> tuple[tuple[Column, int], ...]:
    """The columns drawn at this width, each with the width it is drawn in."""
    return _LAYOUTS[width < NARROW_BELOW]


def _titled(title: str, mark: str, width: int) -> str:
    return f"{title} {mark}" if len(title) + 2 <= width else title[: width - 1] + mark


def header_text(width: int = NARROW_BELOW, sort_key: str | None = None, reverse: bool = True) -> str:
    """The titles over the columns; the sorted column carries ▼ (descending) or ▲ (ascending). When
    the narrow layout leaves the sorted column out, the first title says which one it is."""
    columns = layout(width)
    mark = SORT_MARKS[bool(reverse)]
    shown = any(c.key == sort_key for c, _w in columns)
    titles = []
    for i, (c, w) in enumerate(columns):
        title = c.title
        if c.key == sort_key:
            title = _titled(title, mark, w)
        elif i == 0 and sort_key and not shown:
            title = f"{title} (by {sort_key} {mark})"
        titles.append(fit(title, w))
    return " ".join(titles)
