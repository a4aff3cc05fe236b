"""Listing the roots (every tracked file's size and mtime) and reconciling the index with it:
what catches the changes events missed, in this process."""

from __future__ import annotations

import os
import threading
from contextlib import nullcontext
from typing import Callable

from ..core import tracked as tracked_mod
from ..core.index import Change, FindingIndex


def listing(index: FindingIndex) -> tuple[dict[tuple[str, str], tuple[int, int]], list[str]]:
    """(root, rel) -> (size, mtime_ns) of every tracked file, and the roots that cannot be listed
    (``tracked.walk``: entering and reading what the scan does)."""
    seen: dict[tuple[str, str], tuple[int, int]] = {}
    missing: list[str] = []
    for root in index.roots:
        try:
            for rel, _path, size, mtime_ns in tracked_mod.walk(root):
                seen[(root, rel)] = (size, mtime_ns)
        except OSError:
            missing.append(root)
    return seen, missing


def reconcile(index: FindingIndex, applied: list[str] | None = None, *, guard: threading.Lock | None = None,
              emit: Callable[[Change], None] | None = None) -> tuple[Change, list[str]]:
    """Compare a fresh listing with the index; apply exactly the differences (their paths are
    added to ``applied`` if given). With ``guard``, the applying (and ``emit`` of the change) holds
    it; the listing, the slow part, does not."""
    seen, missing = listing(index)
    with guard if guard is not None else nullcontext():
        change = apply_listing(index, seen, applied)
        if emit is not None:
            emit(change)
    return change, missing


def apply_listing(index: FindingIndex, seen: dict[tuple[str, str], tuple[int, int]],
                  applied: list[str] | None = None) -> Change:
    """``reconcile``'s second half: apply what differs between a listing and the index."""
    known = index.file_stats()
    changed = [os.path.join(root, rel) for (root, rel), st in seen.items() if known.pop((root, rel), None) != st]
    gone = [os.path.join(root, rel) for (root, rel) in known]  # known, but no longer listed
    if not changed and not gone:
        return Change()
    if applied is not None:
        applied.extend(changed)
        applied.extend(gone)
    return index.apply(changed + gone)


def _wanted(path: str) -> bool:
    name = os.path.basename(path)
    if name in tracked_mod.PLAN_HOMES:
        return True  # a run's plan tree appearing (core/tracked.py)
    return not name.startswith(".") and not name.endswith((".tmp", ".swp", "~", ".sig"))
