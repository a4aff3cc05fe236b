"""A table of findings that renders only the lines on screen (Textual's line API).

Textual's DataTable builds every row up front, which takes seconds at 100,000
rows; this view keeps a sorted, filtered list of findings and renders the few
visible rows on demand, so painting and updates cost the same at any size.
"""

from __future__ import annotations

import time
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Callable, ClassVar

from rich.segment import Segment
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
# Under 100 columns: no time or retryable column, narrower names (the detail shows them all).
NARROW_COLUMNS: tuple[Column, ...] = (
    Column("run", "RUN", 22, lambda f: f.run),
    Column("node", "NODE", 12, lambda f: f.node or ""),
    Column("class", "CLASS", 16, _class),
    Column("route", "ROUTE", 6, lambda f: f.route),
    Column("confidence", "CONF", 4, _conf),
    Column("gate", "GATE", 10, lambda f: f.gate or ""),
)
NARROW_BELOW = 100
SORT_KEYS = ("time", "run", "class", "route", "gate", "confidence")


def columns_for(width: int) -> tuple[Column, ...]:
    return NARROW_COLUMNS if width < NARROW_BELOW else COLUMNS


class _View(Sequence):
    """The rows in display order: the ascending list, read backwards when the sort is reversed."""

    __slots__ = ("_asc", "_reverse")

    def __init__(self, asc: list, reverse: bool) -> None:
        self._asc = asc
        self._reverse = reverse

    def __len__(self) -> int:
        return len(self._asc)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        n = len(self._asc)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(index)
        return self._asc[n - 1 - index] if self._reverse else self._asc[index]

    def __iter__(self):
        return reversed(self._asc) if self._reverse else iter(self._asc)


def _fit(text: str, width: int) -> str:
    return text[: width - 1] + "…" if len(text) > width else text.ljust(width)


def header_text(width: int = NARROW_BELOW) -> str:
    return " ".join(_fit(c.title, c.width) for c in columns_for(width))


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
        self._asc: list[Finding] = []
        self._keys: list[tuple] = []
        self._tally: Counter = Counter()
        self._new: dict[str, float] = {}
        self._filter: Callable[[Finding], bool] = lambda f: True
        self._line_cache: dict[tuple[str, int, bool, bool, int], Strip] = {}

    # --- data -------------------------------------------------------------------------
    # Rows are kept in one ascending list (with their sort keys beside them, for bisect);
    # the display order is that list read forwards or backwards. A live change inserts or
    # removes only the rows it names, so its cost does not grow with the table.
    @property
    def rows(self) -> "_View":
        return _View(self._asc, self.sort_reverse)

    @property
    def selected(self) -> Finding | None:
        rows = self.rows
        return rows[self.cursor] if 0 <= self.cursor < len(rows) else None

    @property
    def tally(self) -> Counter:
        """Counts over every finding (not only the filtered ones): routes, gates, problems."""
        return self._tally

    def set_findings(self, findings: list[Finding]) -> None:
        self._all = {f.id: f for f in findings}
        self._tally = Counter()
        for f in self._all.values():
            self._count(f, 1)
        self._rebuild()

    def apply(self, added: list[Finding], changed: list[Finding], removed: list[Finding], *, mark_new: bool = True) -> None:
        now = time.monotonic()
        current = self.selected.id if self.selected else None
        for f in removed:
            old = self._all.pop(f.id, None)
            if old is not None:
                self._count(old, -1)
                self._remove(old)
        for f in [*changed, *added]:
            old = self._all.get(f.id)
            if old is not None:
                self._count(old, -1)
                self._remove(old)
            self._all[f.id] = f
            self._count(f, 1)
            if self._filter(f):
                self._insert(f)
        if mark_new and added:
            for f in added:
                self._new[f.id] = now
            self.set_timer(NEW_FOR + 0.05, self._expire_new)
        self._settle(current)

    def set_filter(self, predicate: Callable[[Finding], bool]) -> None:
        self._filter = predicate
        self._rebuild()

    def _key(self, f: Finding) -> tuple:
        key = self.sort_key
        if key == "confidence":
            value: object = f.confidence if f.confidence is not None else -1.0
        elif key == "class":
            value = f.class_
        else:
            value = getattr(f, key) or ""
        return (value, f.path, f.id)

    def _count(self, f: Finding, sign: int) -> None:
        tally = self._tally
        tally["findings"] += sign
        if f.status != "ok":
            tally["problems"] += sign
        elif not f.superseded_by:
            tally["route:" + f.route] += sign
            if f.gate:
                tally["gates"] += sign

    def _insert(self, f: Finding) -> None:
        key = self._key(f)
        i = bisect_right(self._keys, key)
        self._keys.insert(i, key)
        self._asc.insert(i, f)

    def _remove(self, f: Finding) -> None:
        key = self._key(f)
        i = bisect_left(self._keys, key)
        if i < len(self._asc) and self._asc[i].id == f.id:
            del self._keys[i], self._asc[i]

    def _rebuild(self) -> None:
        current = self.selected.id if self._asc and self.selected else None
        rows = sorted(((self._key(f), f) for f in self._all.values() if self._filter(f)), key=lambda pair: pair[0])
        self._keys = [k for k, _ in rows]
        self._asc = [f for _, f in rows]
        self._settle(current)

    def _settle(self, current: str | None) -> None:
        """After the rows changed: sizes, the cursor on the same finding if it is still shown, a repaint."""
        self._line_cache.clear()
        n = len(self._asc)
        self.virtual_size = Size(sum(c.width + 1 for c in columns_for(self.size.width)), n)
        row = self._all.get(current) if current is not None else None
        if row is not None and self._filter(row):
            i = bisect_left(self._keys, self._key(row))
            if i < n and self._asc[i].id == row.id:
                self.cursor = n - 1 - i if self.sort_reverse else i
        self.cursor = min(self.cursor, max(n - 1, 0))
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
        rows = self.rows
        if index >= len(rows):
            return Strip.blank(width, self.rich_style)
        f = rows[index]
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
        text = " ".join(_fit(safe(c.value(f), max_len=c.width + 1), c.width) for c in columns_for(width))
        text = text[scroll_x : scroll_x + width].ljust(width)
        return Strip([Segment(text, base)], width)

    # --- actions ----------------------------------------------------------------------
    def watch_cursor(self, old: int, new: int) -> None:
        top = round(self.scroll_y)
        self.scroll_to_cursor()
        if round(self.scroll_y) == top:  # only the two rows whose highlight changed
            self.refresh_line(old)  # (virtual line numbers: ScrollView subtracts the scroll offset)
            self.refresh_line(new)
        self.post_message(self.CursorMoved(self.selected))

    def scroll_to_cursor(self) -> None:
        height = self.scrollable_content_region.height
        top = round(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif height and self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)

    def action_cursor(self, delta: int) -> None:
        if self._asc:
            self.cursor = max(0, min(len(self._asc) - 1, self.cursor + delta))

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(1, self.scrollable_content_region.height - 1))

    def action_jump(self, where: int) -> None:
        if self._asc:
            self.cursor = where if where >= 0 else len(self._asc) - 1

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
        # The same list read the other way: keep the cursor on the same finding.
        if self._asc:
            self.cursor = len(self._asc) - 1 - self.cursor
        self._line_cache.clear()
        self.refresh()

    def on_click(self, event) -> None:
        row = round(self.scroll_y) + event.y
        if 0 <= row < len(self._asc):
            if row == self.cursor and event.chain >= 2:
                self.action_select()
            self.cursor = row
