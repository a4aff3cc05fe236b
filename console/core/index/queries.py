"""What the index answers: rows, full findings, a finding by reference, run summaries, file stats,
how often a fingerprint was seen."""

from __future__ import annotations

import operator
import os
from datetime import datetime, timezone

from .. import reading
from ..findings import Finding, Row
from ..formats import load_entry, problem_entry
from .runstate import RunState, RunSummary, _aux_kind, run_state


_first = operator.itemgetter(0)
_path = operator.attrgetter("path")


class Queries:
    """``FindingIndex``'s read side (a mixin over its runs, under its lock)."""

    def rows(self) -> list[Row]:
        """Every finding as a compact row (what lists, tables and counts need)."""
        # Ordered by (root, run, path): runs by their key, then each run's rows by path (no sort
        # key per row: at 100k runs those keys alone were a few percent of the index's memory).
        with self._lock:
            runs = sorted(self.runs.items(), key=_first)
            out: list[Row] = []
            for _key, state in runs:
                found = state.findings
                if len(found) == 1:
                    out.extend(found.values())
                elif found:
                    out.extend(sorted(found.values(), key=_path))
        return out

    def finding(self, row: Row) -> Finding:
        """The full finding behind a row: the file's own (kept, or read again) plus the derived fields."""
        state = self.runs.get((row.root, row.run))
        base = state.full.get(row.path) if state is not None and state.full is not None else None
        if base is None:
            try:
                name = row.path.rsplit("/", 1)[-1]
                if _aux_kind(row.path, name) is not None:  # only problems of these are findings
                    read = reading.read_text(row.root, row.path, max_bytes=self.max_bytes)
                    base = problem_entry(row.root, row.path, read, error=row.error).finding
                else:
                    read = reading.read_json(row.root, row.path, max_bytes=self.max_bytes)
                    base = load_entry(row.root, row.path, read).finding
            except FileNotFoundError:
                return Finding(id=row.id, root=row.root, path=row.path, run=row.run, node=row.node, format=row.format,
                               status="error", error="the file is gone", taxonomy="console", class_="unreadable",
                               route="none", size=row.size, mtime_ns=row.mtime_ns)
        return row.apply_to(base)

    def findings(self) -> list[Finding]:
        """Every finding in full (re-reading files unless the index keeps findings)."""
        return [self.finding(row) for row in self.rows()]

    def get(self, ref: str) -> Finding | None:
        """A finding by id, by path relative to a root, or by absolute path."""
        with self._lock:
            located = self.locate(ref) if os.path.isabs(ref) else None
            for state in self.runs.values():
                for row in state.findings.values():
                    if row.id == ref or row.path == ref or (located and located == (row.root, row.path)):
                        return self.finding(row)
        return None

    def run_summaries(self) -> list[RunSummary]:
        """Every run with its state, newest activity first."""
        with self._lock:
            now = datetime.now(timezone.utc)
            out = [run_state(state, now) for state in self.runs.values()]
        out.sort(key=lambda r: (r.last_activity or "", r.run), reverse=True)
        return out

    def file_stats(self) -> dict[tuple[str, str], tuple[int, int]]:
        """(root, rel) -> (size, mtime_ns) of every file the index has read.

        Built a thousand runs at a time, letting go of the lock in between: at 100,000 runs the
        whole table takes about a second, and queries from the UI (``seen``) must not wait that long.
        """
        with self._lock:
            states = list(self.runs.values())
        out: dict[tuple[str, str], tuple[int, int]] = {}
        for start in range(0, len(states), 1000):
            with self._lock:
                for state in states[start : start + 1000]:
                    root = state.root
                    for rel, row in state.entries.items():
                        out[(root, rel)] = row.stat
                    for rel, st in state.stat_items():
                        out[(root, rel)] = st
        return out

    def _known_stat(self, state: RunState, rel: str) -> tuple[int, int] | None:
        st = state.stat_of(rel)
        if st is not None:
            return st
        row = state.entries.get(rel)
        return row.stat if row is not None else None

    def seen(self, fingerprint: str | None) -> tuple[int, int]:
        """(times seen, number of runs) of one fingerprint across every root."""
        with self._lock:
            seen = self._prints.get(fingerprint or "")
            return (seen[0], seen[1]) if seen else (0, 0)



