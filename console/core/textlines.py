"""Lines around a position in a text: where a match's line starts and ends, and the line itself
cut to a length that reads as evidence."""

from __future__ import annotations


def tail(text: str, limit: int = 160) -> str:
    """The text stripped, cut to ``limit`` characters with an ellipsis."""
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end == -1 else end


def line_of(text: str, start: int, end: int) -> str:
    """The whole line around a match, which makes better evidence than the match alone."""
    return tail(text[line_start(text, start) : line_end(text, end)])
