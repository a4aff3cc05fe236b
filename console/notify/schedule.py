"""When to tell what: the first message, the one reminder, and the retries of a failing channel.

Pure: given the gates that wait, what the state says each channel was told, and the time, ``plan``
returns the deliveries due now and when the next one falls due.

- A gate a channel was never told is sent to it (``new``; ``again`` when a decision had settled
  it and no longer holds).
- One reminder, ``remind_after`` seconds after the channel was first told, if the gate still
  waits: counted from the first message rather than from the finding's own time, so a gate found
  already old (at the first start, or from a producer whose clock is off) is not sent and
  reminded in the same breath, and every reminder follows its message by the wait the operator
  chose.
- A channel that fails is tried again after ``backoff(attempt)``: 1 s, 2 s, 4 s... up to 5 min,
  for as long as the gate waits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Protocol

from .message import Kind

RETRY_FIRST_S = 1.0
RETRY_FACTOR = 2.0
RETRY_MAX_S = 300.0


def backoff(attempt: int, first: float = RETRY_FIRST_S, cap: float = RETRY_MAX_S) -> float:
    """Seconds to wait before try ``attempt + 1`` after ``attempt`` failed tries (1-based)."""
    return min(cap, first * RETRY_FACTOR ** max(0, min(attempt - 1, 64)))


@dataclass(frozen=True, slots=True)
class Delivery:
    """One message owed to one channel."""

    key: str  # gates.gate_key
    row_id: str  # the finding's id
    channel: str  # state.channel_id
    kind: Kind


class Told(Protocol):
    sent: float
    reminded: float | None


class Record(Protocol):
    def told(self, key: str, channel: str) -> Told | None: ...

    def was_settled(self, key: str) -> bool: ...


def plan(waiting: Iterable[tuple[str, Any]], channels: Iterable[str], state: Record, now: float,
         remind_after: float | None, busy: set[tuple[str, str]] = frozenset()) -> tuple[list[Delivery], float | None]:
    """(deliveries due now, the epoch second the next one falls due or None).

    ``waiting``: (gate key, row) of the gates that wait, in the order to tell them; ``busy``:
    (key, channel) pairs already on their way (queued or being retried), left alone."""
    channels = list(channels)
    due: float | None = None
    out: list[Delivery] = []
    for key, row in waiting:
        again = state.was_settled(key)
        for channel in channels:
            if (key, channel) in busy:
                continue
            told = state.told(key, channel)
            if told is None:
                out.append(Delivery(key, row.id, channel, "again" if again else "new"))
                continue
            if remind_after is None or told.reminded is not None:
                continue
            at = told.sent + remind_after
            if now >= at:
                out.append(Delivery(key, row.id, channel, "reminder"))
            elif due is None or at < due:
                due = at
    return out, due
