"""Test-only: directory listings in another order than the file system's.

With ``TRIAGE_TEST_LISTING=reverse`` (or ``shuffle``, seeded by ``TRIAGE_TEST_LISTING_SEED``)
``os.scandir`` and ``os.listdir`` return their entries reversed (or shuffled). The suite's
conftest installs it in the test process and in every Python child it starts, so a test or a
code path that leans on the order a directory happens to list in fails on any machine, not just
on the one whose file system lists that way.
"""

from __future__ import annotations

import os
import random

MODE = os.environ.get("TRIAGE_TEST_LISTING", "")
_rng = random.Random(os.environ.get("TRIAGE_TEST_LISTING_SEED", "0") + str(os.getpid()))
_scandir = os.scandir
_listdir = os.listdir


def _reorder(items: list) -> list:
    if MODE == "reverse":
        items.reverse()
    elif MODE == "shuffle":
        _rng.shuffle(items)
    return items


class _Listing:
    """What ``os.scandir`` returns (an iterator and a context manager), over reordered entries."""

    def __init__(self, entries: list) -> None:
        self._it = iter(entries)

    def __iter__(self) -> "_Listing":
        return self

    def __next__(self):
        return next(self._it)

    def __enter__(self) -> "_Listing":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._it = iter(())


def scandir(path=".") -> _Listing:
    with _scandir(path) as it:  # (closing a scandir of a descriptor rewinds it, as the real one does)
        return _Listing(_reorder(list(it)))


def listdir(path=".") -> list:
    return _reorder(_listdir(path))


if MODE in ("reverse", "shuffle"):
    os.scandir = scandir
    os.listdir = listdir
