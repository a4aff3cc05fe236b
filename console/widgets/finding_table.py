"""A table of findings that renders only the lines on screen (Textual's line API).

Textual's DataTable builds every row up front, which takes seconds at 100,000
rows; this view keeps a sorted, filtered list of findings and renders the few
visible rows on demand, so painting and updates cost the same at any size.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..core.findings import Finding
from ..core.safety import safe

NEW_FOR = 3.0  # seconds a new row stays marked


@dataclass(frozen=True, slots=True)
class Column:
    key: str
    title: str
    width: int
    value: Callable[[Finding], str]


def _time(f: Finding) -> str:
    return (f.time or "")[5:16].replace("T", " ")


def _conf(f: Finding) -> str:
    return "" if f.confidence is None else f"{f.confidence:.2f}"


def _retry(f: Finding) -> str:
    return "" if f.retryable is None else ("yes" if f.retryable else "no")


def _class(f: Finding) -> str:
    return f.class_ if f.status == "ok" else f"[{f.status}]"


COLUMNS: tuple[Column, ...] = (
    Column("time", "TIME", 11, _time),
    Column("run", "RUN", 28, lambda f: f.run),
    Column("node", "NODE", 16, lambda f: f.node or ""),
    Column("class", "CLASS", 18, _class),
    Column("route", "ROUTE", 6, lambda f: f.route),
    Column("retryable", "RETRY", 5, _retry),
    Column("confidence", "CONF", 4, _conf),
    Column("gate", "GATE", 10, lambda f: f.gate or ""),
)
SORT_KEYS = ("time", "run", "class", "route", "gate", "confidence")


def _fit(text: str, width: int) -> str:
    return text[: width - 1] + "…" if len(text) > width else text.ljust(width)


def header_text() -> str:
    return " ".join(_fit(c.title, c.width) for c in COLUMNS)


class FindingTable(ScrollView, can_focus=True):
    """Findings, one per line; Enter opens the selected one."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
        Binding("enter", "select", "Detail", id="table.select"),
        Binding("s", "cycle_sort", "Sort", id="table.sort"),
        Binding("S", "reverse_sort", "Reverse", show=False, id="table.reverse"),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "finding-table--cursor",
        "finding-table--new",
        "finding-table--human",
        "finding-table--problem",
        "finding-table--superseded",
    }

    cursor: reactive[int] = reactive(0)
    sort_key: reactive[str] = reactive("time")
    sort_reverse: reactive[bool] = reactive(True)

    @dataclass
    class FindingSelected(Message):
        """The user opened a finding (Enter or click)."""

        finding: Finding

    @dataclass
    class CursorMoved(Message):
        """The highlighted finding changed."""

        finding: Finding | None

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._all: dict[str, Finding] = {}
        self._rows: list[Finding] = []
        self._new: dict[str, float] = {}
        self._filter: Callable[[Finding], bool] = lambda f: True
        self._line_cache: dict[tuple[str, int, bool, bool, int], Strip] = {}

    # --- data -------------------------------------------------------------------------
    @property
    def rows(self) -> list[Finding]:
        return self._rows

    @property
    def selected(self) -> Finding | None:
        return self._rows[self.cursor] if 0 <= self.cursor < len(self._rows) else None

    def set_findings(self, findings: list[Finding]) -> None:
        self._all = {f.id: f for f in findings}
        self._rebuild()

    def apply(self, added: list[Finding], changed: list[Finding], removed: list[Finding]) -> None:
        now = time.monotonic()
        for f in removed:
            self._all.pop(f.id, None)
        for f in changed:
            self._all[f.id] = f
        for f in added:
            self._all[f.id] = f
            self._new[f.id] = now
        if added:
            self.set_timer(NEW_FOR + 0.05, self._expire_new)
        self._rebuild()

    def set_filter(self, predicate: Callable[[Finding], bool]) -> None:
        self._filter = predicate
        self._rebuild()

    def _rebuild(self) -> None:
        current = self.selected.id if self.selected else None
        rows = [f for f in self._all.values() if self._filter(f)]
        key = self.sort_key

        def sort_value(f: Finding):
            if key == "confidence":
                return f.confidence if f.confidence is not None else -1.0
            if key == "class":
                return f.class_
            if key == "time":
                return f.time or ""
            return getattr(f, key) or ""

        rows.sort(key=lambda f: (sort_value(f), f.path), reverse=self.sort_reverse)
        self._rows = rows
        self._line_cache.clear()
        self.virtual_size = Size(sum(c.width + 1 for c in COLUMNS), len(rows))
        if current is not None:
            for i, f in enumerate(rows):
                if f.id == current:
                    self.cursor = i
                    break
        self.cursor = min(self.cursor, max(len(rows) - 1, 0))
        self.refresh()

    def _expire_new(self) -> None:
        now = time.monotonic()
        self._new = {k: t for k, t in self._new.items() if now - t < NEW_FOR}
        self._line_cache.clear()
        self.refresh()

    # --- rendering --------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        if index >= len(self._rows):
            return Strip.blank(width, self.rich_style)
        f = self._rows[index]
        is_cursor = index == self.cursor
        is_new = f.id in self._new
        key = (f.id, id(f), is_cursor, is_new, width + scroll_x * 10_000)
        strip = self._line_cache.get(key)
        if strip is None:
            strip = self._render_row(f, is_cursor, is_new, scroll_x, width)
            if len(self._line_cache) > 2000:
                self._line_cache.clear()
            self._line_cache[key] = strip
        return strip

    def _render_row(self, f: Finding, is_cursor: bool, is_new: bool, scroll_x: int, width: int) -> Strip:
        base = self.rich_style
        if f.status != "ok":
            base = base + self.get_component_rich_style("finding-table--problem")
        elif f.superseded_by:
            base = base + self.get_component_rich_style("finding-table--superseded")
        elif f.gate:
            base = base + self.get_component_rich_style("finding-table--human")
        if is_new:
            base = base + self.get_component_rich_style("finding-table--new")
        if is_cursor:
            base = base + self.get_component_rich_style("finding-table--cursor")
        text = " ".join(_fit(safe(c.value(f), max_len=c.width + 1), c.width) for c in COLUMNS)
        text = text[scroll_x : scroll_x + width].ljust(width)
        return Strip([Segment(text, base)], width)

    # --- actions ----------------------------------------------------------------------
    def watch_cursor(self, old: int, new: int) -> None:
        self._line_cache.clear()
        self.refresh()
        self.scroll_to_cursor()
        self.post_message(self.CursorMoved(self.selected))

    def scroll_to_cursor(self) -> None:
        height = self.scrollable_content_region.height
        top = round(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif height and self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)

    def action_cursor(self, delta: int) -> None:
        if self._rows:
            self.cursor = max(0, min(len(self._rows) - 1, self.cursor + delta))

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(1, self.scrollable_content_region.height - 1))

    def action_jump(self, where: int) -> None:
        if self._rows:
            self.cursor = where if where >= 0 else len(self._rows) - 1

    def action_select(self) -> None:
        if self.selected is not None:
            self.post_message(self.FindingSelected(self.selected))

    def action_cycle_sort(self) -> None:
        self.sort_key = SORT_KEYS[(SORT_KEYS.index(self.sort_key) + 1) % len(SORT_KEYS)]

    def action_reverse_sort(self) -> None:
        self.sort_reverse = not self.sort_reverse

    def watch_sort_key(self) -> None:
        self._rebuild()

    def watch_sort_reverse(self) -> None:
        self._rebuild()

    def on_click(self, event) -> None:
        row = round(self.scroll_y) + event.y
        if 0 <= row < len(self._rows):
            if row == self.cursor and event.chain >= 2:
                self.action_select()
            self.cursor = row
