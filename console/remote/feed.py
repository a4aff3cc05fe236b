"""Following a remote root: its host's ``triage watch --jsonl`` over ssh, kept connected.

The stream is the contract (``docs/cli.md``: ``triage-event/v1`` lines). Each connection starts
with every finding, then ``ready``: at ``ready`` the findings held are reconciled with that
snapshot (added, changed, removed), so a reconnect never duplicates nor keeps a finding that went
while the link was down. The state is ``connecting``, ``live``, ``degraded`` (the remote watch
says so, or a root problem there) or ``unreachable`` (with ssh's own last words); a lost link is
retried with backoff. Lines that are not the contract's are counted and skipped, never trusted.
"""

from __future__ import annotations

import collections
import json
import subprocess
import threading
from typing import Callable, Sequence

from ..core.findings import Finding
from ..core.remote_root import RemoteRoot
from . import client, ssh as ssh_

BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0)
MAX_LINE = 16 << 20
EVENT_SCHEMA = "triage-event/v1"

OnChange = Callable[[list[Finding], list[Finding], list[Finding]], None]  # added, changed, removed
OnStatus = Callable[[str, str], None]  # state, detail


class RemoteFeed:
    def __init__(self, root: RemoteRoot, *, ssh: Sequence[str], remote_command: str | None, on_change: OnChange,
                 on_status: OnStatus, poll: float | None = None, backoff: Sequence[float] = BACKOFF_S) -> None:
        self.root = root
        self.ssh, self.remote_command, self.poll = list(ssh), remote_command, poll
        self.on_change, self.on_status = on_change, on_status
        self.backoff = tuple(backoff)
        self.known: dict[str, Finding] = {}
        self.state, self.detail = "connecting", ""
        self.skipped = 0  # lines that were not the contract's
        self.first_answer = threading.Event()  # live once, or failed once: what "ready" waits for
        self._stop = threading.Event()
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread = threading.Thread(target=self._run, name=f"remote {root.label}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
        self._thread.join(timeout)

    def findings(self) -> list[Finding]:
        return list(self.known.values())

    # --- the connection ----------------------------------------------------------------------

    def _status(self, state: str, detail: str) -> None:
        if (state, detail) != (self.state, self.detail):
            self.state, self.detail = state, detail
            self.on_status(state, detail)

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            self._status("connecting", f"connecting to {self.root.label}")
            went_live = self._connect()
            if self._stop.is_set():
                return
            failures = 0 if went_live else failures + 1
            self.first_answer.set()
            wait = self.backoff[min(failures, len(self.backoff) - 1)] if failures else self.backoff[0]
            self._stop.wait(wait)

    def _connect(self) -> bool:
        args = ["watch", "--jsonl", *(["--poll", f"{self.poll:g}"] if self.poll else []), "--", self.root.path]
        try:
            command = ssh_.argv(self.root, args, ssh=self.ssh, remote_command=self.remote_command, batch=True)
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except (OSError, ssh_.RemoteError) as exc:
            self._status("unreachable", str(exc))
            return False
        self._proc = proc
        tail: collections.deque[str] = collections.deque(maxlen=20)
        reader = threading.Thread(target=_drain, args=(proc.stderr, tail), daemon=True)
        reader.start()
        live = False
        snapshot: dict[str, Finding] = {}
        assert proc.stdout is not None
        while True:
            line = proc.stdout.readline(MAX_LINE)
            if not line:
                break
            event = self._parse(line)
            if event is None:
                continue
            kind = event.get("event")
            if kind in ("added", "changed", "removed"):
                found = self._finding(event.get("finding"))
                if found is None:
                    continue
                if not live:
                    if kind != "removed":
                        snapshot[found.id] = found
                    else:
                        snapshot.pop(found.id, None)
                else:
                    self._apply(kind, found)
            elif kind == "ready":
                self._reconcile(snapshot)
                live = True
                self._status("live", f"watching {self.root.label}")
                self.first_answer.set()
            elif kind == "status" and live:
                mode = event.get("mode")
                detail = str(event.get("detail") or "")[:500]
                self._status("degraded" if mode == "degraded" else "live", f"{self.root.label}: {detail}" if detail
                             else f"watching {self.root.label}")
            elif kind == "root_problem":
                self._status("degraded", f"{self.root.label}: {str(event.get('error') or '')[:500]}")
        code = proc.wait()
        reader.join(5)
        self._proc = None
        if not self._stop.is_set():
            why = next((t for t in reversed(tail) if t), "") or f"the remote watch ended (exit {code})"
            if code == 127:
                why = (f"the remote command {self.remote_command or ssh_.DEFAULT_REMOTE!r} was not found "
                       "(install triage there, or set remote_command for this root)")
            self._status("unreachable", f"{self.root.label}: {why}")
        return live

    def _parse(self, line: bytes) -> dict | None:
        try:
            event = json.loads(line.decode("utf-8", "surrogateescape"))
        except ValueError:
            event = None
        if not isinstance(event, dict) or event.get("schema") != EVENT_SCHEMA:
            self.skipped += 1
            return None
        return event

    def _finding(self, data: object) -> Finding | None:
        if not isinstance(data, dict):
            self.skipped += 1
            return None
        try:
            return client.to_finding(data, self.root)
        except ssh_.RemoteError:
            self.skipped += 1
            return None

    def _apply(self, kind: str, found: Finding) -> None:
        if kind == "removed":
            gone = self.known.pop(found.id, None)
            if gone is not None:
                self.on_change([], [], [gone])
            return
        before = self.known.get(found.id)
        self.known[found.id] = found
        if before is None:
            self.on_change([found], [], [])
        elif before != found:
            self.on_change([], [found], [])

    def _reconcile(self, snapshot: dict[str, Finding]) -> None:
        added = [f for i, f in snapshot.items() if i not in self.known]
        changed = [f for i, f in snapshot.items() if i in self.known and self.known[i] != f]
        removed = [f for i, f in self.known.items() if i not in snapshot]
        self.known = dict(snapshot)
        if added or changed or removed:
            self.on_change(added, changed, removed)


def _drain(stream, tail: collections.deque[str]) -> None:
    for raw in iter(lambda: stream.readline(4096), b""):
        tail.append(raw.decode("utf-8", "replace").strip())


def row_of(found: Finding):
    """The table's compact row of a remote finding, with what the host's derivation decided
    (superseded, the decision's mark) carried over: the host's index already derived its runs."""
    from ..core.decisions.marks import Mark
    from ..core.findings import Row

    update: dict = {"superseded_by": found.superseded_by}
    decision = found.decision if isinstance(found.decision, dict) else None
    if decision and decision.get("state"):
        fields = {k: decision.get(k) for k in Mark.__slots__ if k != "state" and isinstance(decision.get(k), str)}
        state = decision["state"] if decision["state"] in ("valid", "unverified", "stale", "expired", "spent", "done",
                                                          "invalid") else "invalid"
        update["decision"] = Mark(state=state, **fields)
    return Row.of(found).model_copy(update=update)
