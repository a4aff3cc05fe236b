"""Which findings are human gates that wait for a person, and the gated rows worth keeping an eye on.

A gate waits when the finding carries one, was read whole, has not been replaced by a later
attempt, and no decision that verifies answers it (``decisions.settles``: an unverified decision,
with no policy to check it against, does not settle a gate). The same rule as the console's gate
queue, so a phone never says "waits" about a gate the queue no longer shows, nor the reverse.

A gate is told once per version of its finding: the key holds its root, the finding's id, the
gate kind and the file's SHA-256, as a decision answers one version of one finding (it turns stale the
moment the bytes change). A finding rewritten with other bytes that still gates is a new gate.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any, Iterable

from ..core.decisions import settles
from ..core.ids import parse_time
from .state import root_key


def gated(row: Any) -> bool:
    """Whether a row is worth watching at all: a gate, not replaced (its decision is judged later)."""
    return bool(row.gate) and not row.superseded_by


def waiting(row: Any, now: datetime) -> bool:
    """Whether the finding waits for a person now (see the module's docstring)."""
    return gated(row) and row.status == "ok" and not settles(row.decision, now)


def settled(row: Any, now: datetime) -> bool:
    """Whether a decision that verifies answers the row's gate now."""
    return gated(row) and settles(row.decision, now)


def gate_key(row: Any) -> str:
    """What one gate is told under: ``<root key>/<finding id>:<gate>:<16 hex of the file's SHA-256>``
    (the root key names the state file it is kept in: ``state.root_key``)."""
    return f"{root_key(row.root)}/{row.id}:{row.gate}:{(row.sha256 or 'unread')[:16]}"


def settles_until(row: Any) -> float | None:
    """When the valid decision settling ``row`` expires (epoch seconds), or None: a current
    decision expires with time, without any file changing, and the gate then waits again."""
    decision = row.decision
    expires = getattr(decision, "expires_at", None) if decision is not None else None
    if not isinstance(expires, str):
        return None
    try:
        return parse_time(expires).timestamp()
    except ValueError:
        return None


def _oldest_first(row: Any) -> tuple[str, str, str]:
    return (row.time or "", row.root, row.path)


class Candidates:
    """The gated rows of an index, kept current from its changes. Thread-safe.

    The monitor's thread feeds it (``reset`` after the initial scan, ``apply`` for each change);
    the notifier reads a snapshot. Only gated rows are kept: a few per run at most, so looking at
    every one of them each time a reminder or an expiry falls due costs next to nothing."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[str, Any] = {}

    def reset(self, rows: Iterable[Any]) -> None:
        fresh = {row.id: row for row in rows if gated(row)}
        with self._lock:
            self._rows = fresh

    def apply(self, change: Any) -> bool:
        """Take an index ``Change`` in; True when a gated row came, went or changed."""
        touched = False
        with self._lock:
            for row in change.removed:
                touched |= self._rows.pop(row.id, None) is not None
            for row in (*change.added, *change.changed):
                if gated(row):
                    self._rows[row.id] = row
                    touched = True
                else:
                    touched |= self._rows.pop(row.id, None) is not None
        return touched

    def get(self, row_id: str) -> Any | None:
        with self._lock:
            return self._rows.get(row_id)

    def snapshot(self) -> list[Any]:
        """The gated rows, oldest first (then by root and path: the same order on every machine)."""
        with self._lock:
            rows = list(self._rows.values())
        rows.sort(key=_oldest_first)
        return rows

    def __len__(self) -> int:
        with self._lock:
            return len(self._rows)
