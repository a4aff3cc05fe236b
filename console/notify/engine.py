"""``Notifier``: from an index's gated rows to messages on the operator's channels.

The watcher's thread feeds it (``reset`` after the initial scan, ``apply`` for each change); one
thread runs ``run`` (or calls ``step`` itself), which looks at the gated rows whenever something
changed or a reminder or a decision's expiry falls due, and hands each delivery to its channel's
courier. A courier composes the message when it sends it (so its age is current, and a gate
answered meanwhile is not sent), and the state records each delivery at once.

No watching and no UI here: the command (``console/cli/notify.py``) wires a ``RunMonitor`` to it.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timezone
from typing import Any, Callable, Iterable

from .channels import Courier, Sender
from .gates import Candidates, gate_key, settled, settles_until, waiting
from .message import Message, compose
from .schedule import Delivery, plan
from .state import SentState

CHECK_S = 5.0  # the longest the loop sleeps without a reason (a change or a due time wakes it earlier)


class Notifier:
    """Tells each channel of every gate that waits: once, then one reminder; never twice."""

    def __init__(self, state: SentState, senders: Iterable[Sender], full: Callable[[Any], Any], *,
                 remind_after: float | None = None, say: Callable[[str], None] = lambda text: None,
                 clock: Callable[[], float] = time.time, skip_existing: bool = False,
                 first_retry_s: float | None = None,
                 on_sent: Callable[[Delivery, Message], None] | None = None) -> None:
        self.state = state
        self.full = full  # row -> the full finding (FindingIndex.finding)
        self.remind_after = remind_after
        self.say = say
        self.clock = clock
        self.candidates = Candidates()
        self.couriers = {s.id: Courier(s, self._render, self._done, say, first_retry_s) for s in senders}
        self.on_sent = on_sent
        self._skip = skip_existing  # the first scan's gates are marked told, not sent
        self._ready = threading.Event()
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._busy: set[tuple[str, str]] = set()
        self._rendered: dict[tuple[str, str], Message] = {}

    # --- fed by the watcher -------------------------------------------------------
    def reset(self, rows: Iterable[Any]) -> None:
        """Every row of the index (after its scan): the gated ones are kept."""
        self.candidates.reset(rows)
        keep = {gate_key(row) for row in self.candidates.snapshot()}
        problem = self.state.prune(keep, self.clock())
        if problem:
            self.say(problem)
        self._ready.set()
        self._wake.set()

    def apply(self, change: Any) -> None:
        """One index ``Change``: the loop looks again when a gated row came, went or changed."""
        if self.candidates.apply(change):
            self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    @property
    def owed(self) -> int:
        """Deliveries on their way (queued, being sent or being retried)."""
        with self._lock:
            return len(self._busy)

    # --- the loop -----------------------------------------------------------------
    def start(self) -> None:
        for courier in self.couriers.values():
            courier.start()

    def stop(self) -> None:
        for courier in self.couriers.values():
            courier.stop()

    def run(self, stop: threading.Event) -> None:
        """Until ``stop`` is set (set ``wake`` too, to end at once)."""
        self.start()
        try:
            while not stop.is_set():
                self._wake.clear()
                delay = self.step()
                self._wake.wait(CHECK_S if delay is None else min(delay, CHECK_S))
        finally:
            self.stop()

    def waiting(self) -> list[Any]:
        """The rows whose gates wait now, oldest first."""
        now = datetime.fromtimestamp(self.clock(), timezone.utc)
        return [row for row in self.candidates.snapshot() if waiting(row, now)]

    def step(self) -> float | None:
        """Hand every delivery due now to its courier; seconds until the next falls due (None: none)."""
        if not self._ready.is_set():
            return None
        now = self.clock()
        moment = datetime.fromtimestamp(now, timezone.utc)
        due: float | None = None
        gates: list[tuple[str, Any]] = []
        for row in self.candidates.snapshot():
            key = gate_key(row)
            if waiting(row, moment):
                gates.append((key, row))
            elif settled(row, moment):
                problem = self.state.settle(key, now)
                if problem:
                    self.say(problem)
                expires = settles_until(row)
                if expires is not None and (due is None or expires < due):
                    due = expires
        if self._skip:  # one save for them all: thousands of gates may wait at the first scan
            self._skip = False
            problem = self.state.record_many([(key, channel, "new") for key, _row in gates for channel in self.couriers
                                              if self.state.told(key, channel) is None], now)
            if problem:
                self.say(problem)
        with self._lock:
            busy = set(self._busy)
        deliveries, next_reminder = plan(gates, self.couriers, self.state, now, self.remind_after, busy)
        for delivery in deliveries:
            with self._lock:
                self._busy.add((delivery.key, delivery.channel))
            self.couriers[delivery.channel].put(delivery)
        if next_reminder is not None and (due is None or next_reminder < due):
            due = next_reminder
        return None if due is None else max(0.0, due - now)

    # --- called by the couriers ---------------------------------------------------
    def _render(self, delivery: Delivery) -> Message | None:
        row = self.candidates.get(delivery.row_id)
        moment = datetime.fromtimestamp(self.clock(), timezone.utc)
        if row is None or gate_key(row) != delivery.key or not waiting(row, moment):
            return None
        try:
            finding = self.full(row)
        except OSError:
            return None
        if not finding.gate:
            return None
        message = compose(finding, delivery.kind, moment)
        with self._lock:
            self._rendered[(delivery.key, delivery.channel)] = message
        return message

    def _done(self, delivery: Delivery, sent: bool) -> None:
        if sent:
            problem = self.state.record(delivery.key, delivery.channel, delivery.kind, self.clock())
            if problem:
                self.say(problem)
        with self._lock:
            self._busy.discard((delivery.key, delivery.channel))
            message = self._rendered.pop((delivery.key, delivery.channel), None)
        if sent and message is not None:
            self.say(f"told {self.couriers[delivery.channel].sender.name}: {message.title}")
            if self.on_sent is not None:
                self.on_sent(delivery, message)
        self._wake.set()
