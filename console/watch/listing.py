"""Listing the roots (every tracked file's size and mtime) and reconciling the index with it:
what catches the changes events missed, in this process."""

from __future__ import annotations

import os
import stat
import threading
from contextlib import nullcontext
from typing import Callable

from ..core import tracked as tracked_mod
from ..core.index import Change, FindingIndex
from ..core.tracked import enters, tracked


def listing(index: FindingIndex) -> tuple[dict[tuple[str, str], tuple[int, int]], list[str]]:
    """(root, rel) -> (size, mtime_ns) of every tracked file, and the roots that cannot be listed.

    Plain ``os.scandir`` recursion: one directory read and one ``lstat`` per tracked file,
    no symlink followed, entering and reading what the scan does (``core/tracked.py``).
    """
    seen: dict[tuple[str, str], tuple[int, int]] = {}
    missing: list[str] = []
    for root in index.roots:
        try:
            if not stat.S_ISDIR(os.stat(root).st_mode):
                missing.append(root)
                continue
        except OSError:
            missing.append(root)
            continue
        stack: list[tuple[str, str]] = [(root, "")]
        while stack:
            path, prefix = stack.pop()
            try:
                entries = os.scandir(path)
            except OSError:
                continue
            with entries:
                for entry in entries:
                    name = entry.name
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if enters(prefix[:-1], name):
                                stack.append((entry.path, prefix + name + "/"))
                        elif tracked(prefix + name):
                            st = entry.stat(follow_symlinks=False)
                            seen[(root, prefix + name)] = (st.st_size, st.st_mtime_ns)
                    except OSError:
                        continue
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
