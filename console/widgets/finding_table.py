"""A table of findings that renders only the lines on screen (Textual's line API).

Textual's DataTable builds every row up front, which takes seconds at 100,000
rows; this view keeps a sorted, filtered list of findings and renders the few
visible rows on demand, so painting and updates cost the same at any size.
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from itertools import islice, repeat
from typing import Any, Callable, ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..core.findings import Finding
from ..core.query import Facets, parse_filter
from ..core.safety import safe
from .sizing import set_virtual_size_quietly
from .table_columns import TIME_MARK, fit, layout

NEW_FOR = 3.0  # seconds a new row stays marked
_DIM = Style(dim=True)
_UNSET = object()


from ..core.columns import SORT_FUNCS, SORT_KEYS, waiting
from ..core.rowlist import _ID, SortedRows, keep_from_collector, select_rows
from ..core.rowviews import Fill, View

CHUNK = 4000  # rows per slice of background work on the event loop (a few ms each)
SMALL = 20_000  # a filtered view this small is re-sorted directly on a sort change
# A filter that must test rows one by one (free words, run:, node:) over more rows than this is
# applied in slices (``Fill``). A free word costs about 0.2-0.35 us a row once the rows have
# their haystacks (``query.haystack``; 60,000 rows: 12-20 ms), about 1.8 us while it makes them.
FILL_FROM = 60_000
FIRST_SLICE_S = 0.010  # in the keypress: at least this long, until a screen of matches is found ...
FIRST_SLICE_MAX_S = 0.025  # ... or this long has passed (few matches: the rest come in slices)
SLICE_S = 0.008  # each later slice, between frames



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

    class Filtering(Message):
        """A filter applied in slices found more rows, or finished (``FindingTable.filling``)."""

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._all: dict[str, Finding] = {}
        # Every row, in each sort key's order (built when first needed, or in the background
        # after the initial scan), kept current by live changes; the view is the current key's
        # order itself, or the rows of it that pass the filter.
        self._orders: dict[str, SortedRows] = {}
        self._facets = Facets()  # the orders keep each row's facet code: faceted filters test codes, not rows
        self._view = self._orders["time"] = SortedRows(SORT_FUNCS["time"], facets=self._facets)
        self._generation = 0  # bumped when every row is replaced (background builds then start over)
        self._log: list[tuple[bool, Finding]] | None = None  # changes made while an order is built aside
        self._held: object = _UNSET  # the selection when apply(settle=False) first held the repaint back
        self._held_redraw = False  # a change held back needs every line drawn anew
        self._tally: Counter = Counter()
        self._new: dict[str, float] = {}
        self._filter: Callable[[Finding], bool] = parse_filter("")
        self._fill: Fill | None = None  # the filter still being applied in slices, if any
        self._keyed = False  # the orders keep their rows' keys (``keep_keys``)
        self._line_cache: dict[tuple[str, int, bool, bool, int], Strip] = {}
        self._gated: dict[str, Finding] = {}  # rows with a gate (readable, not superseded): ``next_waiting``
        # Until the user moves the cursor (or ``unpin``), it stays on the first row: rows the
        # initial scan brings, in whatever order they come, do not carry it down with the row it
        # was on, and it starts on the newest finding.
        self.pinned = True
        # Called at once when the highlighted finding changes (before CursorMoved is delivered),
        # so what follows the cursor is painted in the same frame as the highlight.
        self.on_cursor: Callable[[Finding | None], None] | None = None

    # --- data -------------------------------------------------------------------------
    # Rows are kept in blocked ascending orders (one per sort key); the display order is the
    # current one read forwards or backwards. A live change inserts or removes only the rows it
    # names, so its cost does not grow with the table; changing the sort key is a swap once that
    # key's order is built.
    @property
    def rows(self) -> "View":
        return View(self._view, self.sort_reverse)

    @property
    def _asc(self) -> SortedRows:
        return self._view

    @property
    def selected(self) -> Finding | None:
        rows = self.rows
        return rows[self.cursor] if 0 <= self.cursor < len(rows) else None

    @property
    def filling(self) -> float | None:
        """How far a filter applied in slices has got (0-0.99), or None when the rows are all there."""
        return self._fill.progress if self._fill is not None else None

    @property
    def tally(self) -> Counter:
        """Counts over every finding (not only the filtered ones): routes, gates, problems."""
        return self._tally

    def set_findings(self, findings: list[Finding]) -> None:
        current = self.selected.id if self.selected else None
        self._all = {f.id: f for f in findings}
        self._tally = Counter()
        self._gated = {}
        self._count(self._all.values())
        self._generation += 1
        self._log = None
        self._orders = {}
        self._show(current)

    def apply(self, added: list[Finding], changed: list[Finding], removed: list[Finding], *, mark_new: bool = True,
              settle: bool = True) -> None:
        """Take in a change. ``settle=False``: hold the repaint (and the cursor's follow-up) back
        until ``settle()``; the initial scan uses it to repaint a few times a second, not per batch."""
        now = time.monotonic()
        if self._held is not _UNSET:
            current = self._held  # (the cursor's index is stale until the held repaint: rows came since)
        else:
            current = self.selected.id if self.selected else None
        orders = list(self._orders.values())
        view = self._view if not any(self._view is o for o in orders) else None
        log = self._log
        keep = self._filter
        fill = self._fill
        gone = [old for old in (self._all.pop(f.id, None) for f in removed) if old is not None]
        incoming = [*changed, *added]
        ids = {f.id for f in incoming}
        if len(ids) < len(incoming):  # the same finding twice: its later version stays
            incoming = list({f.id: f for f in incoming}.values())
        every = self._all
        gone += [every[fid] for fid in every.keys() & ids]  # replaced by their new versions
        self._count(gone, -1)
        for old in gone:
            self._discard(old, orders, view, log)
        if gone:
            self._line_cache.clear()  # (a line is cached by its row's id and address: both may come back)
        every.update(zip(map(_ID, incoming), incoming))
        self._count(incoming)
        for order in orders:
            order.insert_many(incoming)  # (codes are made for the rows placed: a waiting row has none yet)
        if view is not None:
            view.insert_many([f for f in incoming if keep(f) and (fill is None or fill.covers(f))])
        if log is not None:
            log.extend(zip(repeat(True), incoming))
        if mark_new and added:
            for f in added:
                self._new[f.id] = now
            self.set_timer(NEW_FOR + 0.05, self._expire_new)
        # Lines drawn already stay cached through the initial scan's rows (only added, none new):
        # its repaints then draw only the rows that came on screen. A live change draws anew.
        self._held_redraw = self._held_redraw or mark_new
        if settle:
            self._held = _UNSET
            self._settle(current, redraw=self._held_redraw)
            self._held_redraw = False
        else:
            self._held = current

    def settle(self) -> None:
        """Repaint after changes applied with ``settle=False``."""
        if self._held is not _UNSET:
            current, self._held = self._held, _UNSET
            self._settle(current, redraw=self._held_redraw)  # type: ignore[arg-type]
            self._held_redraw = False

    @staticmethod
    def _discard(old: Finding, orders: list[SortedRows], view: SortedRows | None, log: list | None) -> None:
        for order in orders:
            order.remove(old)
        if view is not None:
            view.remove(old)
        if log is not None:
            log.append((False, old))

    def set_filter(self, predicate: Callable[[Finding], bool], *, narrow: bool = False) -> None:
        """Show only the rows the predicate keeps. ``narrow``: it keeps a subset of what the current
        filter keeps (the query only grew), so only the rows shown now need testing."""
        current = self.selected.id if self.selected else None
        base = (self._view if narrow and self._fill is None and self._view is not self._orders.get(self.sort_key)
                else None)
        self._filter = predicate
        self._show(current, base)

    def _key(self, f: Finding) -> Any:
        return SORT_FUNCS[self.sort_key](f)

    def _count(self, rows: Iterable[Finding], sign: int = 1) -> None:
        """Add (``sign`` 1) or take away (-1) these rows' counts, in one pass (the initial scan
        brings 200,000)."""
        tally = self._tally
        gated = self._gated
        n = problems = gates = 0
        routes: list[str] = []
        for f in rows:
            n += 1
            if f.status != "ok":
                problems += 1
            elif not f.superseded_by:
                routes.append(f.route)
                if f.gate:
                    if sign > 0:
                        gated[f.id] = f
                    else:
                        gated.pop(f.id, None)
                    if waiting(f):
                        gates += 1
        if n:
            tally["findings"] += sign * n
        if problems:
            tally["problems"] += sign * problems
        if gates:
            tally["gates"] += sign * gates
        for route, k in Counter(routes).items():
            tally["route:" + route] += sign * k

    def keep_keys(self, keep: bool) -> None:
        """While the initial scan streams rows in (``True``), the orders keep their rows' keys and
        let rows wait (``SortedRows.keep_keys``). ``False`` drops the keys (memory) of an order with
        no row waiting; one with rows waiting keeps them until it is replaced (``prepare_orders``)."""
        self._keyed = keep
        for order in self._orders.values():
            order.keep_keys(keep)

    def _order(self, key: str) -> SortedRows:
        """Every row in ``key`` order (sorted now if it was not built yet)."""
        order = self._orders.get(key)
        if order is None:
            func = SORT_FUNCS[key]
            order = self._orders[key] = SortedRows(func, sorted(self._all.values(), key=func), facets=self._facets)
            if self._keyed:
                order.keep_keys()
            keep_from_collector()
        return order

    def _select(self, rows) -> list[Finding]:
        return select_rows(self._filter, rows)

    def _show(self, current: str | None, base: SortedRows | None = None) -> None:
        """Make the view: the current key's order, filtered (from ``base`` if given)."""
        self._fill = None
        func = SORT_FUNCS[self.sort_key]
        split = getattr(self._filter, "split", None)
        by_row = split is None or not split()[1].everything  # some term must test each row itself
        if getattr(self._filter, "everything", False):
            self._view = self._order(self.sort_key)
        elif base is not None and base.key is func and by_row and len(base) <= FILL_FROM:
            # A narrower query that tests rows: only the rows shown now (few). (A faceted one is
            # quicker from the whole order: its masks, no rows touched.)
            self._view = base.select(self._filter)
        elif base is not None and base.key is not func and len(base) <= SMALL:
            self._view = SortedRows(func, sorted(self._select(base), key=func))
        else:
            order = self._order(self.sort_key)
            if len(order) > FILL_FROM and by_row:
                # Rows tested one by one: the first screen now, the rest in slices between frames.
                self._view = SortedRows(func)
                fill = Fill(order, self._filter, self.sort_reverse)
                if not fill.step(self._view, FIRST_SLICE_S, self.size.height + 1, FIRST_SLICE_MAX_S):
                    self._fill = fill
                    # (a partial, not a coroutine: a worker cancelled before it starts leaves none unawaited)
                    self.run_worker(partial(self._fill_rest, fill), group="finding-table-filter", exclusive=True)
            else:
                self._view = order.select(self._filter)
        self._settle(current)

    async def _fill_rest(self, fill: Fill) -> None:
        last_told = time.monotonic()
        while self._fill is fill:
            await asyncio.sleep(0)
            if self._fill is not fill:
                return  # another filter, sort or set of rows replaced this one
            before = len(self._view)
            done = fill.step(self._view, SLICE_S)
            if done:
                self._fill = None
            self._grown(before)
            now = time.monotonic()
            if done or now - last_told >= 0.1:
                last_told = now
                self.post_message(self.Filtering())

    def _grown(self, before: int) -> None:
        """Rows were added after the ``before`` rows shown so far (a slice of a fill)."""
        n = len(self._view)
        if n == before:
            return
        self._size_to_rows(n)
        if before < round(self.scroll_y) + self.size.height:
            self.refresh()  # new rows reach the screen (rows drawn already keep their cached lines)
        if before == 0:  # the first row came under the cursor
            self._settle(None)

    def _size_to_rows(self, n: int) -> None:
        """The virtual size for ``n`` rows (only the scrollbars follow: ``set_virtual_size_quietly``)."""
        set_virtual_size_quietly(self, Size(sum(w + 1 for _c, w in layout(self.size.width)), n))

    def _rebuild(self) -> None:
        """The sort key changed."""
        current = self.selected.id if self.selected else None
        if not getattr(self._filter, "everything", False) and self._fill is None and len(self._view) <= SMALL:
            self._show(current, self._view)  # a small filtered view: sort just its rows
        else:
            self._show(current)

    def _settle(self, current: str | None, redraw: bool = True) -> None:
        """After the rows changed: sizes, the cursor on the same finding if it is still shown, a
        repaint (``redraw``: of every line, not only of those not cached)."""
        if redraw:
            self._line_cache.clear()
        n = len(self._view)
        self._size_to_rows(n)
        row = self._all.get(current) if current is not None and not self.pinned else None
        before = self.cursor
        if self.pinned:
            self.cursor = 0
        elif row is not None:
            i = self._view.position(row)
            if i is not None:
                self.cursor = n - 1 - i if self.sort_reverse else i
        self.cursor = min(self.cursor, max(n - 1, 0))
        selected = self.selected
        self._view.focus = selected  # (while the initial scan's rows wait, its neighbours are placed)
        if self.cursor == before and (selected.id if selected else None) != current:
            # Another finding (or none) under an unmoved cursor, e.g. after a filter: say so, as a move would.
            if self.on_cursor is not None:
                self.on_cursor(selected)
            self.post_message(self.CursorMoved(selected))
        self.refresh()

    # --- background ----------------------------------------------------------------------
    def prepare_orders(self) -> None:
        """Build every sort key's order in the background, in slices of a few milliseconds on the
        event loop, so that changing the sort key later is a swap, not a sort of every row. An
        order whose rows still wait (the initial scan's: ``SortedRows``) is built anew first and
        takes its place."""
        self.run_worker(self._build_orders(), group="finding-table-orders", exclusive=True)

    async def _build_orders(self) -> None:
        start = SORT_KEYS.index(self.sort_key)
        log: list | None = None
        try:
            for key in SORT_KEYS[start:] + SORT_KEYS[:start]:
                if key in self._orders and not self._orders[key].waiting:
                    continue
                generation = self._generation
                func = SORT_FUNCS[key]
                rows = list(self._all.values())
                self._log = log = []  # apply() records what changes while this order is built aside
                runs = []
                for i in range(0, len(rows), CHUNK):
                    runs.append(sorted(rows[i : i + CHUNK], key=func))
                    await asyncio.sleep(0)
                merged: list[Finding] = []
                codes = bytearray()
                code = self._facets.code
                it = heapq.merge(*runs, key=func)
                while True:
                    part = list(islice(it, CHUNK))
                    merged.extend(part)
                    codes.extend(map(code, part))
                    if len(part) < CHUNK:
                        break
                    await asyncio.sleep(0)
                self._log = None
                if generation != self._generation:
                    return  # every row was replaced meanwhile (set_findings builds what it needs)
                old = self._orders.get(key)
                if old is not None and not old.waiting:
                    continue  # a sort key change needed it first and sorted it then, or it was read whole
                order = SortedRows(func, merged, facets=self._facets, codes=codes)
                for present, row in log:
                    if present:
                        order.insert(row)
                    else:
                        order.remove(row)
                self._orders[key] = order
                if self._view is old:
                    self._view = order  # (the same rows in the same order: what is shown stays)
                keep_from_collector()
                await asyncio.sleep(0)
        finally:
            if self._log is log:  # (a builder that replaced this one keeps its own)
                self._log = None

    def notify_style_update(self) -> None:
        # The cached lines carry the styles they were drawn with (the cursor's colour changes
        # with the focus, a theme change changes them all).
        super().notify_style_update()
        self._line_cache.clear()

    def redraw(self) -> None:
        """Draw every line again (the header above it changed its widths)."""
        self._line_cache.clear()
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
        elif waiting(f):
            base = base + self.get_component_rich_style("finding-table--human")
        if is_new:
            base = base + self.get_component_rich_style("finding-table--new")
        if is_cursor:
            base = base + self.get_component_rich_style("finding-table--cursor")
        segments = []
        text = []
        for c, w in layout(width):
            value = safe(c.value(f), max_len=w + 1)
            if c.key == "time":  # its first place: the mark of a modification time, or a space
                if value and f.time_source == "mtime":
                    if text:
                        segments.append(Segment("".join(text), base))
                        text = []
                    segments.append(Segment(TIME_MARK, base + _DIM))
                else:
                    text.append(" ")
                text.append(fit(value, w - 1) + " ")
            else:
                text.append(fit(value, w) + " ")
        segments.append(Segment("".join(text), base))
        return Strip(segments).crop(scroll_x, scroll_x + width).extend_cell_length(width, base)

    # --- actions ----------------------------------------------------------------------
    def watch_cursor(self, old: int, new: int) -> None:
        if self._held is not _UNSET:  # the user moved while repaints are held: follow the new row
            self._held = self.selected.id if self.selected else None
        top = round(self.scroll_y)
        self.scroll_to_cursor()
        if round(self.scroll_y) == top:  # only the two rows whose highlight changed
            self.refresh_line(old)  # (virtual line numbers: ScrollView subtracts the scroll offset)
            self.refresh_line(new)
        if self.on_cursor is not None:
            self.on_cursor(self.selected)
        self.post_message(self.CursorMoved(self.selected))

    def scroll_to_cursor(self) -> None:
        height = self.scrollable_content_region.height
        top = round(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif height and self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)

    def move_to(self, index: int) -> None:
        """Put the cursor on this row (in display order): the user's choice, kept from now on."""
        self.pinned = False
        self.cursor = index

    def next_waiting(self) -> int | None:
        """The display index of the next row after the cursor (wrapping round) whose gate waits for
        a person, or None if no row shown waits. Only the rows with a gate are looked at (each
        placed by its key), not every row."""
        n = len(self._view)
        if not n:
            return None
        reverse = self.sort_reverse
        after = first = None
        for f in self._gated.values():
            if not waiting(f):
                continue
            i = self._view.position(f)
            if i is None:
                continue  # (not shown: the filter leaves it out)
            i = n - 1 - i if reverse else i
            if first is None or i < first:
                first = i
            if i > self.cursor and (after is None or i < after):
                after = i
        return after if after is not None else first

    def action_cursor(self, delta: int) -> None:
        if self._asc:
            self.move_to(max(0, min(len(self._asc) - 1, self.cursor + delta)))

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(1, self.scrollable_content_region.height - 1))

    def action_jump(self, where: int) -> None:
        if self._asc:
            self.move_to(where if where >= 0 else len(self._asc) - 1)

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
        if self._fill is not None:  # a fill goes in display order: start it again the other way
            self._show(self.selected.id if self.selected else None)
            return
        # The same list read the other way: keep the cursor on the same finding.
        if self._view and not self.pinned:
            self.cursor = len(self._view) - 1 - self.cursor
        elif self._view:
            self._settle(None)  # (on the first row: a new one)
        self._line_cache.clear()
        self.refresh()

    def on_click(self, event) -> None:
        row = round(self.scroll_y) + event.y
        if 0 <= row < len(self._asc):
            if row == self.cursor and event.chain >= 2:
                self.action_select()
            self.move_to(row)
