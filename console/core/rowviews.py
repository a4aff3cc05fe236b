"""Views over a ``SortedRows``: a filter applied to a large order slice by slice (``Fill``), the
rows in display order (``View``), and selecting the rows a filter keeps."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Callable

from .findings import Finding
from .rowlist import SortedRows, select_rows  # noqa: F401  (select_rows: part of the views' surface)



class Fill:
    """A filter being applied to a large order slice by slice, in display order.

    The rows found so far are the first rows of the final result as displayed (the order is read
    from its start, or from its end when the display is reversed), so what is on screen and the
    cursor stay put while the rest arrives. Each slice finds its place again by key (``frontier``,
    the key of the last row tested), so live changes to the order between slices do not disturb
    it: the table adds a live row to the result only if the fill has passed its place (``covers``);
    a row not yet passed is found by a later slice.
    """

    __slots__ = ("source", "keep", "reverse", "frontier", "tested", "total")

    def __init__(self, source: SortedRows, keep: Callable[[Finding], bool], reverse: bool) -> None:
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
        return self.source.block_after(self.frontier, reverse=self.reverse)

    def step(self, result: SortedRows, budget_s: float, want: int = 0, limit_s: float = 0.0) -> bool:
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


class View(Sequence):
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


