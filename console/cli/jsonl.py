"""``triage watch --jsonl``: every finding, then one JSON line per change, until SIGINT/SIGTERM."""

from __future__ import annotations

import signal
import sys
import threading

from ..core.decisions import settings_judge
from ..core.index import Change, FindingIndex
from ..core.safety import safe_json
from ..watch.monitor import RunMonitor
from ..watch.status import MonitorStatus
from .common import SCHEMAS


SCHEMA, FINDING_SCHEMA = SCHEMAS["event"], SCHEMAS["finding"]


def run_jsonl(roots: list[str], *, poll: float | None = None, out=None, masked: bool = True, judge=None) -> int:
    """Print every finding, then ``ready``, then one line per change until SIGINT/SIGTERM. Returns 0.

    Each line is ``safety.safe_json``: secrets masked unless ``masked=False`` (``--unmasked``), its
    schema first. ``judge``: how decisions are judged (default: the operator's default settings)."""
    out = out or sys.stdout
    lock = threading.Lock()
    done = threading.Event()

    def emit(obj: dict) -> None:
        if "finding" in obj:
            obj["finding"] = {"schema": FINDING_SCHEMA, **obj["finding"]}
        line = safe_json({"schema": SCHEMA, **obj}, masked=masked)
        with lock:
            try:
                out.write(line + "\n")
                out.flush()
            except BrokenPipeError:
                done.set()

    index = FindingIndex(roots, keep_findings=True, judge=judge if judge is not None else settings_judge(roots))
    ready = threading.Event()
    early: list[dict] = []

    def on_ready() -> None:
        for finding in index.findings():
            emit({"event": "added", "finding": finding.to_json()})
        for root, problem in index.root_problems.items():
            emit({"event": "root_problem", "root": root, "error": problem})
        emit({"event": "ready"})
        ready.set()
        for obj in early:
            emit(obj)

    def on_change(change: Change) -> None:
        for row in change.removed:
            emit({"event": "removed", "finding": row.to_json()})
        for kind, rows in (("added", change.added), ("changed", change.changed)):
            for row in rows:
                emit({"event": kind, "finding": index.finding(row).to_json()})

    def on_status(status: MonitorStatus) -> None:
        (emit if ready.is_set() else early.append)({"event": "status", "mode": status.mode, "detail": status.detail, "missing_roots": list(status.missing_roots)})

    monitor = RunMonitor(index, on_change, on_status=on_status, on_ready=on_ready, poll=poll)
    previous = {sig: signal.signal(sig, lambda *_: done.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        monitor.start()
        while not done.wait(0.5):
            pass
    finally:
        monitor.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
