"""A table of findings that renders only the lines on screen (Textual's line API).

Textual's DataTable builds every row up front, which takes seconds at 100,000
rows; this view keeps a sorted, filtered list of findings and renders the few
visible rows on demand, so painting and updates cost the same at any size.
"""

from __future__ import annotations

import asyncio
import gc
import heapq
import time
import weakref
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from datetime import datetime, timezone
from itertools import accumulate, chain, compress, islice, repeat
from operator import attrgetter
from typing import Any, Callable, ClassVar

from rich.segment import Segment
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..core.decisions import settles, state_now
from ..core.findings import Finding
from ..core.query import Facets, parse_filter
from ..core.safety import safe
from .sizing import set_virtual_size_quietly

NEW_FOR = 3.0  # seconds a new row stays marked
_UNSET = object()


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


# The decision answering a gate, as one mark after the gate's name (the detail pane says it in words).
DECISION_MARKS = {"valid": "✓", "unverified": "?", "stale": "!", "expired": "!", "spent": "!", "invalid": "✗"}


def _gate(f: Finding) -> str:
    if not f.gate:
        return ""
    state = state_now(f.decision, datetime.now(timezone.utc)) if f.decision is not None else None
    return f"{f.gate} {DECISION_MARKS.get(state, '')}".rstrip() if state else f.gate


def waiting(f: Finding) -> bool:
    """A gate no verified decision answers yet."""
    return bool(f.gate) and (f.decision is None or not settles(f.decision, datetime.now(timezone.utc)))


COLUMNS: tuple[Column, ...] = (
    Column("time", "TIME", 11, _time),
    Column("run", "RUN", 28, lambda f: f.run),
    Column("node", "NODE", 16, lambda f: f.node or ""),
    Column("class", "CLASS", 18, _class),
    Column("route", "ROUTE", 7, lambda f: f.route),
    Column("retryable", "RETRY", 5, _retry),
    Column("confidence", "CONF", 4, _conf),
    Column("gate", "GATE", 12, _gate),
)
# Under 100 columns: no time or retryable column, narrower names (the detail shows them all).
NARROW_COLUMNS: tuple[Column, ...] = (
    Column("run", "RUN", 22, lambda f: f.run),
    Column("node", "NODE", 12, lambda f: f.node or ""),
    Column("class", "CLASS", 16, _class),
    Column("route", "ROUTE", 7, lambda f: f.route),
    Column("confidence", "CONF", 4, _conf),
    Column("gate", "GATE", 12, _gate),
)
NARROW_BELOW = 100
SORT_KEYS = ("time", "run", "class", "route", "gate", "confidence")
# Each column's sort key: its value, then path and id, so every row has its own place. A text
# column's key is one string, "value NUL path NUL id": ordered as the tuple (value, path, id)
# would be while the value has no NUL (paths and ids never do), and compared in one go, where
# tuples of rows sharing a value (many rows share a second) compare item by item: sorting
# 200,000 rows by time takes 0.2 s, not 0.5. A value holding a NUL still gets one place of its
# own (the id ends the key).
SORT_FUNCS: dict[str, Callable[[Finding], Any]] = {
    "time": lambda f: f"{f.time or ''}\0{f.path}\0{f.id}",
    "run": lambda f: f"{f.run or ''}\0{f.path}\0{f.id}",
    "class": lambda f: f"{f.class_ or ''}\0{f.path}\0{f.id}",
    "route": lambda f: f"{f.route or ''}\0{f.path}\0{f.id}",
    "gate": lambda f: f"{f.gate or ''}\0{f.path}\0{f.id}",
    "confidence": lambda f: (f.confidence if f.confidence is not None else -1.0, f.path, f.id),
}
BLOCK = 1000  # rows per block of a sorted order
EXACT = 2 * BLOCK  # while rows wait (``_Sorted``, the initial scan), this many at either end are in place
CHUNK = 4000  # rows per slice of background work on the event loop (a few ms each)
SMALL = 20_000  # a filtered view this small is re-sorted directly on a sort change
# A filter that must test rows one by one (free words, run:, node:) over more rows than this is
# applied in slices (``_Fill``). A free word costs about 0.2-0.35 us a row once the rows have
# their haystacks (``query.haystack``; 60,000 rows: 12-20 ms), about 1.8 us while it makes them.
FILL_FROM = 60_000
FIRST_SLICE_S = 0.010  # in the keypress: at least this long, until a screen of matches is found ...
FIRST_SLICE_MAX_S = 0.025  # ... or this long has passed (few matches: the rest come in slices)
SLICE_S = 0.008  # each later slice, between frames


_ID = attrgetter("id")


def _within(k: Any, a: Any, b: Any) -> bool:
    """Whether ``k`` lies in the keys from ``a`` to ``b`` (None: no bound)."""
    return (a is None or a <= k) and (b is None or k <= b)


def _overlap(one: tuple[Any, Any], other: tuple[Any, Any]) -> tuple[Any, Any] | None:
    """The keys two ranges share (None: no bound), or None if they share none."""
    a = other[0] if one[0] is None else one[0] if other[0] is None else max(one[0], other[0])
    b = other[1] if one[1] is None else one[1] if other[1] is None else min(one[1], other[1])
    return (a, b) if a is None or b is None or a <= b else None


def select_rows(keep: Callable[[Finding], bool], rows: Sequence[Finding]) -> list[Finding]:
    """The rows ``keep`` keeps, in their order: ``keep.select`` where it has one (a ``Filter``)."""
    select = getattr(keep, "select", None)
    return select(rows) if select is not None else [f for f in rows if keep(f)]


def _keep_from_collector() -> None:
    """Move what exists now out of the cyclic collector's sight (``gc.freeze``).

    An order's blocks are lists holding every row: about 200,000 references per order at 100,000
    runs. Left in the oldest generation, each full collection walked them all (six orders: 30-80 ms
    with the event loop stopped, several times a minute while the monitor polls). The app freezes
    the index's objects the same way; garbage without cycles (a replaced order) is still freed.
    """
    gc.freeze()


def columns_for(width: int) -> tuple[Column, ...]:
    return NARROW_COLUMNS if width < NARROW_BELOW else COLUMNS


class _Sorted(Sequence):
    """Rows in ascending order of ``key``, in blocks of about ``BLOCK`` rows.

    Inserting or removing a row touches one block (a bisect over the blocks' last keys, one
    within the block), so a live change costs the same at 1,000 or 200,000 rows; reading row
    ``i`` is a bisect over the blocks' start offsets.

    With ``facets``, each block keeps beside its rows their facet codes (``Facets.code``, one
    byte per row), so ``select`` tests a faceted filter without touching the rows.

    With ``keep_keys``, each block also keeps its rows' keys: a row's place is then found by
    comparing keys, where a bisect with ``key`` calls it once per comparison (about 3 us a row
    at 200,000 rows, against 9-12 us, most of it the bisect within a block: its keys lie all over
    memory). The keys (a string a row) are dropped when the initial scan ends.

    And rows may wait (``keep_keys`` lets them): the initial scan brings 200,000 rows in no
    order while the screen shows a few dozen of them. Once ``4 * EXACT`` rows are in place, only
    the rows within ``EXACT`` of either end or of ``focus`` (the table's selected row) go into
    their places: ``_spans``, ranges of keys where every row is in place. Any other row waits,
    unsorted, in ``_waiting``; between two spans there is a gap, and ``_gap_waiting`` counts the
    rows waiting in each. The rows in a span, and their positions, are right meanwhile (a row's
    index is its index among the rows in place plus the rows waiting in the gaps before it), and
    so are the length and the codes' counts. Reading a row in a gap, iterating or selecting first
    sorts every row into place (``_flush``: one sort of every key; 0.22-0.29 s with 173,000 of
    197,000 rows waiting) and stops the waiting; otherwise the table replaces the order with one
    sorted in slices after the scan (``FindingTable._build_orders``). Taking the 100k tree's
    rows in: 0.65 s inserting each in its place, 0.12-0.15 s letting them wait.
    """

    __slots__ = ("key", "facets", "focus", "_blocks", "_codes", "_keys", "_maxes", "_starts", "_len", "_masked",
                 "_made", "_dependents", "_keyed", "_wait", "_waiting", "_spans", "_gap_waiting", "_placed",
                 "_places", "__weakref__")

    def __init__(self, key: Callable[[Finding], Any], rows: list[Finding] | None = None, *,
                 facets: Facets | None = None, codes: bytes | bytearray | None = None) -> None:
        """``rows`` must already be in ``key`` order; ``codes``, if given, are theirs (else computed)."""
        rows = rows or []
        self.key = key
        self.facets = facets
        if facets is not None and codes is None:
            codes = bytes(map(facets.code, rows))
        self._codes: list[bytearray] | None = None
        self._keys: list[list[Any]] | None = None  # (set by ``_hold``)
        self._keyed = self._wait = False  # keys kept (``keep_keys``); rows may wait (see the class)
        self.focus: Finding | None = None  # the row whose neighbours stay in place while rows wait
        # Rows not in their places yet, and their keys (their codes are made when they are placed).
        self._waiting: tuple[list[Any], list[Finding]] = ([], [])
        self._hold(rows, codes)
        self._len = len(rows)
        # A selection not made yet (``select``): the source order and one mask per source block;
        # rows are taken out of a block when first read, and all of them before anything else.
        self._masked: tuple[_Sorted, list[bytes]] | None = None
        self._made: dict[int, list[Finding]] = {}
        self._dependents: list[weakref.ref[_Sorted]] = []  # masked selections of this order (still in use)

    def __len__(self) -> int:
        return self._len

    def _hold(self, rows: list[Finding], codes: bytes | bytearray | None) -> None:
        """Keep these rows (in key order) and their codes, if any, in blocks."""
        self._blocks = [rows[i : i + BLOCK] for i in range(0, len(rows), BLOCK)]
        if codes is not None:
            self._codes = [bytearray(codes[i : i + BLOCK]) for i in range(0, len(rows), BLOCK)]
        self._keys = None  # (blocks made anew: ``keep_keys`` takes them again if wanted)
        # While rows may wait: (first key, last key) of each span (None: no bound), ascending.
        self._spans: list[tuple[Any, Any]] | None = None
        self._gap_waiting: list[int] = []  # rows waiting in each gap between two spans
        self._placed = 0  # rows placed since the spans were last drawn
        self._places: tuple[Any, ...] | None = None  # (cache of ``_span_places``)
        self._maxes = [self.key(b[-1]) for b in self._blocks]
        self._starts: list[int] | None = None

    def keep_keys(self, keep: bool = True) -> None:
        """Keep each row's key beside it, and let rows wait, for many inserts to come (see the
        class); or (``False``) drop the keys and let no more rows wait (those waiting stay so)."""
        self._keyed = self._wait = keep
        if not keep:
            if not self.waiting:
                self._keys = None
                self._spans = None
        elif self._keys is None:
            self._solid()
            self._keys = [list(map(self.key, b)) for b in self._blocks]
            self._bound()

    @property
    def waiting(self) -> int:
        """How many rows are not in their places yet (see the class)."""
        return len(self._waiting[1])

    def _bound(self) -> None:
        """Draw the spans (if rows may wait and enough are in place): ``EXACT`` rows from either
        end and either side of ``focus``. While rows wait, a span only shrinks (a row that waits
        must stay outside every span), and at most three are kept: the two ends and the focus's."""
        n = self._len - self.waiting  # (the rows in place)
        if not self._wait or self._keys is None or (self._spans is None and n < 4 * EXACT):
            return
        ranges = [(0, EXACT - 1), (n - EXACT, n - 1)]
        focus_key = None if self.focus is None else self.key(self.focus)
        if focus_key is not None:
            at = self._rank(focus_key)
            if at < n and self._key_at(at) == focus_key:  # (in place)
                ranges.append((max(0, at - EXACT), min(n - 1, at + EXACT)))
        ranges.sort()
        merged: list[list[int]] = []
        for first, last in ranges:
            if merged and first <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], last)
            else:
                merged.append([first, last])
        spans = [(None if first == 0 else self._key_at(first), None if last == n - 1 else self._key_at(last))
                 for first, last in merged]
        if self._spans is None:  # (drawn anew: no row waits)
            self._gap_waiting = [0] * (len(spans) - 1)
        else:  # only what was a span already
            cuts = [(cut, i) for a in spans for i, b in enumerate(self._spans) if (cut := _overlap(a, b)) is not None]
            keep = [0, len(cuts) - 1]
            if focus_key is not None:
                keep += [j for j, ((a, b), _) in enumerate(cuts) if _within(focus_key, a, b)]
            cuts = [cuts[j] for j in sorted(set(keep))]
            spans = [cut for cut, _ in cuts]
            # A row that waits lies in no span, so between two spans wait the rows that waited in
            # the gaps between the spans they were cut from (none if both come from one).
            old = self._gap_waiting
            self._gap_waiting = [sum(old[i:j]) for (_, i), (_, j) in zip(cuts, cuts[1:])]
        self._spans = spans
        self._placed = 0
        self._places = None

    def _rank(self, k: Any, after: bool = False) -> int:
        """How many rows in place have a key below ``k`` (``after``: at most ``k``)."""
        b, pos = self._locate(k, bisect_right if after else bisect_left)
        return self._offsets()[b] + pos

    def _key_at(self, i: int) -> Any:
        """The key of the row in place at ``i`` (counting only rows in place)."""
        starts = self._offsets()
        b = bisect_right(starts, i) - 1
        return self._keys[b][i - starts[b]]  # type: ignore[index]

    def _span_places(self) -> tuple[tuple[int, int, int, Any, Any], ...]:
        """For each span while rows wait: its first index, its rows, the rows waiting before
        it, its keys (cached until rows are placed or wait)."""
        starts, waiting = self._offsets(), self.waiting
        cache = self._places
        if cache is not None and cache[0] is starts and cache[1] == waiting:
            return cache[2]
        places = []
        before = 0
        for i, (a, b) in enumerate(self._spans or ()):
            if i:
                before += self._gap_waiting[i - 1]
            first = 0 if a is None else self._rank(a)
            end = starts[-1] if b is None else self._rank(b, after=True)
            places.append((first + before, end - first, before, a, b))
        result = tuple(places)
        self._places = (starts, waiting, result)
        return result

    def _flush(self) -> None:
        """Sort every row into place (the rows in place and the waiting ones, one sort of their
        keys), and let no more rows wait."""
        self._wait = False
        keys, rows = self._waiting
        if not rows:
            self._spans = None
            return
        self._changing()  # (its masked selections make their rows from the blocks as they are)
        self._waiting = ([], [])
        if self._codes is not None:
            codes = bytearray(chain(chain.from_iterable(self._codes), map(self.facets.code, rows)))  # type: ignore[union-attr]
        keys = [*chain.from_iterable(self._keys or ()), *keys]  # (rows wait only while keys are kept)
        rows = [*chain.from_iterable(self._blocks), *rows]
        order = sorted(range(len(keys)), key=keys.__getitem__)
        self._hold(list(map(rows.__getitem__, order)),
                   bytearray(map(codes.__getitem__, order)) if self._codes is not None else None)
        if self._keyed:
            keys = list(map(keys.__getitem__, order))
            self._keys = [keys[i : i + BLOCK] for i in range(0, len(keys), BLOCK)]

    def _solid(self) -> None:
        """Make a masked selection's rows (``select`` leaves that until they are needed)."""
        if self._masked is None:
            return
        (source, masks), self._masked = self._masked, None
        self._made = {}
        rows: list[Finding] = []
        codes = bytearray()
        for block, block_codes, mask in zip(source._blocks, source._codes or (), masks):
            kept = mask.count(1)
            if kept == len(block):
                rows.extend(block)
                codes.extend(block_codes)
            elif kept:
                rows.extend(compress(block, mask))
                codes.extend(compress(block_codes, mask))
        self._hold(rows, codes)

    def _changing(self) -> None:
        """Before this order changes: its masked selections make their rows while the masks still fit."""
        if self._masked is not None:
            self._solid()
        if not self._dependents:
            return  # (the common case: called for every row inserted)
        dependents, self._dependents = self._dependents, []
        for ref in dependents:
            view = ref()
            if view is not None:
                view._solid()

    def _offsets(self) -> list[int]:
        if self._starts is None and self._masked is not None:
            self._starts = list(accumulate((m.count(1) for m in self._masked[1]), initial=0))
        if self._starts is None:
            self._starts = list(accumulate((len(b) for b in self._blocks), initial=0))
        return self._starts

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._len))]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError(index)
        if self._spans is not None and self.waiting:  # a row in a span is in place, one between may not be
            for first, n, before, _, _ in self._span_places():
                if first <= index < first + n:
                    index -= before
                    break
            else:
                self._flush()
        starts = self._offsets()
        b = bisect_right(starts, index) - 1  # (a masked block that keeps nothing shares its start with the next)
        if self._masked is not None:
            block = self._made.get(b)
            if block is None:
                source, masks = self._masked
                block = self._made[b] = list(compress(source._blocks[b], masks[b]))
            return block[index - starts[b]]
        return self._blocks[b][index - starts[b]]

    def __iter__(self):
        self._solid()
        self._flush()
        return chain.from_iterable(self._blocks)

    def __reversed__(self):
        self._solid()
        self._flush()
        return chain.from_iterable(map(reversed, reversed(self._blocks)))

    def insert(self, row: Finding) -> None:
        """Add the row in its place."""
        self.insert_many([row])

    def insert_many(self, rows: list[Finding]) -> None:
        """Add each row in its place, or among the waiting rows (see the class)."""
        if not rows:
            return  # (nothing changes: a masked selection of this order stays masked)
        spans = self._spans
        if spans is None or len(spans) < 2:  # (one span: every row in place)
            self._put(rows)
            self._bound()
            return
        keys = list(map(self.key, rows))
        gaps = [(a[1], b[0]) for a, b in zip(spans, spans[1:])]
        if len(gaps) == 1:
            (a, b), = gaps
            waits = [a < k < b for k in keys]
        else:
            (a, b), (c, d) = gaps
            waits = [a < k < b or c < k < d for k in keys]
        waiting_keys, waiting_rows = self._waiting
        new = list(compress(keys, waits))
        waiting_keys += new
        waiting_rows += compress(rows, waits)
        self._len += len(new)
        low = len(new) if len(gaps) == 1 else sum(map(spans[1][0].__gt__, new))  # (in the first gap)
        self._gap_waiting[0] += low
        self._gap_waiting[-1] += len(new) - low
        if len(new) < len(rows):
            now = [i for i, w in enumerate(waits) if not w]
            self._put([rows[i] for i in now], [keys[i] for i in now])
            self._placed += len(now)
            if self._placed > EXACT:
                self._bound()  # (the spans grew: draw them around the ends and the focus again)

    def _put(self, rows: list[Finding], row_keys: list[Any] | None = None) -> None:
        """Insert each row in its place now (``row_keys``: theirs, if the caller made them)."""
        self._changing()
        blocks, maxes, block_codes, block_keys = self._blocks, self._maxes, self._codes, self._keys
        codes = list(map(self.facets.code, rows)) if block_codes is not None else None  # type: ignore[union-attr]
        key = self.key
        if not blocks:
            blocks.append([])
            maxes.append(key(rows[0]))
            if block_codes is not None:
                block_codes.append(bytearray())
            if block_keys is not None:
                block_keys.append([])
        last = len(blocks) - 1
        for i, (row, k) in enumerate(zip(rows, row_keys if row_keys is not None else map(key, rows))):
            b = bisect_right(maxes, k)
            if b > last:
                b = last
            block = blocks[b]
            if block_keys is not None:
                keys = block_keys[b]
                pos = bisect_right(keys, k)
                keys.insert(pos, k)
            else:
                pos = bisect_right(block, k, key=key)
            block.insert(pos, row)
            if block_codes is not None:
                block_codes[b].insert(pos, codes[i])  # type: ignore[index]
            if pos == len(block) - 1:
                maxes[b] = k
            if len(block) > 2 * BLOCK:
                half = len(block) // 2
                blocks[b : b + 1] = [block[:half], block[half:]]
                maxes[b : b + 1] = [key(block[half - 1]), maxes[b]]
                if block_codes is not None:
                    block_codes[b : b + 1] = [block_codes[b][:half], block_codes[b][half:]]
                if block_keys is not None:
                    block_keys[b : b + 1] = [block_keys[b][:half], block_keys[b][half:]]
                last += 1
        self._len += len(rows)
        self._starts = None

    def _locate(self, k: Any, find: Callable[..., int] = bisect_left) -> tuple[int, int]:
        """The block key ``k`` falls in and its place there, among the rows in place (``find``:
        ``bisect_left`` or ``bisect_right``); past the last row: (number of blocks, 0)."""
        b = find(self._maxes, k)
        if b == len(self._blocks):
            return b, 0
        return b, find(self._blocks[b], k, key=self.key) if self._keys is None else find(self._keys[b], k)

    def _find(self, row: Finding) -> tuple[int, int] | None:
        """The row's block and place in it (among rows in their places: not the waiting ones)."""
        self._solid()
        b, pos = self._locate(self.key(row))
        block = self._blocks[b] if b < len(self._blocks) else []
        return (b, pos) if pos < len(block) and block[pos].id == row.id else None

    def position(self, row: Finding) -> int | None:
        """The row's index, or None if it is not here."""
        if self._masked is not None:  # its place in the source, if the mask keeps it there
            source, masks = self._masked
            found = source._find(row)
            if found is None or not masks[found[0]][found[1]]:
                return None
            return self._offsets()[found[0]] + masks[found[0]][: found[1]].count(1)
        before = 0
        if self._spans is not None and self.waiting:  # a row in a span is in place, one between may not be
            k = self.key(row)
            for _, _, waiting_before, a, b in self._span_places():
                if _within(k, a, b):
                    before = waiting_before
                    break
            else:
                self._flush()
        found = self._find(row)
        return None if found is None else self._offsets()[found[0]] + found[1] + before

    def remove(self, row: Finding) -> bool:
        """Take the row out (found by its key: pass the row as it was inserted). False if absent."""
        self._changing()
        spans = self._spans
        if spans is not None and self.waiting:
            k = self.key(row)
            for gap, (before, after) in enumerate(zip(spans, spans[1:])):
                if before[1] < k < after[0]:  # between two spans: waiting, or placed before it waited
                    keys, rows = self._waiting
                    try:
                        at = keys.index(k)
                    except ValueError:
                        break
                    del keys[at], rows[at]
                    self._gap_waiting[gap] -= 1
                    self._len -= 1
                    return True
        found = self._find(row)
        if found is None:
            return False
        b, pos = found
        block = self._blocks[b]
        del block[pos]
        if self._codes is not None:
            del self._codes[b][pos]
        if self._keys is not None:
            del self._keys[b][pos]
        if not block:
            del self._blocks[b], self._maxes[b]
            if self._codes is not None:
                del self._codes[b]
            if self._keys is not None:
                del self._keys[b]
        elif pos == len(block):
            self._maxes[b] = self.key(block[-1])
        self._len -= 1
        self._starts = None
        return True

    def extend(self, rows: list[Finding]) -> None:
        """Add rows that come after every row here, in order (a ``_Sorted`` without codes)."""
        self._changing()
        self._keys = None  # (only orders keep keys or let rows wait, and they never grow this way)
        if not rows:
            return
        blocks, maxes = self._blocks, self._maxes
        if blocks and len(blocks[-1]) < BLOCK:
            room = BLOCK - len(blocks[-1])
            blocks[-1].extend(rows[:room])
            maxes[-1] = self.key(blocks[-1][-1])
            rest = rows[room:]
        else:
            rest = rows
        for i in range(0, len(rest), BLOCK):
            block = rest[i : i + BLOCK]
            blocks.append(block)
            maxes.append(self.key(block[-1]))
        self._len += len(rows)
        self._starts = None

    def extend_left(self, rows: list[Finding]) -> None:
        """Add rows that come before every row here, in order (a ``_Sorted`` without codes)."""
        self._changing()
        self._keys = None  # (only orders keep keys or let rows wait, and they never grow this way)
        if not rows:
            return
        blocks, maxes = self._blocks, self._maxes
        if blocks and len(blocks[0]) < BLOCK:
            room = BLOCK - len(blocks[0])
            blocks[0][:0] = rows[-room:]
            rest = rows[:-room]
        else:
            rest = rows
        new = [rest[max(0, i - BLOCK) : i] for i in range(len(rest), 0, -BLOCK)][::-1]
        blocks[:0] = new
        maxes[:0] = [self.key(b[-1]) for b in new]
        self._len += len(rows)
        self._starts = None

    def select(self, keep: Callable[[Finding], bool]) -> "_Sorted":
        """The rows ``keep`` keeps, in the same order.

        For a ``Filter`` over coded rows, its faceted terms are one ``bytes.translate`` of each
        block's codes: a mask per block. The selection keeps the masks and takes a block's rows
        out only when they are read (a screenful: a few blocks) or when anything else is asked of
        it; its length is the masks' count of ones. At 200,000 rows that is about 3 ms, where
        testing the rows took 35-60 ms and taking every kept row out 10-20. The other terms then
        test the kept rows one by one.
        """
        self._solid()
        self._flush()
        split = getattr(keep, "split", None)
        if self._codes is None or split is None:
            return _Sorted(self.key, select_rows(keep, self))
        faceted, rest = split()
        facets: Facets = self.facets  # type: ignore[assignment]
        table = facets.table(faceted)
        other = Facets.OTHER
        masks = []
        for block, block_codes in zip(self._blocks, self._codes):
            mask = block_codes.translate(table)
            if other in block_codes:  # rows past the numbered facet tuples: test them one by one
                mask = bytes(m and (c != other or faceted(r)) for r, c, m in zip(block, block_codes, mask))
            masks.append(mask)
        chosen = _Sorted(self.key, facets=facets)
        chosen._masked = (self, masks)
        chosen._len = chosen._offsets()[-1]
        self._dependents = [ref for ref in self._dependents if ref() is not None]
        self._dependents.append(weakref.ref(chosen))
        if rest.everything:
            return chosen
        return _Sorted(self.key, rest.select(list(chosen)))


class _Fill:
    """A filter being applied to a large order slice by slice, in display order.

    The rows found so far are the first rows of the final result as displayed (the order is read
    from its start, or from its end when the display is reversed), so what is on screen and the
    cursor stay put while the rest arrives. Each slice finds its place again by key (``frontier``,
    the key of the last row tested), so live changes to the order between slices do not disturb
    it: the table adds a live row to the result only if the fill has passed its place (``covers``);
    a row not yet passed is found by a later slice.
    """

    __slots__ = ("source", "keep", "reverse", "frontier", "tested", "total")

    def __init__(self, source: _Sorted, keep: Callable[[Finding], bool], reverse: bool) -> None:
        self.source = source
        self.keep = keep
        self.reverse = reverse
        self.frontier: Any = None  # (None: nothing tested yet)
        self.tested = 0
        self.total = max(1, len(source))

    @property
    def progress(self) -> float:
        return min(self.tested / self.total, 0.99)

    def covers(self, row: Finding) -> bool:
        """Whether the fill has passed this row's place (so a later slice will not test it)."""
        if self.frontier is None:
            return False
        k = self.source.key(row)
        return k >= self.frontier if self.reverse else k <= self.frontier

    def _next(self) -> list[Finding] | None:
        """The next untested rows (the rest of one block), ascending; None when none are left."""
        src = self.source
        src._flush()  # (a fill reads the order's blocks)
        blocks, maxes, key, frontier = src._blocks, src._maxes, src.key, self.frontier
        if not blocks:
            return None
        if not self.reverse:
            if frontier is None:
                return blocks[0][:]
            b = bisect_right(maxes, frontier)
            if b == len(blocks):
                return None
            return blocks[b][bisect_right(blocks[b], frontier, key=key) :]
        if frontier is None:
            return blocks[-1][:]
        b = bisect_left(maxes, frontier)
        if b == len(blocks):
            return blocks[-1][:]
        pos = bisect_left(blocks[b], frontier, key=key)
        if pos == 0:
            return blocks[b - 1][:] if b > 0 else None
        return blocks[b][:pos]

    def step(self, result: _Sorted, budget_s: float, want: int = 0, limit_s: float = 0.0) -> bool:
        """Test rows for ``budget_s`` seconds and until ``result`` holds ``want`` rows (but no longer
        than ``limit_s``), adding the matches to ``result``. True when every row was tested."""
        start = time.perf_counter()
        while True:
            chunk = self._next()
            if chunk is None:
                return True
            found = select_rows(self.keep, chunk)
            if self.reverse:
                self.frontier = self.source.key(chunk[0])
                result.extend_left(found)
            else:
                self.frontier = self.source.key(chunk[-1])
                result.extend(found)
            self.tested += len(chunk)
            spent = time.perf_counter() - start
            if spent >= budget_s and (len(result) >= want or spent >= limit_s):
                return False


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

    class Filtering(Message):
        """A filter applied in slices found more rows, or finished (``FindingTable.filling``)."""

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._all: dict[str, Finding] = {}
        # Every row, in each sort key's order (built when first needed, or in the background
        # after the initial scan), kept current by live changes; the view is the current key's
        # order itself, or the rows of it that pass the filter.
        self._orders: dict[str, _Sorted] = {}
        self._facets = Facets()  # the orders keep each row's facet code: faceted filters test codes, not rows
        self._view = self._orders["time"] = _Sorted(SORT_FUNCS["time"], facets=self._facets)
        self._generation = 0  # bumped when every row is replaced (background builds then start over)
        self._log: list[tuple[bool, Finding]] | None = None  # changes made while an order is built aside
        self._held: object = _UNSET  # the selection when apply(settle=False) first held the repaint back
        self._held_redraw = False  # a change held back needs every line drawn anew
        self._tally: Counter = Counter()
        self._new: dict[str, float] = {}
        self._filter: Callable[[Finding], bool] = parse_filter("")
        self._fill: _Fill | None = None  # the filter still being applied in slices, if any
        self._keyed = False  # the orders keep their rows' keys (``keep_keys``)
        self._line_cache: dict[tuple[str, int, bool, bool, int], Strip] = {}
        # Called at once when the highlighted finding changes (before CursorMoved is delivered),
        # so what follows the cursor is painted in the same frame as the highlight.
        self.on_cursor: Callable[[Finding | None], None] | None = None

    # --- data -------------------------------------------------------------------------
    # Rows are kept in blocked ascending orders (one per sort key); the display order is the
    # current one read forwards or backwards. A live change inserts or removes only the rows it
    # names, so its cost does not grow with the table; changing the sort key is a swap once that
    # key's order is built.
    @property
    def rows(self) -> "_View":
        return _View(self._view, self.sort_reverse)

    @property
    def _asc(self) -> _Sorted:
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
    def _discard(old: Finding, orders: list[_Sorted], view: _Sorted | None, log: list | None) -> None:
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
        n = problems = gates = 0
        routes: list[str] = []
        for f in rows:
            n += 1
            if f.status != "ok":
                problems += 1
            elif not f.superseded_by:
                routes.append(f.route)
                if f.gate and waiting(f):
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
        let rows wait (``_Sorted.keep_keys``). ``False`` drops the keys (memory) of an order with
        no row waiting; one with rows waiting keeps them until it is replaced (``prepare_orders``)."""
        self._keyed = keep
        for order in self._orders.values():
            order.keep_keys(keep)

    def _order(self, key: str) -> _Sorted:
        """Every row in ``key`` order (sorted now if it was not built yet)."""
        order = self._orders.get(key)
        if order is None:
            func = SORT_FUNCS[key]
            order = self._orders[key] = _Sorted(func, sorted(self._all.values(), key=func), facets=self._facets)
            if self._keyed:
                order.keep_keys()
            _keep_from_collector()
        return order

    def _select(self, rows) -> list[Finding]:
        return select_rows(self._filter, rows)

    def _show(self, current: str | None, base: _Sorted | None = None) -> None:
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
            self._view = _Sorted(func, sorted(self._select(base), key=func))
        else:
            order = self._order(self.sort_key)
            if len(order) > FILL_FROM and by_row:
                # Rows tested one by one: the first screen now, the rest in slices between frames.
                self._view = _Sorted(func)
                fill = _Fill(order, self._filter, self.sort_reverse)
                if not fill.step(self._view, FIRST_SLICE_S, self.size.height + 1, FIRST_SLICE_MAX_S):
                    self._fill = fill
                    # (a partial, not a coroutine: a worker cancelled before it starts leaves none unawaited)
                    self.run_worker(partial(self._fill_rest, fill), group="finding-table-filter", exclusive=True)
            else:
                self._view = order.select(self._filter)
        self._settle(current)

    async def _fill_rest(self, fill: _Fill) -> None:
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
        set_virtual_size_quietly(self, Size(sum(c.width + 1 for c in columns_for(self.size.width)), n))

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
        row = self._all.get(current) if current is not None else None
        before = self.cursor
        if row is not None:
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
        order whose rows still wait (the initial scan's: ``_Sorted``) is built anew first and
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
                order = _Sorted(func, merged, facets=self._facets, codes=codes)
                for present, row in log:
                    if present:
                        order.insert(row)
                    else:
                        order.remove(row)
                self._orders[key] = order
                if self._view is old:
                    self._view = order  # (the same rows in the same order: what is shown stays)
                _keep_from_collector()
                await asyncio.sleep(0)
        finally:
            if self._log is log:  # (a builder that replaced this one keeps its own)
                self._log = None

    def notify_style_update(self) -> None:
        # The cached lines carry the styles they were drawn with (the cursor's colour changes
        # with the focus, a theme change changes them all).
        super().notify_style_update()
        self._line_cache.clear()

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
        text = " ".join(_fit(safe(c.value(f), max_len=c.width + 1), c.width) for c in columns_for(width))
        text = text[scroll_x : scroll_x + width].ljust(width)
        return Strip([Segment(text, base)], width)

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
        if self._fill is not None:  # a fill goes in display order: start it again the other way
            self._show(self.selected.id if self.selected else None)
            return
        # The same list read the other way: keep the cursor on the same finding.
        if self._view:
            self.cursor = len(self._view) - 1 - self.cursor
        self._line_cache.clear()
        self.refresh()

    def on_click(self, event) -> None:
        row = round(self.scroll_y) + event.y
        if 0 <= row < len(self._asc):
            if row == self.cursor and event.chain >= 2:
                self.action_select()
            self.cursor = row
