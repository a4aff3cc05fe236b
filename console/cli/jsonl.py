"""``triage watch --jsonl``: every finding, then one JSON line per change, until SIGINT/SIGTERM.

Local roots are watched here (``RunMonitor``); each ``ssh://`` root by its host's own
``watch --jsonl`` (``remote.feed``), its lines re-emitted with the finding's root as its URL.
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import Sequence

from ..core.decisions import settings_judge
from ..core.index import Change, FindingIndex
from ..core.remote_root import RemoteRoot
from ..core.safety import safe_json
from ..watch.monitor import RunMonitor
from ..watch.status import MonitorStatus
from .common import SCHEMAS

SCHEMA, FINDING_SCHEMA = SCHEMAS["event"], SCHEMAS["finding"]


def run_jsonl(roots: list[str], *, poll: float | None = None, out=None, masked: bool = True, judge=None,
              remote: Sequence[RemoteRoot] = (), ssh: Sequence[str] = ("ssh",),
              remote_commands: dict[str, str | None] | None = None) -> int:
    """Print every finding, then ``ready``, then one line per change until SIGINT/SIGTERM. Returns 0.

    Each line is ``safety.safe_json``: secrets masked unless ``masked=False`` (``--unmasked``), its
    schema first. ``judge``: how decisions are judged (default: the operator's default settings).
    ``ready`` comes once the local roots are read and every remote root answered once (live, or
    unreachable: its status line says which)."""
    from ..remote.feed import RemoteFeed

    out = out or sys.stdout
    lock = threading.Lock()
    done = threading.Event()
    ready = threading.Event()
    early: list[dict] = []

    def write(obj: dict) -> None:
        if "finding" in obj:
            obj["finding"] = {"schema": FINDING_SCHEMA, **obj["finding"]}
        line = safe_json({"schema": SCHEMA, **obj}, masked=masked)
        with lock:
            try:
                out.write(line + "\n")
                out.flush()
            except BrokenPipeError:
                done.set()

    def emit(obj: dict) -> None:
        with lock:
            if not ready.is_set():
                early.append(obj)
                return
        write(obj)

    local_ready = threading.Event()
    index = None
    monitor = None
    if roots:
        index = FindingIndex(roots, keep_findings=True, judge=judge if judge is not None else settings_judge(roots))

        def on_ready() -> None:
            for finding in index.findings():
                write({"event": "added", "finding": finding.to_json()})
            for root, problem in index.root_problems.items():
                write({"event": "root_problem", "root": root, "error": problem})
            local_ready.set()

        def on_change(change: Change) -> None:
            for row in change.removed:
                emit({"event": "removed", "finding": row.to_json()})
            for kind, rows in (("added", change.added), ("changed", change.changed)):
                for row in rows:
                    emit({"event": kind, "finding": index.finding(row).to_json()})

        def on_status(status: MonitorStatus) -> None:
            emit({"event": "status", "mode": status.mode, "detail": status.detail,
                  "missing_roots": list(status.missing_roots)})

        monitor = RunMonitor(index, on_change, on_status=on_status, on_ready=on_ready, poll=poll)
    else:
        local_ready.set()

    feeds: list[RemoteFeed] = []
    for root in remote:
        def changed(added, updated, removed, root=root) -> None:
            for f in removed:
                emit({"event": "removed", "finding": f.to_json()})
            for kind, found in (("added", added), ("changed", updated)):
                for f in found:
                    emit({"event": kind, "finding": f.to_json()})

        def status(state: str, detail: str, root=root) -> None:
            emit({"event": "status", "root": root.url, "mode": state, "detail": detail})

        feeds.append(RemoteFeed(root, ssh=ssh, remote_command=(remote_commands or {}).get(root.url), poll=poll,
                                on_change=changed, on_status=status))

    def announce_ready() -> None:
        local_ready.wait()
        for feed in feeds:
            while not feed.first_answer.wait(0.5):
                if done.is_set():
                    return
        with lock:
            pending = list(early)
            early.clear()
        for obj in pending:
            write(obj)
        write({"event": "ready"})
        with lock:
            pending = list(early)
            early.clear()
            ready.set()
        for obj in pending:
            write(obj)

    previous = {sig: signal.signal(sig, lambda *_: done.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        if monitor is not None:
            monitor.start()
        for feed in feeds:
            feed.start()
        threading.Thread(target=announce_ready, daemon=True).start()
        while not done.wait(0.5):
            pass
    finally:
        for feed in feeds:
            feed.stop()
        if monitor is not None:
            monitor.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
